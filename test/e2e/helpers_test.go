package e2e

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// authoritative describes the BindCluster most tests run: an
// authoritative cluster with a transfer key and a catalog zone.
type authoritative struct {
	Namespace, Name string
	Replicas        int32
	Catalog         string // catalog zone name
	Storage         bool
	Mutate          func(*v1.BindCluster)
}

func (a authoritative) transferKey() string { return a.Name + "-transfer" }

// create makes the transfer key, the catalog zone and the cluster.
func (a authoritative) create(ctx context.Context, t *testing.T) *v1.BindCluster {
	t.Helper()
	key := &v1.BindTSIGKey{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.transferKey()},
		Spec:       v1.BindTSIGKeySpec{Algorithm: "hmac-sha256"},
	}
	testkit.Must(t, env.Client.Create(ctx, key))
	cat := &v1.BindCatalogZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name + "-catalog"},
		Spec: v1.BindCatalogZoneSpec{
			ClusterRef:     v1.LocalObjectReference{Name: a.Name},
			ZoneName:       v1.DomainName(a.Catalog),
			TransferKeyRef: v1.LocalObjectReference{Name: a.transferKey()},
		},
	}
	testkit.Must(t, env.Client.Create(ctx, cat))
	c := &v1.BindCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name},
		Spec: v1.BindClusterSpec{
			Mode:           v1.ModeAuthoritative,
			Replicas:       ptr.To(a.Replicas),
			TransferKeyRef: &v1.LocalObjectReference{Name: a.transferKey()},
			Storage:        &v1.StorageSpec{Enabled: ptr.To(a.Storage)},
		},
	}
	if a.Mutate != nil {
		a.Mutate(c)
	}
	testkit.Must(t, env.Client.Create(ctx, c))
	return c
}

// catalogZone is a primary BindZone of the cluster in its catalog, updated
// by DNSRecords signed with updateKey (none when empty), with an apex NS
// and records. Its name server lies outside the zone: an in-zone one needs
// glue records (the webhook insists), which these tests do not care about.
func (a authoritative) catalogZone(name, zoneName, updateKey string, records ...v1.RecordSet) *v1.BindZone {
	z := &v1.BindZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: name},
		Spec: v1.BindZoneSpec{
			ClusterRef:     v1.LocalObjectReference{Name: a.Name},
			ZoneName:       v1.DomainName(zoneName),
			Type:           v1.ZonePrimary,
			CatalogZoneRef: &v1.LocalObjectReference{Name: a.Name + "-catalog"},
			SOA:            &v1.SOASpec{PrimaryNameServer: "ns1.example.net", ResponsiblePerson: "hostmaster.example.net"},
			Records:        append([]v1.RecordSet{{Name: "@", Type: "NS", Values: []string{"ns1.example.net."}}}, records...),
		},
	}
	if updateKey != "" {
		z.Spec.UpdateKeyRef = &v1.LocalObjectReference{Name: updateKey}
	}
	return z
}

func waitClusterReady(ctx context.Context, t *testing.T, ns, name string, replicas int32) *v1.BindCluster {
	t.Helper()
	var c v1.BindCluster
	start := time.Now()
	defer func() {
		// Slow is not failed, but worth seeing why.
		if d := time.Since(start); d > 2*time.Minute && !t.Failed() {
			t.Logf("BindCluster %s/%s took %s to be Ready; operator logs (tails):\n%s", ns, name, d.Round(time.Second), env.OperatorLogTails(ctx, 4000))
		}
	}()
	NewWithT(t).Eventually(func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
			return err
		}
		if c.Status.ReadyReplicas != replicas || !meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionReady) {
			return fmt.Errorf("%d/%d ready, conditions %s", c.Status.ReadyReplicas, replicas, conditions(c.Status.Conditions))
		}
		return nil
	}).WithContext(ctx).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Succeed(), "BindCluster %s/%s not Ready", ns, name)
	return &c
}

// servedByAll waits until the cluster reports every replica ready and
// each pod serves the SOA of every zone, and returns the pod IPs (ordinal
// order, the primary first).
func (a authoritative) servedByAll(ctx context.Context, t *testing.T, zones ...string) []string {
	t.Helper()
	waitClusterReady(ctx, t, a.Namespace, a.Name, a.Replicas)
	ips := podIPs(ctx, t, a.Namespace, a.Name, a.Replicas)
	for i, ip := range ips {
		for _, z := range zones {
			waitSOA(ctx, t, ip, z, fmt.Sprintf("%s-%d", a.Name, i))
		}
	}
	return ips
}

func conditions(cs []metav1.Condition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}

// waitSOA waits until server answers zone's SOA authoritatively and
// returns the serial.
func waitSOA(ctx context.Context, t *testing.T, server, zone, who string) uint32 {
	t.Helper()
	return waitSerial(ctx, t, server, zone, who, 0)
}

// waitSerial waits until server serves zone with a serial of at least min.
func waitSerial(ctx context.Context, t *testing.T, server, zone, who string, minSerial uint32) uint32 {
	t.Helper()
	var serial uint32
	defer logSlow(t, time.Now(), "%s (%s) served %s with serial >= %d", who, server, zone, minSerial)
	NewWithT(t).Eventually(func() error {
		s, err := soaSerial(server, zone)
		if err != nil {
			return err
		}
		if serial = s; s < minSerial {
			return fmt.Errorf("serial %d", s)
		}
		return nil
	}).WithContext(ctx).Should(Succeed(), "%s (%s) does not serve %s with serial >= %d", who, server, zone, minSerial)
	return serial
}

// waitA waits until server answers name's A record with exactly want.
func waitA(ctx context.Context, t *testing.T, server, name, want, who string) {
	t.Helper()
	defer logSlow(t, time.Now(), "%s (%s) answered %s A %s", who, server, name, want)
	NewWithT(t).Eventually(func() error {
		in, err := localcluster.Dig(server, name, dns.TypeA)
		if err != nil {
			return err
		}
		if got := aValues(in); in.Rcode != dns.RcodeSuccess || len(got) != 1 || got[0] != want {
			return fmt.Errorf("%s %v", dns.RcodeToString[in.Rcode], got)
		}
		return nil
	}).WithContext(ctx).Should(Succeed(), "%s (%s) does not answer %s A %s", who, server, name, want)
}

// slowWait is how long a wait for an answer may take before the test
// log says so: replication here takes milliseconds (docs/bind-facts.md).
const slowWait = 5 * time.Second

// logSlow logs what was waited for when it took longer than slowWait.
func logSlow(t *testing.T, start time.Time, format string, args ...any) {
	t.Helper()
	if d := time.Since(start); d > slowWait && !t.Failed() {
		t.Logf("slow: "+format+" only after %s", append(args, d.Round(time.Millisecond))...)
	}
}

// soaSerial asks server for zone's SOA (UDP) and returns its serial.
func soaSerial(server, zone string) (uint32, error) {
	in, err := localcluster.Dig(server, zone, dns.TypeSOA)
	if err != nil {
		return 0, err
	}
	if in.Rcode != dns.RcodeSuccess || !in.Authoritative || len(in.Answer) != 1 {
		return 0, fmt.Errorf("rcode %s, aa=%v, %d answers", dns.RcodeToString[in.Rcode], in.Authoritative, len(in.Answer))
	}
	soa, ok := in.Answer[0].(*dns.SOA)
	if !ok {
		return 0, fmt.Errorf("answer is %s, not SOA", dns.TypeToString[in.Answer[0].Header().Rrtype])
	}
	return soa.Serial, nil
}

// testNet is where the tests may send DNS (docs/testing.md, "Network
// rules"): loopback and the local cluster's pod (198.18/16) and Service
// (198.19/16) ranges.
var testNet = netip.MustParsePrefix("198.18.0.0/15")

// guardAddr returns server as host:port (default port 53), refusing any
// address that is not a test host.
func guardAddr(server string) (string, error) {
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		host, port = server, "53"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "", fmt.Errorf("server %q is not an IP address", server)
	}
	if !ip.IsLoopback() && !testNet.Contains(ip.Unmap()) {
		return "", fmt.Errorf("refusing to send DNS to %s: only loopback and %s are test hosts (docs/testing.md, Network rules)", ip, testNet)
	}
	return net.JoinHostPort(host, port), nil
}

// eachTransferred transfers zone from server by AXFR signed with key and
// calls f with each record as it arrives (the closing SOA too).
func eachTransferred(server, zone string, key tsigKey, f func(dns.RR)) error {
	addr, err := guardAddr(server)
	if err != nil {
		return err
	}
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	m.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
	tr := &dns.Transfer{TsigSecret: map[string]string{key.Name: key.Secret}, ReadTimeout: 10 * time.Second}
	envelopes, err := tr.In(m, addr)
	if err != nil {
		return err
	}
	for e := range envelopes {
		if e.Error != nil {
			return e.Error
		}
		for _, rr := range e.RR {
			f(rr)
		}
	}
	return nil
}

// tsigKey is a TSIG key as a client signs with it.
type tsigKey struct{ Name, Algorithm, Secret string }

// readTSIGKey reads a BindTSIGKey's material from its Secret.
func readTSIGKey(ctx context.Context, t *testing.T, ns, name string) tsigKey {
	t.Helper()
	var s corev1.Secret
	NewWithT(t).Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + v1.TSIGSecretNameSuffix}, &s)
	}).WithContext(ctx).Should(Succeed(), "the Secret of BindTSIGKey %s/%s never appeared", ns, name)
	k := tsigKey{
		Name:      dns.Fqdn(string(s.Data[v1.TSIGSecretKeyName])),
		Algorithm: dns.Fqdn(string(s.Data[v1.TSIGSecretAlgorithm])),
		Secret:    string(s.Data[v1.TSIGSecretKey]),
	}
	if k.Name == "." || k.Secret == "" {
		t.Fatalf("Secret %s/%s%s holds no usable key (keys %v)", ns, name, v1.TSIGSecretNameSuffix, slices.Sorted(maps.Keys(s.Data)))
	}
	return k
}

// exchangeSigned sends m signed with key to server (a test host only) and
// checks the reply's signature.
func exchangeSigned(network, server string, m *dns.Msg, key tsigKey) (*dns.Msg, error) {
	addr, err := guardAddr(server)
	if err != nil {
		return nil, err
	}
	m.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
	c := &dns.Client{Net: network, Timeout: 5 * time.Second, TsigSecret: map[string]string{key.Name: key.Secret}}
	r, _, err := c.Exchange(m, addr)
	return r, err
}

// podState is what a test remembers of a pod to prove it was not
// replaced or restarted.
type podState struct {
	UID      types.UID
	IP       string
	Restarts int32
}

func (p podState) String() string {
	return fmt.Sprintf("uid %s ip %s restarts %d", shortUID(p.UID), p.IP, p.Restarts)
}

func shortUID(u types.UID) string {
	if len(u) > 8 {
		return string(u[:8])
	}
	return string(u)
}

// podStates returns the cluster's pods by name.
func podStates(ctx context.Context, ns, cluster string) (map[string]podState, error) {
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1.LabelCluster: cluster}); err != nil {
		return nil, err
	}
	out := map[string]podState{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		var restarts int32
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		out[p.Name] = podState{UID: p.UID, IP: p.Status.PodIP, Restarts: restarts}
	}
	return out, nil
}

func describePods(m map[string]podState) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s: %s; ", n, m[n])
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// rollout is the StatefulSet's generation and the pod template's hash.
type rollout struct {
	Generation int64
	Hash       string
}

func currentRollout(ctx context.Context, ns, name string) (rollout, *appsv1.StatefulSet, error) {
	var sts appsv1.StatefulSet
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sts); err != nil {
		return rollout{}, nil, err
	}
	return rollout{Generation: sts.Generation, Hash: sts.Spec.Template.Annotations[v1.AnnotationConfigHash]}, &sts, nil
}

func podIPs(ctx context.Context, t *testing.T, ns, cluster string, replicas int32) []string {
	t.Helper()
	ips := make([]string, replicas)
	for i := range replicas {
		ip, err := env.Cluster.PodIP(ctx, ns, fmt.Sprintf("%s-%d", cluster, i))
		testkit.Must(t, err)
		ips[i] = ip
	}
	return ips
}

// aValues returns the addresses of the A records in a reply's answer.
func aValues(in *dns.Msg) []string {
	var got []string
	for _, rr := range in.Answer {
		if a, ok := rr.(*dns.A); ok {
			got = append(got, a.A.String())
		}
	}
	return got
}

// dumpOnFailure logs what a failed test needs to see (dumpCluster).
func dumpOnFailure(t *testing.T, ns, cluster string, replicas int32) {
	if t.Failed() {
		dumpCluster(t, ns, cluster, replicas)
	}
}

// dumpCluster logs the cluster's and zones' and records' status, and every
// pod's description (containers, events) with its named and agent log
// tails.
func dumpCluster(t *testing.T, ns, cluster string, replicas int32) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var bc v1.BindCluster
	if env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &bc) == nil {
		t.Logf("BindCluster %s status: ready %d, conditions %s", cluster, bc.Status.ReadyReplicas, conditions(bc.Status.Conditions))
	}
	var zones v1.BindZoneList
	if env.Client.List(ctx, &zones, client.InNamespace(ns)) == nil {
		for _, z := range zones.Items {
			t.Logf("BindZone %s status: %+v", z.Name, z.Status)
		}
	}
	var signed []string
	for _, z := range zones.Items {
		if z.Spec.DNSSECPolicyRef != nil && z.Spec.ClusterRef.Name == cluster {
			signed = append(signed, string(z.Spec.ZoneName))
		}
	}
	var recs v1.DNSRecordList
	if env.Client.List(ctx, &recs, client.InNamespace(ns)) == nil {
		for i, r := range recs.Items {
			if i == 20 {
				t.Logf("… %d more DNSRecords", len(recs.Items)-i)
				break
			}
			t.Logf("DNSRecord %s status: %+v", r.Name, r.Status)
		}
	}
	for i := range replicas {
		pod := fmt.Sprintf("%s-%d", cluster, i)
		t.Log(env.Cluster.DescribePod(ctx, ns, pod))
		for _, c := range []string{"named", "agent"} {
			if l, err := env.Cluster.Logs(ctx, ns, pod, c, false); err == nil {
				t.Logf("%s %s log (tail):\n%s", pod, c, tail(l, 6000))
			}
			if l, err := env.Cluster.Logs(ctx, ns, pod, c, true); err == nil && l != "" {
				t.Logf("%s %s log of the previous instance (tail):\n%s", pod, c, tail(l, 3000))
			}
		}
		for _, zone := range signed {
			t.Logf("%s DNSSEC of %s:\n%s", pod, zone, dnssecState(ctx, ns, pod, zone))
		}
	}
}

// writeAnchors writes a delv anchors file that trusts zone by its DS
// records (presentation format, as status.dnssec.ds holds them).
func writeAnchors(t *testing.T, zone string, ds []string) string {
	t.Helper()
	var anchors strings.Builder
	anchors.WriteString("trust-anchors {\n")
	for _, d := range ds {
		f := strings.Fields(d)
		if len(f) != 4 {
			t.Fatalf("DS %q is not <key tag> <algorithm> <digest type> <digest>", d)
		}
		fmt.Fprintf(&anchors, "\t%q static-ds %s %s %s %q;\n", zone+".", f[0], f[1], f[2], f[3])
	}
	anchors.WriteString("};\n")
	file := filepath.Join(t.TempDir(), "anchors.conf")
	testkit.Must(t, os.WriteFile(file, []byte(anchors.String()), 0o644))
	return file
}

// dnssecState is what named says of a signed zone's keys (rndc dnssec
// -status), the key directory's files, the zone file with its journal
// applied, and the DNSKEY set the pod serves, for a failure's dump: a DS
// that stops validating is explained by one of them.
func dnssecState(ctx context.Context, ns, pod, zone string) string {
	p := render.DefaultPaths()
	// Zone files live in a folder per view: any view's file of the zone.
	zones := path.Dir(path.Dir(p.PrimaryZoneFile("", zone)))
	script := fmt.Sprintf(`rndc -k %[1]s -s 127.0.0.1 dnssec -status %[2]s 2>&1
ls -la --time-style=full-iso %[3]s 2>&1
for f in %[3]s/*.state; do echo "== $f"; cat "$f"; done 2>&1
f=$(ls %[4]s/*/%[2]s.db 2>/dev/null | head -1)
if [ -n "$f" ]; then echo "== $f with its journal"; ls -la --time-style=full-iso "$f"*; named-compilezone -j -D -o - %[2]s "$f" 2>&1 | head -c 20000; fi`,
		path.Join(p.KeysDir, render.FileControl), zone, p.DNSSECKeysDir(), zones)
	out, err := env.Kubectl(ctx, "", "exec", "-n", ns, pod, "-c", "named", "--", "sh", "-c", script)
	if err != nil {
		out += "\n(exec: " + err.Error() + ")"
	}
	ip, err := env.Cluster.PodIP(ctx, ns, pod)
	if err != nil {
		return out
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeDNSKEY)
	m.SetEdns0(4096, true)
	in, err := localcluster.Exchange("tcp", ip, m)
	if err != nil {
		return out + "\nDNSKEY query: " + err.Error()
	}
	for _, rr := range in.Answer {
		if k, ok := rr.(*dns.DNSKEY); ok {
			out += fmt.Sprintf("\nserved DNSKEY tag %d flags %d", k.KeyTag(), k.Flags)
		} else {
			out += "\nserved " + rr.String()
		}
	}
	return out
}

// restartOperator replaces the operator's pods one by one (`kubectl
// rollout restart`: the webhooks keep answering) and waits until only new
// ones run.
func restartOperator(ctx context.Context, t *testing.T) {
	t.Helper()
	before := time.Now().Truncate(time.Second)
	_, err := env.Kubectl(ctx, "", "-n", OperatorNamespace, "rollout", "restart", "deployment/"+OperatorDeployment)
	testkit.Must(t, err)
	testkit.Must(t, env.awaitOperator(ctx, env.Release.OperatorImage(), before))
}
