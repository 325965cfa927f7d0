package dataplane

import (
	"net"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestSecondaryZoneReportsItsTransfer (issue 13 item 5): a Secondary zone
// from an external primary is Ready only once every pod serves it, and its
// status carries each pod's serial; one whose primary does not answer, or
// refuses the transfer, is not Ready and says which pods lack it, what to
// check, and what the primary answered a transfer tried from a pod.
func TestSecondaryZoneReportsItsTransfer(t *testing.T) {
	c := newCluster(t, 2)
	external := bindtest.Start(t, bindtest.Options{
		Config: `zone "partner.test" { type primary; file "partner.test.db"; allow-transfer { any; }; };
zone "closed.test" { type primary; file "closed.test.db"; allow-transfer { none; }; };`,
		Files: map[string]string{
			"partner.test.db": bindtest.SeedZone("partner.test", 2026120301),
			"closed.test.db":  bindtest.SeedZone("closed.test", 7),
		},
	})
	_, portText, err := net.SplitHostPort(external.DNSAddr)
	testkit.Must(t, err)
	port, err := strconv.ParseInt(portText, 10, 32)
	testkit.Must(t, err)
	secondary := func(name, zone string, port int32) v1.BindZone {
		return v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns}, Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: v1.DomainName(zone), Type: v1.ZoneSecondary,
			Primaries: []v1.RemoteServer{{Address: "127.0.0.1", Port: ptr.To(port)}},
		}}
	}
	good := secondary("partner", "partner.test", int32(port))
	bad := secondary("nowhere", "nowhere.test", int32(testkit.FreePort(t)))
	closed := secondary("closed", "closed.test", int32(port))
	// Secondary zones are declared in named.conf: the pods restart on it.
	c.Roll([]v1.BindZone{good, bad, closed})
	c.create(good.DeepCopy())
	c.create(bad.DeepCopy())
	c.create(closed.DeepCopy())

	z := c.waitZone("partner", v1.ReasonTransferred, 30*time.Second)
	g := NewWithT(t)
	g.Expect(z.Status.Serial).To(Equal(ptr.To[int64](2026120301)))
	g.Expect(z.Status.Secondaries).To(HaveLen(len(c.Nodes)))
	for _, s := range z.Status.Secondaries {
		g.Expect(s.InSync).To(BeTrue(), "%s", s.Pod)
		g.Expect(s.Serial).To(Equal(ptr.To[int64](2026120301)), "%s", s.Pod)
	}

	n := c.waitZone("nowhere", v1.ReasonNotTransferred, 30*time.Second)
	ready := meta.FindStatusCondition(n.Status.Conditions, v1.ConditionReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Message).To(ContainSubstring("3 of 3 pods (dns-0, dns-1, dns-2) do not serve zone nowhere.test"))
	g.Expect(ready.Message).To(ContainSubstring("check the primaries' addresses and ports"))
	g.Expect(ready.Message).To(MatchRegexp(`A transfer tried from dns-0: 127\.0\.0\.1:\d+: SOA query: .*connection refused`))
	t.Logf("Ready=False: %s", ready.Message)

	// The primary answers the SOA but refuses the transfer: named's
	// REFUSED, as the pods got it.
	cl := c.waitZone("closed", v1.ReasonNotTransferred, 30*time.Second)
	ready = meta.FindStatusCondition(cl.Status.Conditions, v1.ConditionReady)
	g.Expect(ready.Message).To(MatchRegexp(`A transfer tried from dns-0: 127\.0\.0\.1:\d+: AXFR: dns transfer of zone closed\.test\.: REFUSED\.$`))
	t.Logf("Ready=False: %s", ready.Message)
}
