package dataplane

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// serialAt is the SOA serial addr serves for zone, 0 when it serves none.
func serialAt(addr, zone string) uint32 {
	vals := served(addr, zone, dns.TypeSOA)
	if len(vals) != 1 {
		return 0
	}
	rr, err := dns.NewRR(fmt.Sprintf("%s 0 IN SOA %s", dns.Fqdn(zone), vals[0]))
	if err != nil {
		return 0
	}
	return rr.(*dns.SOA).Serial
}

// TestPrimaryLosesItsVolume (docs/behaviours.md, "Serials never go back"):
// a primary that comes back with an empty data volume re-seeds its
// catalog and zones at serial 1 while the secondaries hold newer serials.
// The secondaries keep serving every member zone throughout (no partial
// catalog reaches them); a zone with records gets them back and a zone
// without any is raised past the secondaries' serial; the rebuilt catalog
// is raised past theirs once complete; every secondary then serves what
// the primary serves and follows later changes.
func TestPrimaryLosesItsVolume(t *testing.T) {
	c := newCluster(t, 2)
	catalog := &v1.LocalObjectReference{Name: "catalog"}
	zone := func(name string, sets ...v1.RecordSet) *v1.BindZone {
		return &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: v1.DomainName(name + ".test"), Type: v1.ZonePrimary,
			CatalogZoneRef: catalog, Records: sets,
		}}
	}
	c.create(zone("kept", v1.RecordSet{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}))
	c.create(zone("bare"))
	for _, name := range []string{"kept", "bare"} {
		c.waitZone(name, v1.ReasonServed, 20*time.Second)
	}
	// bare's serial moves on while its content goes back to the seed's;
	// the catalog's moves past its member count.
	tmp := &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "tmp"}, Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Name: "bare"}, Name: "tmp", Type: "A", Values: []string{"192.0.2.9"},
	}}
	c.create(tmp)
	c.waitAll("DNSRecord", 10*time.Second, "tmp.bare.test", dns.TypeA, "192.0.2.9")
	testkit.Must(t, k8s.Delete(ctx, tmp))
	c.waitAll("DNSRecord deleted", 10*time.Second, "tmp.bare.test", dns.TypeA)
	// Two members come and go, one after the other: the catalog's serial
	// now counts more UPDATEs than a rebuild of its two members takes, so
	// the rebuilt catalog must be raised past it.
	for _, name := range []string{"gone-1", "gone-2"} {
		gone := zone(name)
		c.create(gone)
		c.waitZone(name, v1.ReasonServed, 20*time.Second)
		testkit.Must(t, k8s.Delete(ctx, gone))
		for _, n := range c.Nodes {
			c.g.Eventually(func() bool { _, ok := soaRcode(n.DNSAddr(), name+".test"); return ok }).WithTimeout(10*time.Second).
				Should(BeFalse(), "%s to drop %s.test", n.Name, name)
		}
	}
	const catZone = "catalog.example.internal"
	primary, secondaries := c.Nodes[0], c.Nodes[1:]
	before := map[string]uint32{}
	for _, z := range []string{"bare.test", "kept.test", catZone} {
		for _, n := range secondaries {
			c.g.Eventually(func() uint32 { return serialAt(n.DNSAddr(), z) }).WithTimeout(10*time.Second).
				Should(Equal(serialAt(primary.DNSAddr(), z)), "%s: %s in sync before the wipe", z, n.Name)
		}
		before[z] = serialAt(secondaries[0].DNSAddr(), z)
	}

	// The secondaries answer for both member zones the whole time.
	stop := make(chan struct{})
	lapses := make(chan string, 1)
	go func() {
		defer close(lapses)
		for i := 0; i < 3000; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for _, n := range secondaries {
				for _, z := range []string{"kept.test", "bare.test"} {
					if rc, ok := soaRcode(n.DNSAddr(), z); !ok {
						lapses <- fmt.Sprintf("%s stopped serving %s (rcode %d)", n.Name, z, rc)
						return
					}
				}
			}
		}
	}()

	c.Wipe(primary)
	if got := serialAt(primary.DNSAddr(), catZone); got != 1 {
		t.Fatalf("the wiped primary serves the catalog at serial %d, want the seed's 1", got)
	}
	// The operator hears of a new pod and reconciles; here a resync says so.
	for _, name := range []string{"kept", "bare"} {
		c.editZone(name, func(z *v1.BindZone) { z.Annotations = map[string]string{v1.AnnotationResync: "wiped"} })
	}
	for name, zone := range map[string]string{"kept": "kept.test", "bare": "bare.test"} {
		c.g.Eventually(func(g Gomega) {
			z := c.zone(name)
			g.Expect(z.Status.ObservedResync).To(Equal("wiped"))
			g.Expect(meta.FindStatusCondition(z.Status.Conditions, v1.ConditionReady)).To(HaveField("Reason", v1.ReasonServed))
		}).WithTimeout(20*time.Second).Should(Succeed(), "BindZone %s served by every pod after the wipe", name)
		now := serialAt(primary.DNSAddr(), zone)
		if !(int32(now-before[zone]) > 0) { //nolint:gosec // RFC 1982
			t.Errorf("%s: the primary serves serial %d after the wipe, not newer than the secondaries' %d before it", zone, now, before[zone])
		}
		for _, n := range secondaries {
			if got := serialAt(n.DNSAddr(), zone); got != now {
				t.Errorf("%s: %s serves serial %d, the primary %d", zone, n.Name, got, now)
			}
		}
	}
	c.g.Eventually(func() bool {
		p := serialAt(primary.DNSAddr(), catZone)
		for _, n := range secondaries {
			if serialAt(n.DNSAddr(), catZone) != p {
				return false
			}
		}
		return int32(p-before[catZone]) > 0 //nolint:gosec // RFC 1982
	}).WithTimeout(20*time.Second).Should(BeTrue(), "the rebuilt catalog to pass the secondaries' serial and reach them")
	close(stop)
	if lapse, ok := <-lapses; ok {
		t.Error(lapse)
	}
	c.waitAll("records after the wipe", 10*time.Second, "www.kept.test", dns.TypeA, "192.0.2.1")
	c.waitAll("DNSRecord gone after the wipe", 5*time.Second, "tmp.bare.test", dns.TypeA)
	c.create(&v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "after"}, Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Name: "bare"}, Name: "after", Type: "A", Values: []string{"192.0.2.10"},
	}})
	c.waitAll("DNSRecord after the wipe", 10*time.Second, "after.bare.test", dns.TypeA, "192.0.2.10")
}
