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
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestSamples applies config/samples with kubectl, as the README tells a
// user to, and checks what a user would: every BIND pod of both sample
// clusters becomes ready; every pod of the authoritative cluster and its
// query Service (through kube-proxy) serve the catalog zone (the
// secondaries through a keyed transfer from the primary Service) and the
// sample zone with its records and the sample DNSRecord; the resolver
// forwards example.com to the authoritative cluster and validates it for a
// client in its ACL, and refuses recursion to one outside; the views, ACL, DNSSEC policy and RPZ policy
// report their use and Ready; and a broken object applied with kubectl is
// refused with the webhook's message.
func TestSamples(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "samples")
	t.Cleanup(func() { dumpOnFailure(t, ns, "authoritative", 3) })

	start := time.Now()
	applied, err := env.ApplySamples(ctx, ns)
	testkit.Must(t, err)
	t.Logf("kubectl apply -k config/samples -n %s:\n  %s", ns, strings.Join(applied, "\n  "))
	cluster := waitClusterReady(ctx, t, ns, "authoritative", 3)
	waitClusterReady(ctx, t, ns, "resolver", 2)
	t.Logf("both sample BindClusters Ready %s after the apply", time.Since(start).Round(time.Millisecond))

	var primarySvc corev1.Service
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "authoritative-primary"}, &primarySvc))
	g.Expect(cluster.Status.PrimaryAddress).To(Equal(primarySvc.Spec.ClusterIP), "status.primaryAddress is the primary Service's ClusterIP")

	// The catalog zone is config-level: the primary loads it from its seed,
	// each secondary transfers it, keyed, from the primary Service.
	servers := map[string]string{}
	for i, ip := range podIPs(ctx, t, ns, "authoritative", 3) {
		servers[fmt.Sprintf("authoritative-%d", i)] = ip
	}
	queryIP, err := env.Cluster.ServiceIP(ctx, ns, "authoritative")
	testkit.Must(t, err)
	servers["query Service"] = queryIP
	for name, ip := range servers {
		waitSOA(ctx, t, ip, "catalog.example.internal.", name)
	}
	// The primary zone example.com is created through the primary's agent
	// (its in-zone MNAME ns1 loads with the glue from spec.records), reaches
	// the secondaries as a catalog member, and serves its inline records and
	// the sample DNSRecord everywhere.
	for name, ip := range servers {
		waitSOA(ctx, t, ip, "example.com.", name)
		waitA(ctx, t, ip, "mail.example.com.", "192.0.2.25", name)
		waitA(ctx, t, ip, "api.example.com.", "192.0.2.80", name)
	}

	// DNSSEC: the DS records the BindZone publishes in its status are all
	// a validator needs. delv, with them as its only trust anchor, fully
	// validates the primary's and a secondary's answers.
	// The DS is read again until it validates both pods: a new cluster
	// may still restart its primary while it settles (TestZSKRollsWhileAnswersValidate).
	var ds []string
	outs := map[string]string{}
	g.Eventually(func(g Gomega) {
		var z v1.BindZone
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "example-com"}, &z)).To(Succeed())
		g.Expect(z.Status.DNSSEC).NotTo(BeNil())
		g.Expect(z.Status.DNSSEC.DS).NotTo(BeEmpty())
		ds = z.Status.DNSSEC.DS
		anchors := writeAnchors(t, "example.com", ds)
		for _, pod := range []string{"authoritative-0", "authoritative-1"} {
			out, err := delvOnce(ctx, anchors, "example.com", servers[pod], "mail.example.com")
			g.Expect(err).NotTo(HaveOccurred(), "delv @%s (%s) with DS %v:\n%s", servers[pod], pod, ds, out)
			outs[pod] = out
		}
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "BindZone example-com publishes a DS that validates its answers on the primary and a secondary")
	for _, pod := range []string{"authoritative-0", "authoritative-1"} {
		t.Logf("delv @%s (%s) with status.dnssec.ds %v as trust anchor:\n%s", servers[pod], pod, ds, outs[pod])
	}

	// The resolver's query Service, through kube-proxy. This host
	// (198.18.0.1) is in the sample ACL: the internal view, recursion on,
	// example.com forwarded to the authoritative cluster's query Service
	// (clusterRef) and validated with the zone's DS as trust anchor, so the
	// answer carries AD. A client outside the ACL gets the external view,
	// recursion off: REFUSED.
	resolverIP, err := env.Cluster.ServiceIP(ctx, ns, "resolver")
	testkit.Must(t, err)
	ask := func(src netip.Addr, name string, qtype uint16) (*dns.Msg, error) {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		m.SetEdns0(1232, true)
		return localcluster.ExchangeFrom(src, "udp", resolverIP, m)
	}
	g.Eventually(func() error {
		in, err := ask(netip.Addr{}, "mail.example.com.", dns.TypeA)
		if err != nil {
			return err
		}
		if in.Rcode != dns.RcodeSuccess || !in.AuthenticatedData {
			return fmt.Errorf("rcode %s, ad=%v, answer %v", dns.RcodeToString[in.Rcode], in.AuthenticatedData, in.Answer)
		}
		for _, rr := range in.Answer {
			if a, ok := rr.(*dns.A); ok && a.A.String() == "192.0.2.25" {
				t.Logf("resolver query Service %s, from the node: %s (ad: validated)", resolverIP, a)
				return nil
			}
		}
		return fmt.Errorf("answer %v lacks 192.0.2.25", in.Answer)
	}).WithContext(ctx).WithTimeout(4*time.Minute).Should(Succeed(), "the resolver forwards example.com to the authoritative cluster and validates it")
	in, err := ask(localcluster.OutsiderIP, "mail.example.com.", dns.TypeA)
	testkit.Must(t, err)
	g.Expect(dns.RcodeToString[in.Rcode]).To(Equal("REFUSED"), "a client outside the ACL may not recurse: %v", in)
	t.Logf("from %s (outside the ACL): %s", localcluster.OutsiderIP, dns.RcodeToString[in.Rcode])
	// The sample firewall (internal view) rewrites for the node.
	for name, want := range map[string]string{"malware.example.net": "NXDOMAIN", "intranet.example.org": "NOERROR CNAME www.example.com. A 192.0.2.1"} {
		g.Eventually(func() (string, error) {
			return answer(resolverIP, netip.Addr{}, name)
		}).WithContext(ctx).Should(HavePrefix(want), "the sample BindPolicy rewrites %s", name)
		t.Logf("RPZ from the node: %s → %s…", name, want)
	}

	t.Logf("every pod and the query Service serve the samples %s after the apply", time.Since(start).Round(time.Millisecond))
	if time.Since(start) > time.Minute {
		t.Logf("serving took more than a minute; the cluster and the operator:")
		dumpCluster(t, ns, "authoritative", 3)
		t.Logf("operator logs (tails):\n%s", env.OperatorLogTails(ctx, 20000))
	}

	// The kinds that are configuration say who uses them and whether the
	// clusters run them (printer columns Zones, Users, Rules).
	readyReason := func(cs []metav1.Condition) string {
		if c := meta.FindStatusCondition(cs, v1.ConditionReady); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return "none"
	}
	g.Eventually(func(g Gomega) {
		var views v1.BindViewList
		g.Expect(env.Client.List(ctx, &views, client.InNamespace(ns))).To(Succeed())
		g.Expect(views.Items).To(HaveLen(2))
		for _, v := range views.Items {
			g.Expect(readyReason(v.Status.Conditions)).To(Equal("True/"+v1.ReasonInRunningConfig), "BindView %s", v.Name)
		}
		var acl v1.BindACL
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "internal-networks"}, &acl)).To(Succeed())
		g.Expect(acl.Status.Users).To(BeNumerically(">=", 1))
		g.Expect(readyReason(acl.Status.Conditions)).To(Equal("True/" + v1.ReasonInRunningConfig))
		var dnssec v1.BindDNSSECPolicy
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "standard"}, &dnssec)).To(Succeed())
		g.Expect(dnssec.Status.ZoneCount).To(BeEquivalentTo(1))
		g.Expect(readyReason(dnssec.Status.Conditions)).To(Equal("True/" + v1.ReasonInRunningConfig))
		var policy v1.BindPolicy
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "firewall"}, &policy)).To(Succeed())
		g.Expect(policy.Status.RuleCount).To(BeEquivalentTo(4))
		g.Expect(readyReason(policy.Status.Conditions)).To(Equal("True/"+v1.ReasonPolicyLoaded), "the rules reach every resolver pod through its agent")
	}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "the status of the sample views, ACL, DNSSEC policy and RPZ policy")

	// A broken object is refused by the webhook, through a real kubectl.
	out, err := env.Kubectl(ctx, `apiVersion: bind.unkin.net/v1alpha1
kind: BindCluster
metadata: {name: sneaky, namespace: `+ns+`}
spec:
  extraOptions: ['also-notify { 198.18.0.42; };']
`, "apply", "-f", "-")
	g.Expect(err).To(HaveOccurred(), "kubectl apply of a pod-IP option should be refused:\n%s", out)
	g.Expect(out).To(ContainSubstring("spec.extraOptions[0]"), "the refusal names the field")
	t.Logf("kubectl refused the broken object:\n%s", out)
}
