package dataplane

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers"
	"git.unkin.net/unkin/bind-operator/internal/bindtest"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/rndc"
)

// showzone is the primary's `rndc showzone <zone>` over its control channel.
func (c *cluster) showzone(zone string) string {
	c.t.Helper()
	p := c.nodes[0]
	key, err := rndc.NewKey(c.ctlKey.Name, c.ctlKey.Algorithm, c.ctlKey.Secret)
	must(c.t, err)
	rc, err := rndc.Dial(ctx, fmt.Sprintf("127.0.0.1:%d", p.ctlPort), key)
	must(c.t, err)
	defer rc.Close()
	res, err := rc.Command(ctx, "showzone "+zone)
	must(c.t, err)
	return res.Text
}

// move "reschedules" a secondary pod: its named and agent go away, and it
// comes back with the same data volume at another address: [::1] on a new
// DNS port, listening on nothing at 127.0.0.1 (the old address is dead),
// with its agent on a new address too.
func (c *cluster) move(n *node) {
	c.t.Helper()
	n.stopAgent()
	c.stopNamed(n)
	var cl v1.BindCluster
	must(c.t, k8s.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, &cl))
	port := bindtest.FreePort(c.t)
	n.mu.Lock()
	n.dnsPort, n.host = port, "::1"
	n.mu.Unlock()
	c.render(n, &cl)
	conf := filepath.Join(n.paths.ConfigDir, render.FileSecondaryConf)
	b, err := os.ReadFile(conf)
	must(c.t, err)
	old := fmt.Sprintf("listen-on port %d { 127.0.0.1; };", port)
	if !strings.Contains(string(b), old) {
		c.t.Fatalf("rendered secondary config has no %q", old)
	}
	must(c.t, os.WriteFile(conf, []byte(strings.Replace(string(b), old, fmt.Sprintf("listen-on port %d { none; };", port), 1)), 0o644))
	c.startNamed(n)
	c.startAgent(n)
}

// A secondary pod that comes back at another IP gets the primary zone's
// NOTIFYs at the new address: the Pod watch re-applies the runtime
// also-notify (modzone through the primary's agent), the primary's clause
// names the new target and no longer the old one, and a record change is
// served there through signed NOTIFY (SOA refresh is 300 s).
func TestSecondaryAddressChangeReappliesAlsoNotify(t *testing.T) {
	c := newCluster(t, 2)
	moved := c.nodes[2]
	// The Pod object the operator's watch sees (its IP is the production
	// trigger; the endpoints seam says where the test's named really is).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: moved.name, Labels: map[string]string{v1.LabelCluster: c.name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "named", Image: "bind"}}}}
	c.create(pod)
	setPodIP := func(ip string) {
		pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		must(t, k8s.Status().Update(ctx, pod))
	}
	setPodIP("198.18.0.12")

	c.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "moving"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "moving.test", Type: v1.ZonePrimary,
		Records: []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}},
	}})
	c.waitZone("moving", controllers.ReasonServed, 20*time.Second)
	c.waitAll("created", 5*time.Second, "www.moving.test", dns.TypeA, "192.0.2.1")
	oldTarget := fmt.Sprintf("127.0.0.1 port %d key \"transfer\"", moved.dnsPort)
	oldWire := fmt.Sprintf("127.0.0.1#%d", moved.dnsPort)
	if sz := c.showzone("moving.test"); !strings.Contains(sz, oldTarget) {
		t.Fatalf("before the move the primary's clause does not notify %s:\n%s", oldTarget, sz)
	}

	c.move(moved)
	newTarget := fmt.Sprintf("::1 port %d key \"transfer\"", moved.dnsPort)
	if _, ok := soaRcode(fmt.Sprintf("127.0.0.1:%d", moved.dnsPort), "moving.test"); ok {
		t.Fatal("the moved secondary still answers at 127.0.0.1")
	}
	primaryLogFrom, movedLogFrom := len(c.nodes[0].Log()), len(moved.Log())

	changed := time.Now()
	setPodIP("198.18.0.22")
	var sz string
	eventually(t, "the primary's also-notify to name "+newTarget, 10*time.Second, func() bool {
		sz = c.showzone("moving.test")
		return strings.Contains(sz, newTarget)
	})
	t.Logf("pod IP change → also-notify re-applied on the primary: %v\n%s", time.Since(changed).Round(time.Millisecond), sz)
	if strings.Contains(sz, oldTarget) {
		t.Fatalf("the re-applied clause still names the old address %s:\n%s", oldTarget, sz)
	}
	if other := fmt.Sprintf("127.0.0.1 port %d key \"transfer\"", c.nodes[1].dnsPort); !strings.Contains(sz, other) {
		t.Fatalf("the re-applied clause lost the other secondary %s:\n%s", other, sz)
	}

	// A record change reaches the moved secondary at its new address (and
	// the other one) within seconds: NOTIFY, not the 300 s refresh.
	z := c.zone("moving")
	z.Spec.Records[0].Values = []string{"192.0.2.2"}
	changed = time.Now()
	must(t, k8s.Update(ctx, z))
	eventually(t, "the moved secondary to serve the change at "+moved.dnsAddr(), 5*time.Second, func() bool {
		return slices.Equal(served(moved.dnsAddr(), "www.moving.test", dns.TypeA), []string{"192.0.2.2"})
	})
	t.Logf("record change → served on the moved secondary at %s: %v", moved.dnsAddr(), time.Since(changed).Round(time.Millisecond))
	c.waitAll("after the move", 5*time.Second, "www.moving.test", dns.TypeA, "192.0.2.2")
	if log := moved.Log()[movedLogFrom:]; !strings.Contains(log, "received notify for zone 'moving.test'") || strings.Contains(log, "refused notify") {
		t.Errorf("the moved secondary did not accept a NOTIFY for moving.test at its new address:\n%s", bindtest.Tail(log, 20))
	}
	zs := c.waitZone("moving", controllers.ReasonServed, 10*time.Second)
	for _, s := range zs.Status.Secondaries {
		if !s.InSync {
			t.Errorf("status: secondary %s not in sync: %+v", s.Pod, zs.Status.Secondaries)
		}
	}

	// Never the old one again: not in the clause, not on the wire.
	if sz := c.showzone("moving.test"); strings.Contains(sz, oldTarget) || !strings.Contains(sz, newTarget) {
		t.Fatalf("after the change the primary's clause is:\n%s", sz)
	}
	if log := c.nodes[0].Log()[primaryLogFrom:]; strings.Contains(log, oldWire) {
		t.Errorf("the primary still talked to the old address %s after the move:\n%s", oldWire, bindtest.Tail(log, 20))
	}
}
