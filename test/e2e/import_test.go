package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// legacyZones are the zones of the legacy server: view → zone → zone file.
// Everything in them is of a kind the import carries over, so the import
// is whole and every transfer must match.
var legacyZones = map[string]map[string]string{
	"internal": {
		"example.com": `$TTL 300
@	IN SOA ns1.example.com. hostmaster.example.com. 7 300 60 1209600 60
	IN NS ns1.example.com.
ns1	IN A 10.0.0.53
www	IN A 10.0.0.80
intranet 60 IN CNAME www
`,
	},
	"external": {
		"example.com": `$TTL 3600
$ORIGIN example.com.
@	IN SOA ns1 hostmaster ( 2024010101 7200 900 1209600 300 )
	IN NS ns1
	IN NS ns2.example.net.
	IN MX 10 mail
ns1	IN A 192.0.2.1
mail 300 IN A 192.0.2.2
www	IN CNAME @
@	IN A 192.0.2.80
_sip._tcp IN SRV 10 60 5060 sip
sip	IN A 192.0.2.3
	IN AAAA 2001:db8::3
txt	IN TXT "hello world" "second string"
caa	IN CAA 0 issue "letsencrypt.org"
*.apps	IN A 192.0.2.10
sub	IN NS ns.sub
ns.sub	IN A 192.0.2.4
$INCLUDE var/cache/bind/example.com.inc
`,
		"gen.example": `$TTL 600
@	IN SOA ns1.example.com. hostmaster.example.com. 1 3600 600 1209600 60
	IN NS ns1.example.com.
$GENERATE 1-250 host$ IN A 198.51.100.$
$GENERATE 1-500 $.rev IN PTR host$.gen.example.
`,
		// Signed by the legacy server's dnssec-policy, inline: the file
		// is unsigned, the keys are in its key-directory.
		"signed.example": `$TTL 300
@	IN SOA ns1.example.com. hostmaster.example.com. 3 3600 600 1209600 60
	IN NS ns1.example.com.
www	IN A 192.0.2.90
`,
	},
}

// legacyFiles is the legacy server's tree: its named.conf and what it
// includes, named as the server sees them (relative to its working
// directory, which is the import's --root).
func legacyFiles(port, control int, upstream netip.AddrPort, keys map[string]tsigKey) map[string]string {
	var keyConf strings.Builder
	for _, name := range slices.Sorted(maps.Keys(keys)) {
		k := keys[name]
		fmt.Fprintf(&keyConf, "key %q { algorithm %s; secret %q; };\n", strings.TrimSuffix(k.Name, "."), strings.TrimSuffix(k.Algorithm, "."), k.Secret)
	}
	files := map[string]string{
		"etc/bind/named.conf": fmt.Sprintf(`// The legacy server: two views chosen by key, keyed transfers and updates.
include "etc/bind/keys.conf";
include "etc/bind/named.conf.options";

controls { inet 127.0.0.1 port %[1]d allow { 127.0.0.1; } keys { "rndc-key"; }; };
logging { channel to_stderr { stderr; severity info; }; category default { to_stderr; }; };

acl "transfers" { key "xfer-key"; };

dnssec-policy "legacy-signing" {
	keys {
		ksk lifetime unlimited algorithm ecdsap256sha256;
		zsk lifetime unlimited algorithm ecdsap256sha256;
	};
};

view "internal" {
	match-clients { key "internal-view"; };
	// The hybrid server's recursive side: its internal clients resolve
	// the partner's corporate names through it.
	recursion yes;
	allow-recursion { key "internal-view"; };
	zone "corp.example" { type forward; forward only; forwarders { %[2]s port %[3]d; }; };
	zone "example.com" {
		type primary;
		file "var/cache/bind/db.example.com.internal";
		allow-transfer { key "internal-view"; };
		allow-update { key "ddns-key"; };
	};
};

view "external" {
	match-clients { !key "internal-view"; any; };
	zone "example.com" { type master; file "var/cache/bind/db.example.com"; allow-transfer { transfers; }; };
	zone "gen.example" { type primary; file "var/cache/bind/db.gen.example"; };
	zone "signed.example" {
		type primary;
		file "var/cache/bind/db.signed.example";
		dnssec-policy "legacy-signing";
		inline-signing yes;
	};
	zone "large.example" { type primary; file "var/cache/bind/db.large.example"; };
	zone "partner.example" {
		type secondary;
		primaries { %[2]s port %[3]d key "xfer-key"; };
		file "var/cache/bind/partner.example.db";
	};
};
`, control, upstream.Addr(), upstream.Port()),
		"etc/bind/named.conf.options": fmt.Sprintf(`options {
	directory ".";
	pid-file none;
	session-keyfile none;
	managed-keys-directory ".";
	key-directory "var/cache/bind/keys";
	listen-on port %d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
	allow-transfer { key "xfer-key"; };
	minimal-responses yes;
};
`, port),
		"etc/bind/keys.conf":                     keyConf.String(),
		"var/cache/bind/db.example.com.internal": legacyZones["internal"]["example.com"],
		"var/cache/bind/db.example.com":          legacyZones["external"]["example.com"],
		"var/cache/bind/db.gen.example":          legacyZones["external"]["gen.example"],
		"var/cache/bind/example.com.inc":         "inc1\tIN A 198.51.100.201\n$ORIGIN dev.example.com.\napi\tIN AAAA 2001:db8::1\n",
		"var/cache/bind/db.signed.example":       legacyZones["external"]["signed.example"],
		"var/cache/bind/keys/README":             "named's keys of the signed zones\n",
		"var/cache/bind/db.large.example":        largeZone(),
	}
	return files
}

// largeRecords is the size of the legacy server's large zone: more than
// one BindZone holds, so the import keeps it in ConfigMaps (seedFrom).
const largeRecords = 100000

// largeZone is a zone file of largeRecords records (with its SOA and NS),
// of several types and TTLs, as a real large zone is.
func largeZone() string {
	var b strings.Builder
	b.WriteString("$TTL 3600\n@\tIN SOA ns1.example.com. hostmaster.example.com. 2026120701 3600 600 1209600 300\n\tIN NS ns1.example.com.\n")
	for i := range largeRecords - 2 {
		switch i % 4 {
		case 0, 1:
			fmt.Fprintf(&b, "host%d\tIN A 198.51.%d.%d\n", i, i/254%256, i%254+1)
		case 2:
			fmt.Fprintf(&b, "host%d 300\tIN AAAA 2001:db8::%x:%x\n", i, i>>16, i&0xffff)
		default:
			fmt.Fprintf(&b, "alias%d\tIN CNAME host%d\n", i, i-1)
		}
	}
	return b.String()
}

// TestImportExistingServer (issue 46 items 1, 3, 4, 5 and 6): a Debian
// named on the node runs as the user's existing server (two views chosen
// by key, ACLs, keyed transfers and updates, $INCLUDE, $ORIGIN,
// $GENERATE, a zone it signs with its dnssec-policy, a zone of 100,000
// records, a secondary zone of another named on the node's address, and
// an internal view that recurses with a forward zone to that named); the
// checkout's binary's `import` reads its files and reports the import
// whole (a Resolver cluster, since a view recursed); the Secrets and
// then the objects pass `kubectl apply --dry-run=server` through the real
// webhooks and are applied; and for every zone of every view, an AXFR from
// the old server and one from every pod of the new cluster hold the same
// record sets (the SOA serial aside), and clients of each view get the
// same answers from both. delv anchored on the DS of the old server's
// key-signing key validates the signed zone on every pod right after the
// import: its keys came along.
func TestImportExistingServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	keys := map[string]tsigKey{}
	for _, name := range []string{"xfer-key", "internal-view", "ddns-key", "rndc-key"} {
		k := bindtest.NewKey(name, "hmac-sha256")
		keys[name] = tsigKey{Name: dns.Fqdn(k.Name), Algorithm: dns.HmacSHA256, Secret: k.Secret}
	}
	upstream := startUpstreamServer(t, keys["xfer-key"])
	root := t.TempDir()
	old := startLegacyServer(t, root, upstream, keys)
	// The DS the parent of the signed zone publishes: its KSK's, read
	// from the old server before the import.
	ds := legacyDS(ctx, t, old, "signed.example")

	ns := newNamespace(ctx, t, "e2e-import")
	out := t.TempDir()
	report, code := runImportCommand(ctx, t, root, ns, out)
	if code != 0 {
		t.Fatalf("import exited %d, want 0 (imported whole):\n%s", code, report)
	}
	t.Logf("import report:\n%s", report)
	for _, k := range []string{"xfer-key", "internal-view", "ddns-key"} {
		if strings.Contains(report, keys[k].Secret) {
			t.Fatalf("the import printed the material of %s", k)
		}
	}

	// The one edit: two replicas instead of the default three, to share
	// the node with the other tests. Then the Secrets, a server-side dry
	// run of the objects through every webhook, and the objects.
	objects, err := os.ReadFile(filepath.Join(out, "objects.yaml"))
	testkit.Must(t, err)
	// A Resolver: the internal view recursed.
	edited := strings.Replace(string(objects), "\n  mode: Resolver\n", "\n  mode: Resolver\n  replicas: 2\n", 1)
	if edited == string(objects) {
		t.Fatalf("objects.yaml has no Resolver BindCluster:\n%s", objects)
	}
	testkit.Must(t, os.WriteFile(filepath.Join(out, "objects.yaml"), []byte(edited), 0o644))
	_, err = env.Kubectl(ctx, "", "apply", "--server-side", "-f", filepath.Join(out, "secrets.yaml"))
	testkit.Must(t, err)
	// The large zone's file, before the zone that names it.
	_, err = env.Kubectl(ctx, "", "apply", "--server-side", "-f", filepath.Join(out, "seeds.yaml"))
	testkit.Must(t, err)
	if o, err := env.Kubectl(ctx, "", "apply", "--server-side", "--dry-run=server", "-f", filepath.Join(out, "objects.yaml")); err != nil {
		t.Fatalf("the imported objects are refused: %v\n%s", err, o)
	}
	_, err = env.Kubectl(ctx, "", "apply", "--server-side", "-f", filepath.Join(out, "objects.yaml"))
	testkit.Must(t, err)
	t.Cleanup(func() { dumpOnFailure(t, ns, "legacy", 2) })
	waitClusterReady(ctx, t, ns, "legacy", 2)
	waitZonesReady(ctx, t, ns)
	ips := podIPs(ctx, t, ns, "legacy", 2)

	// Every zone of every view, from the old server and every pod: the
	// key that selects the view and may transfer the zone.
	for _, tc := range []struct {
		view, zone string
		key        tsigKey
	}{
		{"internal", "example.com", keys["internal-view"]},
		{"external", "example.com", keys["xfer-key"]},
		{"external", "gen.example", keys["xfer-key"]},
		// A secondary zone: the old server and the pods transfer it from
		// the same upstream primary.
		{"external", "partner.example", keys["xfer-key"]},
		// A signed zone: the same records and the same DNSKEYs, since the
		// cluster signs with the old server's keys (signatures aside).
		{"external", "signed.example", keys["xfer-key"]},
		// Too large for a BindZone: loaded from its file in ConfigMaps.
		{"external", "large.example", keys["xfer-key"]},
	} {
		var want []string
		NewWithT(t).Eventually(func() (err error) {
			want, err = zoneRRs(old, tc.zone, tc.key)
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "AXFR %s (%s view) from the old server", tc.zone, tc.view)
		for i, ip := range ips {
			var got []string
			NewWithT(t).Eventually(func() error {
				got, err = zoneRRs(ip, tc.zone, tc.key)
				if err != nil {
					return err
				}
				if d := diffRRs(want, got); d != "" {
					return errors.New(d)
				}
				return nil
			}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(Succeed(),
				"AXFR of %s (%s view) from legacy-%d differs from the old server's", tc.zone, tc.view, i)
		}
		t.Logf("%s (%s view): %d records, the same from the old server and both pods", tc.zone, tc.view, len(want))
	}

	// What clients of each view are answered.
	internalKey := keys["internal-view"]
	for _, q := range []struct {
		name  string
		qtype uint16
		key   *tsigKey
		// has is in the old server's answer, where it matters that the
		// answer is not the same failure from both.
		has string
	}{
		{"www.example.com.", dns.TypeA, nil, ""},
		{"www.example.com.", dns.TypeA, &internalKey, ""},
		{"intranet.example.com.", dns.TypeA, &internalKey, ""},
		{"intranet.example.com.", dns.TypeA, nil, ""},
		{"x.apps.example.com.", dns.TypeA, nil, ""},
		{"host42.gen.example.", dns.TypeA, nil, ""},
		{"txt.example.com.", dns.TypeTXT, nil, ""},
		{"www.signed.example.", dns.TypeA, nil, ""},
		{"host99996.large.example.", dns.TypeA, nil, ""},
		{"alias99995.large.example.", dns.TypeA, nil, ""},
		// The internal view's forward zone, through the upstream server;
		// the external view does not recurse.
		{"shop.corp.example.", dns.TypeA, &internalKey, "NOERROR shop.corp.example.\t0\tin\ta\t192.0.2.56"},
		{"shop.corp.example.", dns.TypeA, nil, "REFUSED"},
	} {
		want := viewAnswer(t, old, q.name, q.qtype, q.key)
		if !strings.Contains(want, q.has) {
			t.Fatalf("%s %s (signed: %t) from the old server: %s, want it to hold %q", q.name, dns.TypeToString[q.qtype], q.key != nil, want, q.has)
		}
		for i, ip := range ips {
			if got := viewAnswer(t, ip, q.name, q.qtype, q.key); got != want {
				t.Errorf("%s %s (signed: %t) from legacy-%d: %s, the old server: %s", q.name, dns.TypeToString[q.qtype], q.key != nil, i, got, want)
			}
		}
	}

	// Right after the import, the parent's DS (the old server's KSK)
	// validates every pod's answers: the zone kept its keys.
	anchors := writeAnchors(t, "signed.example", ds)
	for i, ip := range ips {
		NewWithT(t).Eventually(func() error {
			out, err := delvOnce(ctx, anchors, "signed.example", ip, "www.signed.example")
			if err != nil {
				return fmt.Errorf("%w:\n%s", err, out)
			}
			return nil
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2*time.Second).Should(Succeed(), "delv @legacy-%d anchored on the old server's DS %v", i, ds)
	}
	t.Logf("signed.example: delv anchored on the old server's DS %v fully validated on both pods", ds)
}

// legacyDS waits until the old server signs zone with a KSK and returns
// that key's DS (SHA-256), as status.dnssec.ds writes it.
func legacyDS(ctx context.Context, t *testing.T, server, zone string) []string {
	t.Helper()
	var ds []string
	NewWithT(t).Eventually(func(g Gomega) {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(zone), dns.TypeDNSKEY)
		r, err := dns.ExchangeContext(ctx, m, server)
		g.Expect(err).NotTo(HaveOccurred())
		ds = nil
		for _, rr := range r.Answer {
			if k, ok := rr.(*dns.DNSKEY); ok && k.Flags&dns.SEP != 0 {
				d := k.ToDS(dns.SHA256)
				ds = append(ds, fmt.Sprintf("%d %d %d %s", d.KeyTag, d.Algorithm, d.DigestType, strings.ToUpper(d.Digest)))
			}
		}
		g.Expect(ds).To(HaveLen(1), "the old server's KSK of %s", zone)
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return ds
}

// startLegacyServer writes the legacy tree into root and runs named on it,
// as its own working directory, until the test ends; it returns named's
// DNS address on loopback.
func startLegacyServer(t *testing.T, root string, upstream netip.AddrPort, keys map[string]tsigKey) string {
	t.Helper()
	port, control := testkit.FreePort(t), testkit.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	runNamed(t, "legacy", root, legacyFiles(port, control, upstream, keys), addr, "127.0.0.1:"+strconv.Itoa(control))
	return addr
}

// startUpstreamServer runs the primary of the legacy server's secondary
// zone on the node's address, where the new cluster's pods reach it too.
func startUpstreamServer(t *testing.T, key tsigKey) netip.AddrPort {
	t.Helper()
	port, control := testkit.FreePort(t), testkit.FreePort(t)
	files := map[string]string{
		"etc/bind/named.conf": nodeNamedConf(key, control, netip.AddrPortFrom(localcluster.NodeIP, uint16(port)), fmt.Sprintf(`allow-transfer { key %q; };`, strings.TrimSuffix(key.Name, ".")),
			`zone "partner.example" { type primary; file "db.partner.example"; };
zone "corp.example" { type primary; file "db.corp.example"; };
`),
		// What the legacy server's internal view forwards to: TTL 0, so
		// every answer is fresh and the same from the old server and the
		// pods, whenever each is asked.
		"db.corp.example": `$TTL 0
@	IN SOA ns.corp.example. hostmaster.corp.example. 1 3600 600 1209600 0
	IN NS ns.corp.example.
ns	IN A 192.0.2.55
shop	IN A 192.0.2.56
`,
		"db.partner.example": `$TTL 1800
@	IN SOA ns.partner.example. hostmaster.partner.example. 42 3600 600 1209600 300
	IN NS ns.partner.example.
ns	IN A 192.0.2.53
shop	IN A 192.0.2.54
	IN TXT "v=spf1 -all"
`,
	}
	addr := netip.AddrPortFrom(localcluster.NodeIP, uint16(port))
	runNamed(t, "upstream", t.TempDir(), files, addr.String(), "127.0.0.1:"+strconv.Itoa(control))
	return addr
}

// nodeNamedConf is the named.conf of a server of the user's own on the
// node's address (listen), outside the cluster: key and its control
// channel on loopback at control, options (plus extraOptions) and zones.
func nodeNamedConf(key tsigKey, control int, listen netip.AddrPort, extraOptions, zones string) string {
	name := strings.TrimSuffix(key.Name, ".")
	return fmt.Sprintf(`key %q { algorithm %s; secret %q; };
controls { inet 127.0.0.1 port %d allow { 127.0.0.1; } keys { %q; }; };
logging { channel to_stderr { stderr; severity info; }; category default { to_stderr; }; };
options {
	directory ".";
	pid-file none;
	session-keyfile none;
	managed-keys-directory ".";
	listen-on port %d { %s; };
	listen-on-v6 { none; };
	recursion no;
	notify no;
	%s
};
%s`, name, strings.TrimSuffix(key.Algorithm, "."), key.Secret, control, name, listen.Port(), listen.Addr(), extraOptions, zones)
}

// runNamed writes files into root and runs named on root/etc/bind/named.conf,
// with root as its working directory, until the test ends.
func runNamed(t *testing.T, who, root string, files map[string]string, dnsAddr, controlAddr string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		testkit.Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		testkit.Must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	log := &bindtest.LogBuffer{}
	cmd := exec.Command("named", "-g", "-n", "1", "-c", filepath.Join(root, "etc/bind/named.conf"))
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = log, log
	testkit.Must(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s named log:\n%s", who, bindtest.Tail(log.String(), 60))
		}
	})
	if err := bindtest.WaitReady(dnsAddr, controlAddr, exited, 30*time.Second); err != nil {
		t.Fatalf("the %s named did not start: %v", who, err)
	}
}

// runImportCommand builds the checkout's binary (as the release builds
// it) and runs `bind-operator import --validate` on root; it returns what
// the command printed and its exit status.
func runImportCommand(ctx context.Context, t *testing.T, root, ns, out string) (string, int) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bind-operator")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd")
	build.Dir = testkit.RepoRoot()
	if o, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd: %v\n%s", err, o)
	}
	cmd := exec.CommandContext(ctx, bin, "import", "--root", root, "--config", "/etc/bind/named.conf",
		"--namespace", ns, "--cluster", "legacy", "--out", out, "--validate")
	o, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(o), 0
	case errors.As(err, &exit):
		return string(o), exit.ExitCode()
	}
	t.Fatalf("bind-operator import: %v\n%s", err, o)
	return "", 0
}

// waitZonesReady waits until every BindZone of the namespace is Ready.
func waitZonesReady(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		var zones v1.BindZoneList
		if err := env.Client.List(ctx, &zones, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(zones.Items) == 0 {
			return errors.New("no BindZones")
		}
		for _, z := range zones.Items {
			if !meta.IsStatusConditionTrue(z.Status.Conditions, v1.ConditionReady) {
				return fmt.Errorf("BindZone %s: %s", z.Name, conditions(z.Status.Conditions))
			}
		}
		return nil
	}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// zoneRRs transfers zone from server signed with key and returns every
// record in presentation form, sorted, the SOA without its serial.
func zoneRRs(server, zone string, key tsigKey) ([]string, error) {
	seen := map[string]bool{}
	err := eachTransferred(server, zone, key, func(rr dns.RR) {
		if soa, ok := rr.(*dns.SOA); ok {
			s := *soa
			s.Serial = 0
			rr = &s
		}
		if slices.Contains(signerTypes, rr.Header().Rrtype) {
			return
		}
		rr.Header().Name = strings.ToLower(rr.Header().Name)
		seen[rr.String()] = true // the closing SOA repeats the first
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}

// signerTypes are what a signer makes afresh (signatures, denial of
// existence, its signing state in TYPE65534, the CDS it offers the
// parent): transfers are compared without them. DNSKEY is compared: the
// keys are the zone's identity.
var signerTypes = []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNSEC3, dns.TypeNSEC3PARAM, dns.TypeCDS, dns.TypeCDNSKEY, 65534}

// diffRRs says which records only one side has ("" when none).
func diffRRs(want, got []string) string {
	var missing, extra []string
	for _, w := range want {
		if _, ok := slices.BinarySearch(got, w); !ok {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if _, ok := slices.BinarySearch(want, g); !ok {
			extra = append(extra, g)
		}
	}
	if len(missing)+len(extra) == 0 {
		return ""
	}
	return fmt.Sprintf("missing %d %q, extra %d %q", len(missing), head(missing, 10), len(extra), head(extra, 10))
}

func head(s []string, n int) []string { return s[:min(n, len(s))] }

// viewAnswer queries name and returns the rcode and the answer section as
// text, signed with key when given (the key selects a view).
func viewAnswer(t *testing.T, server, name string, qtype uint16, key *tsigKey) string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	var r *dns.Msg
	var err error
	if key != nil {
		r, err = exchangeSigned("udp", server, m, *key)
	} else {
		var addr string
		if addr, err = guardAddr(server); err == nil {
			r, err = dns.Exchange(m, addr)
		}
	}
	if err != nil {
		t.Fatalf("%s %s from %s: %v", name, dns.TypeToString[qtype], server, err)
	}
	var rrs []string
	for _, rr := range r.Answer {
		rrs = append(rrs, strings.ToLower(rr.String()))
	}
	sort.Strings(rrs)
	return dns.RcodeToString[r.Rcode] + " " + strings.Join(rrs, " | ")
}
