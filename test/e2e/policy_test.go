package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// policyEnv is a resolver that forwards policy.e2e.example to an
// authoritative cluster serving real answers for every name the rules
// rewrite, so each rewrite is told apart from a failure to resolve (an
// RPZ QNAME rule waits for recursion unless qname-wait-recurse is off:
// docs/bind-facts.md).
type policyEnv struct {
	ns         string
	resolverIP string
}

const (
	policyZone = "policy.e2e.example"
	policyFeed = "feed.rpz.e2e.example"
)

func newPolicyEnv(ctx context.Context, t *testing.T, replicas int32, rules ...v1.RPZRule) *policyEnv {
	t.Helper()
	ns := newNamespace(ctx, t, "e2e-policy")
	a := authoritative{Namespace: ns, Name: "upstream", Replicas: 1, Catalog: "catalog.upstream.internal"}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, "resolver", replicas) })
	a1 := func(name, ip string) v1.RecordSet {
		return v1.RecordSet{Name: v1.RecordName(name), Type: "A", Values: []string{ip}}
	}
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("target", policyZone, "",
		a1("blocked", "192.0.2.1"), a1("nodata", "192.0.2.2"), a1("redirected", "192.0.2.3"),
		a1("portal", "192.0.2.100"), a1("allowed", "192.0.2.4"), a1("x.wild", "192.0.2.5"), a1("ok.wild", "192.0.2.6"),
		a1("fed", "192.0.2.7"),
	)))
	// An RPZ feed the upstream serves like any zone: its one rule redirects
	// fed.<zone> to the portal. The resolver's pods transfer it.
	feed := a.catalogZone("feed", policyFeed, "", v1.RecordSet{Name: v1.RecordName("fed." + policyZone), Type: "CNAME", Values: []string{"portal." + policyZone + "."}})
	feed.Spec.AllowTransfer = []v1.AddressMatchElement{{Address: localcluster.PodCIDR.String()}}
	testkit.Must(t, env.Client.Create(ctx, feed))
	var upstreamIP string
	NewWithT(t).Eventually(func() (err error) {
		upstreamIP, err = env.Cluster.ServiceIP(ctx, ns, a.Name)
		return err
	}).WithContext(ctx).Should(Succeed(), "the upstream's query Service has an address")
	clients := []v1.AddressMatchElement{{Address: localcluster.NodeIP.String()}, {Address: localcluster.OutsiderIP.String()}}
	testkit.Must(t, env.Client.Create(ctx, &v1.BindCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "resolver"},
		Spec: v1.BindClusterSpec{
			Mode: v1.ModeResolver, Replicas: ptr.To(replicas), Storage: &v1.StorageSpec{Enabled: ptr.To(false)},
			Recursion: &v1.RecursionSpec{AllowRecursion: clients},
		},
	}))
	testkit.Must(t, env.Client.Create(ctx, &v1.BindZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "target-forward"},
		Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: "resolver"}, ZoneName: policyZone, Type: v1.ZoneForward,
			Forwarders: []v1.Forwarder{{ClusterRef: &v1.LocalObjectReference{Name: a.Name}}},
		},
	}))
	testkit.Must(t, env.Client.Create(ctx, &v1.BindPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "firewall"},
		Spec:       v1.BindPolicySpec{ClusterRef: v1.LocalObjectReference{Name: "resolver"}, ZoneName: "rpz.e2e.internal", Rules: rules},
	}))
	testkit.Must(t, env.Client.Create(ctx, &v1.BindPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "feed"},
		Spec: v1.BindPolicySpec{ClusterRef: v1.LocalObjectReference{Name: "resolver"}, ZoneName: policyFeed, Order: ptr.To[int32](200),
			Primaries: []v1.RemoteServer{{Address: upstreamIP}}},
	}))
	ips := a.servedByAll(ctx, t, policyZone, policyFeed)
	// The records come by UPDATE after the zone is served: a resolver that
	// asked before them would cache the NXDOMAIN for the SOA minimum (60 s),
	// as long as the tests wait for a rewrite.
	waitA(ctx, t, ips[0], "allowed."+policyZone, "192.0.2.4", a.Name+"-0")
	waitClusterReady(ctx, t, ns, "resolver", replicas)
	ip, err := env.Cluster.ServiceIP(ctx, ns, "resolver")
	testkit.Must(t, err)
	return &policyEnv{ns: ns, resolverIP: ip}
}

// answer is what a resolver said, compactly: "NXDOMAIN", "NOERROR" (no
// records), or the rcode and the records ("NOERROR CNAME portal... A 192.0.2.100").
func answer(server string, src netip.Addr, name string) (string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	in, err := localcluster.ExchangeFrom(src, "udp", server, m)
	if err != nil {
		return "", err
	}
	parts := []string{dns.RcodeToString[in.Rcode]}
	for _, rr := range in.Answer {
		switch r := rr.(type) {
		case *dns.A:
			parts = append(parts, "A "+r.A.String())
		case *dns.CNAME:
			parts = append(parts, "CNAME "+r.Target)
		}
	}
	return strings.Join(parts, " "), nil
}

// TestPolicyRewrites (issue 13 item 2): a BindPolicy's rules rewrite a
// resolver's answers as RPZ defines them, asked through the resolver's
// query Service from the node and from a second client address, and so
// does a feed (a policy whose pods transfer the zone from primaries). Then
// the rules are edited: every pod enforces the new ones without a roll.
func TestPolicyRewrites(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	e := newPolicyEnv(ctx, t, 2,
		v1.RPZRule{Match: "blocked." + policyZone, Action: v1.ActionNXDOMAIN},
		v1.RPZRule{Match: "nodata." + policyZone, Action: v1.ActionNODATA},
		v1.RPZRule{Match: "redirected." + policyZone, Action: v1.ActionRedirect, RedirectTo: "portal." + policyZone},
		v1.RPZRule{Match: "*.wild." + policyZone, Action: v1.ActionNXDOMAIN},
		v1.RPZRule{Match: "ok.wild." + policyZone, Action: v1.ActionPassthru},
		v1.RPZRule{Match: localcluster.OutsiderIP.String(), Trigger: v1.TriggerClientIP, Action: v1.ActionNXDOMAIN},
	)
	node, outsider := netip.Addr{}, localcluster.OutsiderIP
	for _, tc := range []struct {
		from       netip.Addr
		name, want string
	}{
		{node, "allowed", "NOERROR A 192.0.2.4"},
		{node, "blocked", "NXDOMAIN"},
		{node, "nodata", "NOERROR"},
		{node, "redirected", "NOERROR CNAME portal." + policyZone + ". A 192.0.2.100"},
		{node, "x.wild", "NXDOMAIN"},
		{node, "ok.wild", "NOERROR A 192.0.2.6"},
		{node, "fed", "NOERROR CNAME portal." + policyZone + ". A 192.0.2.100"},
		{outsider, "allowed", "NXDOMAIN"},
	} {
		who := "the node"
		if tc.from == outsider {
			who = outsider.String()
		}
		name := tc.name + "." + policyZone
		NewWithT(t).Eventually(func() (string, error) {
			return answer(e.resolverIP, tc.from, name)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(tc.want), "%s asks %s", who, name)
		t.Logf("from %s: %s A → %s", who, name, tc.want)
	}

	// Edit: blocked becomes NODATA, allowed becomes NXDOMAIN, the client-IP
	// rule goes. Every pod enforces it; nothing rolls.
	before, _, err := currentRollout(ctx, e.ns, "resolver")
	testkit.Must(t, err)
	uids := podUIDs(ctx, t, e.ns, "resolver", 2)
	var p v1.BindPolicy
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "firewall"}, &p))
	p.Spec.Rules[0].Action = v1.ActionNODATA
	p.Spec.Rules[len(p.Spec.Rules)-1] = v1.RPZRule{Match: "allowed." + policyZone, Action: v1.ActionNXDOMAIN}
	edited := time.Now()
	testkit.Must(t, env.Client.Update(ctx, &p))
	want := map[string]string{"blocked": "NOERROR", "allowed": "NXDOMAIN", "nodata": "NOERROR"}
	for i, ip := range podIPs(ctx, t, e.ns, "resolver", 2) {
		for name, w := range want {
			NewWithT(t).Eventually(func() (string, error) {
				return answer(ip, localcluster.OutsiderIP, name+"."+policyZone)
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(10*time.Millisecond).Should(Equal(w), "resolver-%d asks %s after the edit", i, name)
		}
	}
	t.Logf("the edited rules are enforced by both resolver pods %s after the update", time.Since(edited).Round(time.Millisecond))
	after, _, err := currentRollout(ctx, e.ns, "resolver")
	testkit.Must(t, err)
	NewWithT(t).Expect(after).To(Equal(before), "a rule edit must not roll the resolver")
	NewWithT(t).Expect(podUIDs(ctx, t, e.ns, "resolver", 2)).To(Equal(uids), "no pod was replaced")
	for _, name := range []string{"firewall", "feed"} {
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &p)).To(Succeed())
			c := meta.FindStatusCondition(p.Status.Conditions, v1.ConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(v1.ReasonPolicyLoaded), c.Message)
		}).WithContext(ctx).Should(Succeed(), "BindPolicy %s is Loaded on every pod", name)
	}
}

// podUIDs are the UIDs of a cluster's pods, in ordinal order.
func podUIDs(ctx context.Context, t *testing.T, ns, cluster string, replicas int32) []string {
	t.Helper()
	out := make([]string, replicas)
	for i := range replicas {
		var pod corev1.Pod
		testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("%s-%d", cluster, i)}, &pod))
		out[i] = string(pod.UID)
	}
	return out
}
