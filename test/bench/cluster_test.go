package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"git.unkin.net/unkin/bind-operator/agent"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/bindcluster"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// benchCluster drives a bindcluster the way the BindZone controller does,
// without an API server, so only the data plane is measured.
type benchCluster struct {
	*bindcluster.Cluster
	b    testing.TB
	keys map[string]render.TSIGKey
}

// startCluster starts a primary and `secondaries` secondaries with the
// given spec.tuning (zero value: the operator's defaults).
func startCluster(b testing.TB, tuning v1.ReplicationTuning, secondaries int) *benchCluster {
	b.Helper()
	keys := map[string]render.TSIGKey{}
	for _, k := range []string{"transfer", "upd"} {
		keys[k] = render.TSIGKey(bindtest.NewKey(k, "hmac-sha256"))
	}
	replicas := int32(1 + secondaries)
	lc := bindcluster.Start(b, bindcluster.Options{
		Cluster: &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "bench"}, Spec: v1.BindClusterSpec{
			Mode: v1.ModeAuthoritative, Replicas: &replicas, TransferKeyRef: &v1.LocalObjectReference{Name: "transfer"}, Tuning: tuning,
		}},
		Keys: keys,
	})
	return &benchCluster{Cluster: lc, b: b, keys: keys}
}

// zone is a primary BindZone of the cluster; its update key is "upd", the
// operator's the transfer key.
func (c *benchCluster) zone(name string) *v1.BindZone {
	return &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: strings.ReplaceAll(name, ".", "-"), Namespace: "bench"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: v1.DomainName(name), Type: v1.ZonePrimary,
		UpdateKeyRef: &v1.LocalObjectReference{Name: "upd"},
	}}
}

// ensureRequest is what the BindZone controller sends the agent of n for
// zone: the rendered runtime clause (primary: with also-notify naming
// notify; secondary: transferring from [::1] keyed) and, on the primary,
// the seed.
func (c *benchCluster) ensureRequest(n *bindcluster.Node, z *v1.BindZone, notify []string) agent.EnsureZoneRequest {
	c.b.Helper()
	zc, err := render.NewZoneClauses(c.Input(n))
	testkit.Must(c.b, err)
	role := render.ZoneRoleSecondary
	if n.Primary {
		role = render.ZoneRolePrimary
	}
	clause, err := zc.Clause(z, role, notify)
	testkit.Must(c.b, err)
	req := agent.EnsureZoneRequest{Zone: string(z.Spec.ZoneName), Clause: clause}
	if n.Primary {
		req.Seed = render.SeedZone(string(z.Spec.ZoneName), &v1.SOASpec{PrimaryNameServer: "dns.bench.svc.cluster.local."}, 0)
	}
	return req
}

// addZone adds z on every node through the agents, the way the BindZone
// controller does for a zone outside catalogs. notify=false leaves
// also-notify out (and so, with `notify explicit`, every NOTIFY).
func (c *benchCluster) addZone(z *v1.BindZone, notify bool) {
	c.b.Helper()
	var targets []string
	if notify {
		for _, s := range c.Nodes[1:] {
			targets = append(targets, s.DNSAddr())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range c.Nodes {
		if _, err := n.Agent().EnsureZone(ctx, c.ensureRequest(n, z, targets)); err != nil {
			c.b.Fatalf("ensure %s: %v", z.Spec.ZoneName, err)
		}
	}
	for _, n := range c.Nodes {
		NewWithT(c.b).Eventually(func() bool { return soaServed(n.DNSAddr(), string(z.Spec.ZoneName)) }).
			WithTimeout(15*time.Second).WithPolling(10*time.Millisecond).
			Should(BeTrue(), func() string { return fmt.Sprintf("zone %s served:\n%s", z.Spec.ZoneName, bindtest.Tail(n.Log(), 30)) })
	}
}

func soaServed(addr, zone string) bool {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
	return err == nil && r.Rcode == dns.RcodeSuccess && r.Authoritative && len(r.Answer) > 0
}
