package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestZSKRollsWhileAnswersValidate (issue 13 item 3): a BindDNSSECPolicy
// with a six-minute ZSK (short TTLs, margins and signature validity, which
// named-checkconf admits at admission) rolls the ZSK on the real node. The
// KSK does not roll, so the DS in the BindZone's status stays the one trust
// anchor; delv validates the answer of the primary and of a secondary every
// few seconds until both sign with the new ZSK.
func TestZSKRollsWhileAnswersValidate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-rollover")
	// Storage: the keys live in the primary's data volume. On an emptyDir
	// a restart of the primary (a new cluster rolls once while its keys
	// and catalogs arrive) depends on the keys Secret's restore, which
	// TestSignedZoneKeysOutliveThePrimaryVolume proves; here the DS read
	// before the roll must stay the one anchor.
	a := authoritative{Namespace: ns, Name: "signer", Replicas: 2, Catalog: "catalog.signer.internal", Storage: true}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	testkit.Must(t, env.Client.Create(ctx, &v1.BindDNSSECPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fast"},
		Spec: v1.BindDNSSECPolicySpec{
			Keys: []v1.DNSSECKey{
				{Role: "KSK", Algorithm: "ecdsap256sha256", Lifetime: v1.DNSSECLifetimeUnlimited},
				{Role: "ZSK", Algorithm: "ecdsap256sha256", Lifetime: "PT6M"},
			},
			DNSKEYTTL: "10", MaxZoneTTL: "60", PublishSafety: "5", RetireSafety: "5", ZonePropagationDelay: "5",
			SignaturesRefresh: "PT2M", SignaturesValidity: "PT3M", SignaturesValidityDNSKEY: "PT3M", SignaturesJitter: "PT1M",
		},
	}))
	const zone = "roll.e2e.example"
	z := a.catalogZone("roll", zone, "", v1.RecordSet{Name: "www", Type: "A", Values: []string{"192.0.2.40"}})
	z.Spec.DNSSECPolicyRef = &v1.LocalObjectReference{Name: "fast"}
	z.Spec.DefaultTTL = ptr.To[v1.TTL](60)
	testkit.Must(t, env.Client.Create(ctx, z))
	ips := a.servedByAll(ctx, t, zone)

	// The DS in status, read again until it validates both pods' answers:
	// the cluster may still be settling. From then on it is fixed.
	name := "www." + zone
	ds := validatingDS(ctx, t, z, ips, name, nil)
	first := map[string]uint16{}
	for _, ip := range ips {
		NewWithT(t).Eventually(func() (uint16, error) {
			tag, err := signingTag(ip, name)
			first[ip] = tag
			return tag, err
		}).WithContext(ctx).Should(Not(BeZero()))
	}
	t.Logf("signed by ZSK %d; KSK DS %v", first[ips[0]], ds)

	anchors := writeAnchors(t, zone, ds)
	start := time.Now()
	checks := 0
	for {
		rolled := true
		for _, ip := range ips {
			// A check fails only when a second try a second later fails
			// too: a single lost UDP answer is not an invalid one.
			if _, err := delvOnce(ctx, anchors, zone, ip, name); err != nil {
				time.Sleep(time.Second)
				if out, err := delvOnce(ctx, anchors, zone, ip, name); err != nil {
					t.Fatalf("after %s (%d checks) %s's answer does not validate: %v\n%s", time.Since(start).Round(time.Second), checks, ip, err, out)
				}
			}
			checks++
			tag, err := signingTag(ip, name)
			if err != nil || tag == first[ips[0]] {
				rolled = false
			}
		}
		if rolled {
			break
		}
		if ctx.Err() != nil || time.Since(start) > 10*time.Minute {
			t.Fatalf("the ZSK did not roll within %s", time.Since(start).Round(time.Second))
		}
		time.Sleep(3 * time.Second)
	}
	tag, _ := signingTag(ips[1], name)
	t.Logf("the ZSK rolled from %d to %d on the primary and the secondary %s after the zone was signed; all %d delv checks fully validated", first[ips[0]], tag, time.Since(start).Round(time.Second), checks)
}

// validatingDS waits until status.dnssec.ds of z validates name on every
// pod (delv anchored on it alone) and returns it; check, when set, must
// hold for the zone as well.
func validatingDS(ctx context.Context, t *testing.T, z *v1.BindZone, ips []string, name string, check func(Gomega, *v1.BindZone)) []string {
	t.Helper()
	zone := string(z.Spec.ZoneName)
	var ds []string
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(z), z)).To(Succeed())
		if check != nil {
			check(g, z)
		}
		g.Expect(z.Status.DNSSEC).NotTo(BeNil())
		g.Expect(z.Status.DNSSEC.DS).NotTo(BeEmpty())
		ds = z.Status.DNSSEC.DS
		anchors := writeAnchors(t, zone, ds)
		for _, ip := range ips {
			out, err := delvOnce(ctx, anchors, zone, ip, name)
			g.Expect(err).NotTo(HaveOccurred(), "delv @%s with DS %v:\n%s", ip, ds, out)
		}
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "the zone's DS validates its answers on every pod")
	return ds
}

// signingTag is the key tag of the RRSIG over name's A records.
func signingTag(server, name string) (uint16, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.SetEdns0(4096, true)
	in, err := localcluster.Exchange("tcp", server, m)
	if err != nil {
		return 0, err
	}
	for _, rr := range in.Answer {
		if sig, ok := rr.(*dns.RRSIG); ok && sig.TypeCovered == dns.TypeA {
			return sig.KeyTag, nil
		}
	}
	return 0, fmt.Errorf("no RRSIG over %s A in %v", name, in.Answer)
}

// delvOnce runs delv once against server (a pod address of the local
// cluster) with the anchors file; an answer that is not fully validated is
// an error.
func delvOnce(ctx context.Context, anchors, zone, server, name string) (string, error) {
	if a, err := netip.ParseAddr(server); err != nil || !localcluster.PodCIDR.Contains(a) {
		return "", fmt.Errorf("delv: %q is not a pod address of the local cluster (docs/testing.md, network rules)", server)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "delv", "-a", anchors, "+root="+zone, "@"+server, name, "A").CombinedOutput()
	if err == nil && !strings.Contains(string(out), "; fully validated") {
		err = fmt.Errorf("not fully validated")
	}
	return string(out), err
}
