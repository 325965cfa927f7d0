package dataplane

import (
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestDNSRecordDeletedWhileNoOperatorRuns: DNSRecords carry no finalizer,
// so a DELETE removes the object at once, also while no operator runs.
// The operator that starts next finds those deletes from the record sets
// the primary's agent keeps, in guarded and unguarded zones alike, and
// removes their data, guarded by the values each record wrote: a set that
// someone changed meanwhile stays as they left it, every record that
// still exists keeps its data, and one that had lost the claim to a
// deleted record takes its set over.
func TestDNSRecordDeletedWhileNoOperatorRuns(t *testing.T) {
	c := newCluster(t, 1)
	guarded := &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "guarded"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "guarded.test", Type: v1.ZonePrimary,
		UpdateKeyRef: &v1.LocalObjectReference{Name: "upd"},
	}}
	open := &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "open"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "open.test", Type: v1.ZonePrimary,
	}}
	c.Roll([]v1.BindZone{*guarded, *open})
	c.create(guarded)
	c.create(open)
	c.waitZone("guarded", v1.ReasonServed, 20*time.Second)
	c.waitZone("open", v1.ReasonServed, 20*time.Second)

	record := func(zone, name, value string) {
		c.create(&v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: zone + "-" + name}, Spec: v1.DNSRecordSpec{
			ZoneRef: v1.ZoneReference{Name: zone}, Name: v1.RecordName(name), Type: "A", Values: []string{value},
		}})
	}
	for _, zone := range []string{"guarded", "open"} {
		record(zone, "gone", "192.0.2.1")
		record(zone, "kept", "192.0.2.2")
	}
	record("open", "changed", "192.0.2.3")
	record("open", "shared", "192.0.2.4")
	for _, zone := range []string{"guarded", "open"} {
		c.waitAll("a record to delete", 10*time.Second, "gone."+zone+".test", dns.TypeA, "192.0.2.1")
		c.waitAll("a record to keep", 10*time.Second, "kept."+zone+".test", dns.TypeA, "192.0.2.2")
		// What each record wrote has reached the primary's agent.
		c.g.Eventually(func(g Gomega) {
			stored, err := c.Nodes[0].Agent().StoredOwners(ctx, agent.ZoneRef{Zone: zone + ".test"}, validate.Replies)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(stored.Sets).To(ContainElement(agent.OwnedSet{Name: "gone." + zone + ".test", Type: "A", Values: []string{"192.0.2.1"}}))
		}).WithTimeout(10*time.Second).Should(Succeed(), "the agent keeps what the records of %s wrote", zone)
	}
	c.waitAll("a record someone changes", 10*time.Second, "changed.open.test", dns.TypeA, "192.0.2.3")
	c.waitAll("a record another claims", 10*time.Second, "shared.open.test", dns.TypeA, "192.0.2.4")
	// A later record for the same set loses the claim while the first one
	// lives, and takes the set over once it is gone.
	c.create(&v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "open-shared-later"}, Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Name: "open"}, Name: "shared", Type: "A", Values: []string{"192.0.2.5"},
	}})
	c.g.Eventually(func(g Gomega) {
		var r v1.DNSRecord
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "open-shared-later"}, &r)).To(Succeed())
		g.Expect(meta.FindStatusCondition(r.Status.Conditions, v1.ConditionConflict)).To(HaveField("Reason", v1.ReasonClaimed))
	}).WithTimeout(10*time.Second).Should(Succeed(), "the later record loses the claim")

	whileNoOperatorRuns(t, func() {
		for _, name := range []string{"guarded-gone", "open-gone", "open-changed", "open-shared"} {
			rec := &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name}}
			testkit.Must(t, k8s.Delete(ctx, rec))
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(rec), rec); !apierrors.IsNotFound(err) {
				t.Fatalf("DNSRecord %s still exists after its DELETE (finalizers %v): %v", name, rec.Finalizers, err)
			}
		}
		// Someone writes the deleted record's set before an operator runs
		// again: theirs now, and it stays.
		cl, err := dnsclient.New(c.Nodes[0].DNSAddr(), ptr.To(c.key("transfer")), dnsclient.Options{Timeout: 5 * time.Second})
		testkit.Must(t, err)
		defer func() { _ = cl.Close() }()
		testkit.Must(t, cl.Update(ctx, "open.test", dnsclient.Change{Op: dnsclient.Upsert,
			Set: dnsclient.RRSet{Name: "changed.open.test.", Type: dns.TypeA, TTL: 60, Values: []string{"198.18.0.7"}}}))
	})

	for _, zone := range []string{"guarded", "open"} {
		c.waitAll("the record deleted while no operator ran", 20*time.Second, "gone."+zone+".test", dns.TypeA)
		c.waitAll("the record that still exists", 5*time.Second, "kept."+zone+".test", dns.TypeA, "192.0.2.2")
		c.g.Eventually(func(g Gomega) {
			stored, err := c.Nodes[0].Agent().StoredOwners(ctx, agent.ZoneRef{Zone: zone + ".test"}, validate.Replies)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(slices.ContainsFunc(stored.Sets, func(s agent.OwnedSet) bool { return s.Name == "gone."+zone+".test" })).To(BeFalse())
		}).WithTimeout(10*time.Second).Should(Succeed(), "the agent of %s forgets the deleted record's set", zone)
	}
	c.waitAll("the set someone changed meanwhile", 5*time.Second, "changed.open.test", dns.TypeA, "198.18.0.7")
	c.waitAll("the set the deleted record's rival takes over", 10*time.Second, "shared.open.test", dns.TypeA, "192.0.2.5")
}
