package dataplane

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// served asks addr (UDP) for name/type and returns the rdata, sorted; nil
// when the server does not answer authoritatively for it.
func served(addr, name string, t uint16) []string {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), t)
	m.RecursionDesired = false
	in, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
	if err != nil || in == nil {
		return nil
	}
	var out []string
	for _, rr := range in.Answer {
		if rr.Header().Rrtype == t {
			out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
	}
	slices.Sort(out)
	return out
}

// rcode of a SOA query for zone at addr (-1 on no reply).
func soaRcode(addr, zone string) (int, bool) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	in, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
	if err != nil || in == nil {
		return -1, false
	}
	return in.Rcode, in.Authoritative && len(in.Answer) > 0
}

func (c *cluster) zone(name string) *v1.BindZone {
	c.t.Helper()
	var z v1.BindZone
	testkit.Must(c.t, k8s.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: name}, &z))
	return &z
}

// editZone changes a BindZone as kubectl edit does: read, change, write,
// and again on a conflict (the operator writes the status meanwhile).
func (c *cluster) editZone(name string, change func(*v1.BindZone)) {
	c.t.Helper()
	testkit.Must(c.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		z := c.zone(name)
		change(z)
		return k8s.Update(ctx, z)
	}))
}

func (c *cluster) waitZone(name, reason string, timeout time.Duration) *v1.BindZone {
	c.t.Helper()
	var z *v1.BindZone
	c.g.Eventually(func(g Gomega) {
		z = c.zone(name)
		g.Expect(meta.FindStatusCondition(z.Status.Conditions, v1.ConditionReady)).To(HaveField("Reason", reason))
		g.Expect(z.Status.ObservedGeneration).To(Equal(z.Generation))
	}).WithTimeout(timeout).Should(Succeed(), "BindZone %s Ready reason %s", name, reason)
	return z
}

func (c *cluster) key(name string) dnsclient.Key {
	c.t.Helper()
	k := c.keys[name]
	key, err := dnsclient.NewKey(k.Name, k.Algorithm, k.Secret)
	testkit.Must(c.t, err)
	return key
}

func (c *cluster) waitAll(what string, timeout time.Duration, name string, typ uint16, want ...string) {
	c.t.Helper()
	for _, n := range c.Nodes {
		c.g.Eventually(func() []string { return served(n.DNSAddr(), name, typ) }).WithTimeout(timeout).
			Should(ConsistOf(want), "%s: %s serves %s %s = %v", what, n.Name, name, dns.TypeToString[typ], want)
	}
}

func TestPrimaryZoneLifecycleWithCatalog(t *testing.T) {
	c := newCluster(t, 2)
	start := time.Now()
	c.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "example-com"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "example.com", Type: v1.ZonePrimary,
		CatalogZoneRef: &v1.LocalObjectReference{Name: "catalog"},
		Records: []v1.RecordSet{
			{Name: "www", Type: "A", Values: []string{"192.0.2.1"}},
			{Name: "txt", Type: "TXT", Values: []string{`"hello"`}},
		},
	}})
	primary := c.Nodes[0]
	c.g.Eventually(func() []string { return served(primary.DNSAddr(), "www.example.com", dns.TypeA) }).WithTimeout(20*time.Second).
		Should(Equal([]string{"192.0.2.1"}), "the primary to serve www")
	t.Logf("zone create → served on the primary: %v", time.Since(start))
	z := c.waitZone("example-com", v1.ReasonServed, 20*time.Second)
	t.Logf("zone create → catalog member loaded and in sync on both secondaries: %v", time.Since(start))
	c.waitAll("catalog member", 5*time.Second, "www.example.com", dns.TypeA, "192.0.2.1")
	if z.Status.Serial == nil || len(z.Status.Secondaries) != 2 || z.Status.RecordCount != 2 || len(z.Status.ManagedRecords) != 2 {
		t.Fatalf("status = %+v", z.Status)
	}
	for _, s := range z.Status.Secondaries {
		if !s.InSync || s.Serial == nil || *s.Serial != *z.Status.Serial {
			t.Errorf("secondary %s not in sync with serial %d: %+v", s.Pod, *z.Status.Serial, s)
		}
	}
	// The seed SOA timers and an MNAME outside the zone.
	soa := served(primary.DNSAddr(), "example.com", dns.TypeSOA)
	if len(soa) != 1 || !strings.Contains(soa[0], "dns."+c.ns+".svc.cluster.local. ") || !strings.HasSuffix(soa[0], " 300 60 1209600 60") {
		t.Errorf("seed SOA = %v", soa)
	}

	// Catalog status.
	c.g.Eventually(func(g Gomega) {
		cat := c.catalog(g)
		g.Expect(cat.Status.MemberCount).To(BeEquivalentTo(1))
		g.Expect(cat.Status.Members).To(Equal([]string{"example.com"}))
		g.Expect(cat.Status.Serial).NotTo(BeNil())
		g.Expect(meta.IsStatusConditionTrue(cat.Status.Conditions, v1.ConditionReady)).To(BeTrue(), "Ready")
	}).WithTimeout(10*time.Second).Should(Succeed(), "the catalog to report the member")

	// A record change reaches both secondaries through signed NOTIFY from
	// a non-primary address (SOA refresh is 300 s: anything under a few
	// seconds is the NOTIFY).
	changed := time.Now()
	c.editZone("example-com", func(z *v1.BindZone) { z.Spec.Records[0].Values = []string{"192.0.2.2"} })
	for _, n := range c.Nodes[1:] {
		c.g.Eventually(func() []string { return served(n.DNSAddr(), "www.example.com", dns.TypeA) }).WithTimeout(5*time.Second).
			Should(Equal([]string{"192.0.2.2"}), n.Name+" to serve the change")
		t.Logf("record change → served on %s: %v (after the spec update)", n.Name, time.Since(changed).Round(time.Millisecond))
		log := n.Log()
		if !strings.Contains(log, "received notify for zone 'example.com'") {
			t.Errorf("%s did not log an accepted NOTIFY for example.com:\n%s", n.Name, bindtest.Tail(log, 20))
		}
		if strings.Contains(log, "refused notify") {
			t.Errorf("%s refused a NOTIFY:\n%s", n.Name, bindtest.Tail(log, 20))
		}
	}
	if !strings.Contains(primary.Log(), "zone example.com/IN: sending notifies") {
		t.Errorf("the primary never sent NOTIFYs for example.com")
	}

	// Drift: someone changes a declared set and adds their own; a resync
	// restores the declared one and leaves theirs alone.
	upd, err := dnsclient.New(fmt.Sprintf("[::1]:%d", primary.DNSPort()), ptr.To(c.key("transfer")), dnsclient.Options{Timeout: 5 * time.Second})
	testkit.Must(t, err)
	defer upd.Close()
	testkit.Must(t, upd.Update(ctx, "example.com",
		dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{Name: "www.example.com.", Type: dns.TypeA, TTL: 60, Values: []string{"192.0.2.66"}}},
		dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{Name: "foreign.example.com.", Type: dns.TypeA, TTL: 60, Values: []string{"192.0.2.77"}}},
	))
	c.editZone("example-com", func(z *v1.BindZone) { z.Annotations = map[string]string{v1.AnnotationResync: "now-1"} })
	c.waitAll("drift repaired", 10*time.Second, "www.example.com", dns.TypeA, "192.0.2.2")
	c.waitAll("foreign data kept", 5*time.Second, "foreign.example.com", dns.TypeA, "192.0.2.77")
	c.g.Eventually(func() string { return c.zone("example-com").Status.ObservedResync }).WithTimeout(5*time.Second).
		Should(Equal("now-1"), "the resync to be recorded")

	// A set removed from spec.records is deleted (it still holds what the
	// zone wrote).
	c.editZone("example-com", func(z *v1.BindZone) { z.Spec.Records = z.Spec.Records[:1] })
	c.waitAll("removed set", 10*time.Second, "txt.example.com", dns.TypeTXT)

	// Delete: gone everywhere, catalog empty.
	testkit.Must(t, k8s.Delete(ctx, z))
	for _, n := range c.Nodes {
		c.g.Eventually(func() bool {
			_, ok := soaRcode(n.DNSAddr(), "example.com")
			return ok
		}).WithTimeout(10*time.Second).Should(BeFalse(), n.Name+" to stop serving example.com")
	}
	c.g.Eventually(func(g Gomega) []v1.BindZone {
		var l v1.BindZoneList
		g.Expect(k8s.List(ctx, &l, client.InNamespace(c.ns))).To(Succeed())
		return l.Items
	}).WithTimeout(10*time.Second).Should(BeEmpty(), "the BindZone to go")
	c.g.Eventually(func(g Gomega) int32 { return c.catalog(g).Status.MemberCount }).WithTimeout(10*time.Second).
		Should(BeZero(), "the catalog to be empty")
}

// catalog reads the cluster's BindCatalogZone.
func (c *cluster) catalog(g Gomega) *v1.BindCatalogZone {
	var cat v1.BindCatalogZone
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "catalog"}, &cat)).To(Succeed())
	return &cat
}

func TestZoneOutsideCatalogAndRestartKeepsDNSRecord(t *testing.T) {
	c := newCluster(t, 2)
	c.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "plain.test", Type: v1.ZonePrimary,
		Records: []v1.RecordSet{{Name: "@", Type: "MX", Values: []string{"10 mail.example.net."}}},
	}})
	c.waitZone("plain", v1.ReasonServed, 20*time.Second)
	c.create(&v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "api"}, Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Name: "plain"}, Name: "api", Type: "A", Values: []string{"192.0.2.80"},
	}})
	// The secondaries hold the zone through a runtime secondary clause
	// (agent), and follow the DNSRecord's UPDATE through signed NOTIFY.
	c.waitAll("DNSRecord", 10*time.Second, "api.plain.test", dns.TypeA, "192.0.2.80")

	primary := c.Nodes[0]
	c.Restart(primary)
	if got := served(primary.DNSAddr(), "api.plain.test", dns.TypeA); !slices.Equal(got, []string{"192.0.2.80"}) {
		t.Fatalf("after a named restart (SIGKILL), the primary serves api A %v, want the DNSRecord's 192.0.2.80", got)
	}
	if got := served(primary.DNSAddr(), "plain.test", dns.TypeMX); !slices.Equal(got, []string{"10 mail.example.net."}) {
		t.Fatalf("after a restart the primary serves MX %v", got)
	}
}

func TestWrongKeyIsReported(t *testing.T) {
	c := newCluster(t, 1)
	// named knows "transfer", the key the operator signs its UPDATEs with
	// (K), with the rendered material; the Secret now holds another one,
	// so the operator signs with a key named refuses.
	var s corev1.Secret
	testkit.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "transfer-tsig"}, &s))
	s.Data[v1.TSIGSecretKey] = []byte(newSecret())
	testkit.Must(t, k8s.Update(ctx, &s))
	c.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "keyed"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "keyed.test", Type: v1.ZonePrimary,
		UpdateKeyRef: &v1.LocalObjectReference{Name: "upd"},
		Records:      []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.5"}}},
	}})
	z := c.waitZone("keyed", v1.ReasonRecordsRefused, 20*time.Second)
	ready := meta.FindStatusCondition(z.Status.Conditions, v1.ConditionReady).Message
	if !strings.Contains(ready, "NOTAUTH") {
		t.Fatalf("Ready says %q, want named's NOTAUTH for the operator's key", ready)
	}
	t.Logf("Ready: %s", ready)
	if strings.Contains(fmt.Sprintf("%+v", z.Status), string(s.Data[v1.TSIGSecretKey])) {
		t.Fatal("status leaks key material")
	}
	// Fix the key: the zone converges.
	s.Data[v1.TSIGSecretKey] = []byte(c.keys["transfer"].Secret)
	testkit.Must(t, k8s.Update(ctx, &s))
	c.editZone("keyed", func(z *v1.BindZone) { z.Annotations = map[string]string{v1.AnnotationResync: "fixed"} })
	c.waitZone("keyed", v1.ReasonServed, 20*time.Second)
	c.waitAll("after the key fix", 5*time.Second, "www.keyed.test", dns.TypeA, "192.0.2.5")
}
