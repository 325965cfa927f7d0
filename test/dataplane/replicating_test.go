package dataplane

import (
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestReplicatingZoneIsServedOnceItsSecondaryCatchesUp: a change that a
// secondary cannot take yet (its named is frozen, SIGSTOP) leaves the zone
// Replicating, and the zone is reported Served within seconds of the
// secondary serving the change: the bindzone-replication controller looks
// at the secondaries of a zone that starts Replicating and reports it
// Served itself (reportCaughtUp) as soon as they serve the primary's
// serial, with the serials it saw.
func TestReplicatingZoneIsServedOnceItsSecondaryCatchesUp(t *testing.T) {
	c := newCluster(t, 1)
	c.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "lagging"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "lagging.test", Type: v1.ZonePrimary,
		CatalogZoneRef: &v1.LocalObjectReference{Name: "catalog"},
		Records:        []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}},
	}})
	c.waitZone("lagging", v1.ReasonServed, 20*time.Second)

	secondary := c.Nodes[1]
	c.Freeze(secondary) // thawed on cleanup if the test stops before Thaw

	c.editZone("lagging", func(z *v1.BindZone) { z.Spec.Records[0].Values = []string{"192.0.2.2"} })
	// The reconcile asks the frozen secondary for its serial and waits out
	// the query's timeout (5 s) before it reports the zone.
	c.waitZone("lagging", v1.ReasonReplicating, 30*time.Second)
	// Long enough for the replication controller to have looked, found
	// the secondary silent and backed off.
	time.Sleep(2 * time.Second)

	c.Thaw(secondary)
	at := time.Now()
	c.waitAll("after the secondary resumed", 10*time.Second, "www.lagging.test", dns.TypeA, "192.0.2.2")
	caughtUp := time.Since(at)
	// Within 10 s: the zone's own recheck (replicatingRecheck, 15 s after
	// the reconcile that reported it Replicating) must not be what makes
	// it Served.
	z := c.waitZone("lagging", v1.ReasonServed, 10*time.Second)
	c.g.Expect(z.Status.Serial).NotTo(BeNil())
	c.g.Expect(z.Status.Secondaries).To(ConsistOf(And(
		HaveField("Pod", c.Nodes[1].Name), HaveField("Serial", Equal(z.Status.Serial)), HaveField("InSync", BeTrue()))))
	t.Logf("secondary resumed → serves the change %s, zone Served %s", caughtUp.Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
}
