package dataplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// showzone is the primary's `rndc showzone <zone>` over its control channel.
func (c *cluster) showzone(zone string) string {
	c.t.Helper()
	rc, err := c.Rndc(ctx, c.Nodes[0])
	testkit.Must(c.t, err)
	defer rc.Close()
	res, err := rc.Command(ctx, "showzone "+zone)
	testkit.Must(c.t, err)
	return res.Text
}

// A secondary pod that comes back at another IP gets the primary zone's
// NOTIFYs at the new address: the Pod watch re-applies the runtime
// also-notify (modzone through the primary's agent), the primary's clause
// names the new target and no longer the old one, and a record change is
// served there through signed NOTIFY (SOA refresh is 300 s).
func TestSecondaryAddressChangeReappliesAlsoNotify(t *testing.T) {
	c := newCluster(t, 2)
	moved := c.Nodes[2]
	// The Pod object the operator's watch sees (its IP is the production
	// trigger; the endpoints seam says where the test's named really is).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: moved.Name, Labels: map[string]string{v1.LabelCluster: c.name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "named", Image: "bind"}}}}
	c.create(pod)
	setPodIP := func(ip string) {
		pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		testkit.Must(t, k8s.Status().Update(ctx, pod))
	}
	setPodIP("198.18.0.12")

	c.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "moving"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "moving.test", Type: v1.ZonePrimary,
		Records: []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}},
	}})
	c.waitZone("moving", v1.ReasonServed, 20*time.Second)
	c.waitAll("created", 5*time.Second, "www.moving.test", dns.TypeA, "192.0.2.1")
	oldTarget := fmt.Sprintf("127.0.0.1 port %d key \"transfer\"", moved.DNSPort())
	oldWire := fmt.Sprintf("127.0.0.1#%d", moved.DNSPort())
	if sz := c.showzone("moving.test"); !strings.Contains(sz, oldTarget) {
		t.Fatalf("before the move the primary's clause does not notify %s:\n%s", oldTarget, sz)
	}

	c.Move(moved)
	newTarget := fmt.Sprintf("::1 port %d key \"transfer\"", moved.DNSPort())
	if _, ok := soaRcode(fmt.Sprintf("127.0.0.1:%d", moved.DNSPort()), "moving.test"); ok {
		t.Fatal("the moved secondary still answers at 127.0.0.1")
	}
	primaryLogFrom, movedLogFrom := len(c.Nodes[0].Log()), len(moved.Log())

	changed := time.Now()
	setPodIP("198.18.0.22")
	var sz string
	c.g.Eventually(func() string {
		sz = c.showzone("moving.test")
		return sz
	}).WithTimeout(10*time.Second).Should(ContainSubstring(newTarget), "the primary's also-notify to name "+newTarget)
	t.Logf("pod IP change → also-notify re-applied on the primary: %v\n%s", time.Since(changed).Round(time.Millisecond), sz)
	if strings.Contains(sz, oldTarget) {
		t.Fatalf("the re-applied clause still names the old address %s:\n%s", oldTarget, sz)
	}
	if other := fmt.Sprintf("127.0.0.1 port %d key \"transfer\"", c.Nodes[1].DNSPort()); !strings.Contains(sz, other) {
		t.Fatalf("the re-applied clause lost the other secondary %s:\n%s", other, sz)
	}

	// A record change reaches the moved secondary at its new address (and
	// the other one) within seconds: NOTIFY, not the 300 s refresh.
	changed = time.Now()
	c.editZone("moving", func(z *v1.BindZone) { z.Spec.Records[0].Values = []string{"192.0.2.2"} })
	c.g.Eventually(func() []string { return served(moved.DNSAddr(), "www.moving.test", dns.TypeA) }).WithTimeout(5*time.Second).
		Should(Equal([]string{"192.0.2.2"}), "the moved secondary to serve the change at "+moved.DNSAddr())
	t.Logf("record change → served on the moved secondary at %s: %v", moved.DNSAddr(), time.Since(changed).Round(time.Millisecond))
	c.waitAll("after the move", 5*time.Second, "www.moving.test", dns.TypeA, "192.0.2.2")
	if log := moved.Log()[movedLogFrom:]; !strings.Contains(log, "received notify for zone 'moving.test'") || strings.Contains(log, "refused notify") {
		t.Errorf("the moved secondary did not accept a NOTIFY for moving.test at its new address:\n%s", bindtest.Tail(log, 20))
	}
	zs := c.waitZone("moving", v1.ReasonServed, 10*time.Second)
	for _, s := range zs.Status.Secondaries {
		if !s.InSync {
			t.Errorf("status: secondary %s not in sync: %+v", s.Pod, zs.Status.Secondaries)
		}
	}

	// Never the old one again: not in the clause, not on the wire.
	if sz := c.showzone("moving.test"); strings.Contains(sz, oldTarget) || !strings.Contains(sz, newTarget) {
		t.Fatalf("after the change the primary's clause is:\n%s", sz)
	}
	if log := c.Nodes[0].Log()[primaryLogFrom:]; strings.Contains(log, oldWire) {
		t.Errorf("the primary still talked to the old address %s after the move:\n%s", oldWire, bindtest.Tail(log, 20))
	}
}
