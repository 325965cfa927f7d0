package render

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// shuffled returns in with every list an API listing could reorder
// shuffled, and the key map rebuilt in a random insertion order. Lists
// inside one object's spec (ACL entries, rules...) keep their order: that is
// user data, not listing order.
func shuffled(in Input, rng *rand.Rand) Input {
	shuffle := func(n int, swap func(i, j int)) { rng.Shuffle(n, swap) }
	in.ACLs = append([]bindv1alpha1.BindACL(nil), in.ACLs...)
	shuffle(len(in.ACLs), func(i, j int) { in.ACLs[i], in.ACLs[j] = in.ACLs[j], in.ACLs[i] })
	in.Views = append([]bindv1alpha1.BindView(nil), in.Views...)
	shuffle(len(in.Views), func(i, j int) { in.Views[i], in.Views[j] = in.Views[j], in.Views[i] })
	in.Zones = append([]bindv1alpha1.BindZone(nil), in.Zones...)
	shuffle(len(in.Zones), func(i, j int) { in.Zones[i], in.Zones[j] = in.Zones[j], in.Zones[i] })
	in.Catalogs = append([]bindv1alpha1.BindCatalogZone(nil), in.Catalogs...)
	shuffle(len(in.Catalogs), func(i, j int) { in.Catalogs[i], in.Catalogs[j] = in.Catalogs[j], in.Catalogs[i] })
	in.DNSSECPolicies = append([]bindv1alpha1.BindDNSSECPolicy(nil), in.DNSSECPolicies...)
	shuffle(len(in.DNSSECPolicies), func(i, j int) {
		in.DNSSECPolicies[i], in.DNSSECPolicies[j] = in.DNSSECPolicies[j], in.DNSSECPolicies[i]
	})
	in.Policies = append([]bindv1alpha1.BindPolicy(nil), in.Policies...)
	shuffle(len(in.Policies), func(i, j int) { in.Policies[i], in.Policies[j] = in.Policies[j], in.Policies[i] })
	names := sortedKeys(in.Keys)
	shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	keys := make(map[string]TSIGKey, len(names))
	for _, n := range names {
		keys[n] = in.Keys[n]
	}
	in.Keys = keys
	return in
}

// TestDeterministic renders every scenario (and a large generated one)
// from many permutations of its inputs and requires identical bytes: a
// reshuffled API listing must never roll the pods (docs/behaviours.md,
// "Deterministic render").
func TestDeterministic(t *testing.T) {
	all := append([]struct {
		name string
		in   func() Input
	}{}, scenarios...)
	all = append(all, struct {
		name string
		in   func() Input
	}{"generated-200", func() Input { return benchInput(200) }})
	for _, sc := range all {
		t.Run(sc.name, func(t *testing.T) {
			want, err := Render(sc.in())
			if err != nil {
				t.Fatal(err)
			}
			wantText, wantHash := goldenText(want), ConfigHash(want)
			for seed := uint64(1); seed <= 20; seed++ {
				rng := rand.New(rand.NewPCG(seed, seed*7919))
				got, err := Render(shuffled(sc.in(), rng))
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if g := goldenText(got); g != wantText {
					t.Fatalf("seed %d: a permutation of the inputs renders other bytes:\n%s", seed, lineDiff(wantText, g))
				}
				if ConfigHash(got) != wantHash {
					t.Fatalf("seed %d: same bytes, different hash", seed)
				}
			}
		})
	}
}

// podIPs are addresses the controller could learn about pods: current and
// previous pod IPs of every ordinal. None may ever appear in the render.
var podIPs = []string{"198.18.7.10", "198.18.7.11", "198.18.7.12", "198.18.9.10", "2001:db8:7::a", "2001:db8:7::b"}

// withPodState changes everything about the pods that a controller could
// know and that might tempt a future change to leak into the render: pod
// IPs in status, the observed replicas, the status of every object, and the
// per-secondary sync status of zones. Only stable data may reach named.conf.
func withPodState(in Input, gen int) Input {
	c := in.Cluster.DeepCopy()
	ip := podIPs[gen%len(podIPs)]
	c.Status.PrimaryAddress = ip // the pod IP fallback while no ClusterIP exists
	c.Status.Replicas = int32(gen)
	c.Status.ReadyReplicas = int32(gen % 3)
	c.Status.ConfigHash = strings.Repeat("f", gen%5)
	c.Spec.PodAnnotations = map[string]string{"restart": ip}
	c.ResourceVersion = ip
	in.Cluster = c
	zones := make([]bindv1alpha1.BindZone, len(in.Zones))
	for i := range in.Zones {
		z := in.Zones[i].DeepCopy()
		z.Status.Secondaries = []bindv1alpha1.SecondaryZoneStatus{{Pod: "dns-" + ip, InSync: gen%2 == 0}}
		serial := int64(gen)
		z.Status.Serial = &serial
		z.ResourceVersion = ip
		zones[i] = *z
	}
	in.Zones = zones
	cats := make([]bindv1alpha1.BindCatalogZone, len(in.Catalogs))
	for i := range in.Catalogs {
		cz := in.Catalogs[i].DeepCopy()
		cz.Status.Members = []string{ip}
		cats[i] = *cz
	}
	in.Catalogs = cats
	return in
}

// TestNoPodIPs is the permanent guard against rolling-restart loops
// (docs/behaviours.md, "No pod IP in restart-scoped config"): whatever the
// pods' addresses and status, the render is the same bytes, and none of
// those addresses appears in it.
func TestNoPodIPs(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			base, err := Render(sc.in())
			if err != nil {
				t.Fatal(err)
			}
			baseText := goldenText(base)
			for gen := 0; gen < 2*len(podIPs); gen++ {
				got, err := Render(withPodState(sc.in(), gen))
				if err != nil {
					t.Fatal(err)
				}
				text := goldenText(got)
				for _, ip := range podIPs {
					if strings.Contains(text, ip) {
						t.Fatalf("pod IP %s leaks into the render", ip)
					}
				}
				if text != baseText {
					t.Fatalf("pod state %d changes the render (a roll per pod restart):\n%s", gen, lineDiff(baseText, text))
				}
			}
		})
	}
}

// TestPrimaryAddressIsTheOnlyAddress: the only cluster-internal address in
// the secondaries' config is the primary Service's, and changing it changes
// the render (the Service was recreated: one roll is right).
func TestPrimaryAddressIsTheOnlyAddress(t *testing.T) {
	in := scenarioAuthoritative()
	a, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.ConfigData[FileSecondaryConf], `198.19.10.53 key "transfer.dns."`) {
		t.Fatalf("secondaries do not transfer keyed from the primary Service:\n%s", a.ConfigData[FileSecondaryConf])
	}
	in.PrimaryAddress = "198.19.10.54"
	b, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if ConfigHash(a) == ConfigHash(b) {
		t.Fatal("a new primary Service address does not change the hash")
	}
}

func TestConfigHash(t *testing.T) {
	base := Result{
		ConfigData: map[string]string{"named.conf.primary": "options {};\n", "x": "y"},
		SecretData: map[string][]byte{"keys.conf": []byte("key")},
	}
	clone := func(r Result) Result {
		c := Result{ConfigData: map[string]string{}, SecretData: map[string][]byte{}}
		for k, v := range r.ConfigData {
			c.ConfigData[k] = v
		}
		for k, v := range r.SecretData {
			c.SecretData[k] = append([]byte(nil), v...)
		}
		return c
	}
	h := ConfigHash(base)
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Fatalf("hash %q is not sha256 hex", h)
	}
	// Stable across map orders: rebuild the maps many times.
	for range 50 {
		if ConfigHash(clone(base)) != h {
			t.Fatal("hash depends on map order")
		}
	}
	// Any byte of any value, and any key, changes it.
	for k, v := range base.ConfigData {
		for i := range len(v) {
			c := clone(base)
			b := []byte(v)
			b[i] ^= 1
			c.ConfigData[k] = string(b)
			if ConfigHash(c) == h {
				t.Fatalf("flipping byte %d of ConfigData[%q] keeps the hash", i, k)
			}
		}
		c := clone(base)
		delete(c.ConfigData, k)
		c.ConfigData[k+"_"] = v
		if ConfigHash(c) == h {
			t.Fatalf("renaming ConfigData[%q] keeps the hash", k)
		}
	}
	for k, v := range base.SecretData {
		for i := range v {
			c := clone(base)
			c.SecretData[k][i] ^= 1
			if ConfigHash(c) == h {
				t.Fatalf("flipping byte %d of SecretData[%q] keeps the hash", i, k)
			}
		}
	}
	// Moving an entry between the ConfigMap and the Secret changes it.
	moved := clone(base)
	moved.SecretData["x"] = []byte("y")
	delete(moved.ConfigData, "x")
	if ConfigHash(moved) == h {
		t.Fatal("moving an entry from ConfigData to SecretData keeps the hash")
	}
	// Boundaries are unambiguous.
	if ConfigHash(Result{ConfigData: map[string]string{"ab": "c"}}) == ConfigHash(Result{ConfigData: map[string]string{"a": "bc"}}) {
		t.Fatal(`{"ab":"c"} and {"a":"bc"} hash alike`)
	}
	if ConfigHash(Result{ConfigData: map[string]string{"a": "", "b": ""}}) == ConfigHash(Result{ConfigData: map[string]string{"a": "b"}}) {
		t.Fatal("an empty entry is confused with a boundary")
	}
	if ConfigHash(Result{}) == ConfigHash(Result{ConfigData: map[string]string{"": ""}}) {
		t.Fatal("an empty key is invisible to the hash")
	}
}

// TestEntrypoint runs the rendered entrypoint.sh with sh, named replaced by
// a script that records its arguments: it picks the variant from the
// ordinal, creates the data directories, seeds catalogs only when missing
// (never overwriting updates), and execs named with the variant.
func TestEntrypoint(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	in := scenarioAuthoritative()
	in.Paths = Paths{ConfigDir: root + "/config", KeysDir: root + "/keys", DataDir: root + "/data"}
	res, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := materialize(in.Paths, res, layout{}); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(root, "fake-named")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > \"$ARGS_OUT\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(host string) string {
		t.Helper()
		out := filepath.Join(root, "args-"+host)
		cmd := exec.Command(sh, filepath.Join(in.Paths.ConfigDir, FileEntrypoint))
		cmd.Env = []string{"HOSTNAME=" + host, "NAMED_BIN=" + fake, "ARGS_OUT=" + out, "PATH=" + os.Getenv("PATH")}
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("entrypoint on %s: %v\n%s", host, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	seed := filepath.Join(in.Paths.DataDir, "catalog", "catalog.dns.internal.db")

	if got, want := run("dns-1"), "-g -c "+in.Paths.ConfigDir+"/named.conf.secondary"; got != want {
		t.Fatalf("ordinal 1 runs %q, want %q", got, want)
	}
	if _, err := os.Stat(seed); err == nil {
		t.Fatal("a secondary seeded the catalog it should transfer")
	}
	if got, want := run("dns-10"), "-g -c "+in.Paths.ConfigDir+"/named.conf.secondary"; got != want {
		t.Fatalf("ordinal 10 runs %q, want %q", got, want)
	}
	if got, want := run("my-dns-0"), "-g -c "+in.Paths.ConfigDir+"/named.conf.primary"; got != want {
		t.Fatalf("ordinal 0 runs %q, want %q", got, want)
	}
	for _, d := range []string{"zones/_default", "secondary/_default", "catz", "nzd", "keys", "catalog"} {
		if st, err := os.Stat(filepath.Join(in.Paths.DataDir, d)); err != nil || !st.IsDir() {
			t.Errorf("data dir %s missing after start: %v", d, err)
		}
	}
	b, err := os.ReadFile(seed)
	if err != nil || string(b) != res.ConfigData["catalog.catalog.dns.internal.db"] {
		t.Fatalf("catalog not seeded on the primary: %v", err)
	}
	// Dynamic updates live in the file now: a restart must keep them.
	if err := os.WriteFile(seed, []byte("updated"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("dns-0")
	if b, _ := os.ReadFile(seed); string(b) != "updated" {
		t.Fatal("the entrypoint overwrote a catalog that holds updates")
	}
}

// TestSeedZone: defaults and overrides, and the real named-checkzone loads
// the seed once the MNAME has an address (BIND refuses an in-zone NS
// without one, which TestSeedZoneNeedsGlue documents).
func TestSeedZone(t *testing.T) {
	got := SeedZone("Example.COM.", nil, 0)
	for _, want := range []string{
		"$ORIGIN example.com.\n",
		"$TTL 3600\n",
		"@\tIN\tSOA\tns1.example.com. hostmaster.example.com. 1 300 60 1209600 60\n",
		"@\tIN\tNS\tns1.example.com.\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("seed lacks %q:\n%s", want, got)
		}
	}
	over := SeedZone("example.org", &bindv1alpha1.SOASpec{
		PrimaryNameServer: "ns.provider.example", ResponsiblePerson: "dns.example.org.",
		Refresh: ptr.To(int32(7200)), Retry: ptr.To(int32(900)), Expire: ptr.To(int32(604800)), Minimum: ptr.To(int32(30)),
	}, 300)
	if !strings.Contains(over, "@\tIN\tSOA\tns.provider.example. dns.example.org. 1 7200 900 604800 30\n") || !strings.Contains(over, "$TTL 300\n") {
		t.Errorf("overrides not applied:\n%s", over)
	}
	checkzone, err := exec.LookPath("named-checkzone")
	if err != nil {
		t.Fatal("named-checkzone not found: run make deps")
	}
	dir := t.TempDir()
	for name, text := range map[string]string{
		"example.org":     over,
		"example.com":     SeedZoneWithGlue("example.com", nil, 0, []string{"198.19.10.53", "2001:db8::53", "bogus"}),
		"catalog.example": catalogSeed("catalog.example"),
		"_root":           SeedZoneWithGlue(".", nil, 0, []string{"198.19.10.53"}),
	} {
		zone := name
		if name == "_root" {
			zone = "."
		}
		f := filepath.Join(dir, name+".db")
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(checkzone, zone, f).CombinedOutput(); err != nil {
			t.Errorf("named-checkzone %s: %v\n%s\n%s", zone, err, out, text)
		}
	}
}

func TestSeedZoneNeedsGlue(t *testing.T) {
	checkzone, err := exec.LookPath("named-checkzone")
	if err != nil {
		t.Fatal("named-checkzone not found: run make deps")
	}
	f := filepath.Join(t.TempDir(), "z.db")
	if err := os.WriteFile(f, []byte(SeedZone("example.com", nil, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(checkzone, "example.com", f).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "has no address records") {
		t.Fatalf("BIND now loads an in-zone NS without address (err %v, %s): SeedZone could drop the glue requirement", err, out)
	}
}

// TestZoneClause adds the runtime clauses to a copy of the primary and
// secondary configs as plain zone statements and has named-checkconf -z
// load them with their seeds: what rndc addzone will be given is valid.
func TestZoneClause(t *testing.T) {
	bin := namedCheckconf(t)
	in := scenarioDNSSEC()
	in.Zones = append(in.Zones, primaryZone("plain", "plain.example"))
	root := t.TempDir()
	in.Paths = Paths{ConfigDir: root + "/config", KeysDir: root + "/keys", DataDir: root + "/data"}
	res, lay, err := render(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := materialize(in.Paths, res, lay); err != nil {
		t.Fatal(err)
	}
	zc, err := NewZoneClauses(in)
	if err != nil {
		t.Fatal(err)
	}
	var prim, sec strings.Builder
	for i := range in.Zones {
		z := &in.Zones[i]
		if z.Spec.Type != bindv1alpha1.ZonePrimary {
			if _, err := zc.Clause(z, ZoneRolePrimary, nil); err == nil {
				t.Errorf("%s: a %s zone got a runtime clause", z.Name, z.Spec.Type)
			}
			continue
		}
		name := string(z.Spec.ZoneName)
		cl, err := zc.Clause(z, ZoneRolePrimary, []string{"198.18.7.12", "198.18.7.11", "198.18.7.12"})
		if err != nil {
			t.Fatal(err)
		}
		notify, xfr := `also-notify { 198.18.7.11 key "transfer.dns."; 198.18.7.12 key "transfer.dns."; };`, `allow-transfer { key "transfer.dns."; };`
		if len(z.Spec.ExternalSecondaries) > 0 {
			// The external secondaries: notified with their key, or not;
			// allowed by their key only, or by their address.
			notify = `also-notify { 192.0.2.80 port 5353 key "partner-xfr"; 198.18.7.11 key "transfer.dns."; 198.18.7.12 key "transfer.dns."; 2001:db8::80; };`
			xfr = `allow-transfer { key "transfer.dns."; key "partner-xfr"; 2001:db8::80; };`
		}
		if !strings.Contains(cl, notify) {
			t.Errorf("also-notify not keyed, sorted and deduplicated: %s", cl)
		}
		if !strings.Contains(cl, xfr) {
			t.Errorf("member zone does not allow the transfer key: %s", cl)
		}
		prim.WriteString("zone \"" + name + "\" " + cl + "\n")
		seed := SeedZoneWithGlue(name, z.Spec.SOA, 0, []string{"198.19.10.53"})
		if err := os.WriteFile(in.Paths.PrimaryZoneFile("", name), []byte(seed), 0o644); err != nil {
			t.Fatal(err)
		}
		scl, err := zc.Clause(z, ZoneRoleSecondary, nil)
		if z.Spec.CatalogZoneRef != nil {
			if err == nil {
				t.Errorf("%s: catalog member got a secondary clause", z.Name)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sec.WriteString("zone \"" + name + "\" " + scl + "\n")
	}
	for f, extra := range map[string]string{FilePrimaryConf: prim.String(), FileSecondaryConf: sec.String()} {
		p := filepath.Join(in.Paths.ConfigDir, f)
		if err := os.WriteFile(p, []byte(res.ConfigData[f]+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "-z", p).CombinedOutput()
		if err != nil {
			t.Fatalf("named-checkconf -z %s with runtime zones: %v\n%s\n%s", f, err, out, extra)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" && !loadedLine.MatchString(l) {
				t.Errorf("%s: named-checkconf warns: %s", f, l)
			}
		}
	}
}

// TestSeedOfLongestZoneName: a zone name of 253 octets (the longest) gets
// default SOA names that are still domain names: the zone's own name where
// ns1.<zone> or hostmaster.<zone> would be too long.
func TestSeedOfLongestZoneName(t *testing.T) {
	zone := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
	seed := SeedZoneWithGlue(zone, nil, 0, nil)
	for _, l := range strings.Split(seed, "\n") {
		if strings.HasPrefix(l, ";") {
			continue
		}
		for _, f := range strings.Fields(l) {
			if len(f) > 254 {
				t.Fatalf("seed holds a name of %d octets: %s", len(f), l)
			}
		}
	}
	if !strings.Contains(seed, "SOA\t"+zone+". "+zone+". 1 ") {
		t.Fatalf("SOA does not fall back to the zone's name:\n%s", seed)
	}
}
