package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestViewsServeTheirOwnData (issue 13 item 1): the same zone in two views
// of one cluster, each with its own records. Clients matching each view get
// that view's answers from the primary and from every secondary, so the
// operator's UPDATEs, the secondaries' transfers and the primary's NOTIFYs
// all reached the zone's own view: they are signed with the view's key,
// which the view's match-clients admits first, whatever pod address they
// come from. A DNSRecord lands only in its zone's view, and so does a
// client's UPDATE signed with the inside zone's update key, sent from an
// address that matches the other view, through the query Service (so
// possibly forwarded by a secondary).
func TestViewsServeTheirOwnData(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-views")
	const (
		cluster  = "split"
		replicas = 3
		zone     = "views.e2e.example"
	)
	t.Cleanup(func() { dumpOnFailure(t, ns, cluster, replicas) })
	inside, outside := localcluster.NodeIP, localcluster.OutsiderIP

	testkit.Must(t, env.Client.Create(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inside-updates"}}))
	testkit.Must(t, env.Client.Create(ctx, &v1.BindCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster},
		Spec:       v1.BindClusterSpec{Mode: v1.ModeAuthoritative, Replicas: ptr.To[int32](replicas), Storage: &v1.StorageSpec{Enabled: ptr.To(false)}},
	}))
	for _, v := range []v1.BindView{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inside"}, Spec: v1.BindViewSpec{
			ClusterRef: v1.LocalObjectReference{Name: cluster}, Order: ptr.To[int32](10),
			MatchClients: []v1.AddressMatchElement{{Address: inside.String() + "/32"}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "outside"}, Spec: v1.BindViewSpec{
			ClusterRef: v1.LocalObjectReference{Name: cluster}, Order: ptr.To[int32](20),
			MatchClients: []v1.AddressMatchElement{{Builtin: v1.BuiltinAny}},
		}},
	} {
		testkit.Must(t, env.Client.Create(ctx, &v))
	}
	viewZone := func(view, www string, updateKey string) *v1.BindZone {
		z := &v1.BindZone{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example-" + view},
			Spec: v1.BindZoneSpec{
				ClusterRef: v1.LocalObjectReference{Name: cluster}, ViewRef: &v1.LocalObjectReference{Name: view},
				ZoneName: zone, Type: v1.ZonePrimary,
				SOA: &v1.SOASpec{PrimaryNameServer: "ns1.example.net", ResponsiblePerson: "hostmaster.example.net"},
				Records: []v1.RecordSet{
					{Name: "@", Type: "NS", Values: []string{"ns1.example.net."}},
					{Name: "www", Type: "A", Values: []string{www}},
				},
			},
		}
		if updateKey != "" {
			z.Spec.UpdateKeyRef = &v1.LocalObjectReference{Name: updateKey}
		}
		return z
	}
	testkit.Must(t, env.Client.Create(ctx, viewZone("inside", "192.0.2.1", "inside-updates")))
	testkit.Must(t, env.Client.Create(ctx, viewZone("outside", "192.0.2.2", "")))
	record := &v1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: "example-inside"}, Name: "api", Type: "A",
			TTL: ptr.To[v1.TTL](60), Values: []string{"192.0.2.10"}},
	}
	testkit.Must(t, env.Client.Create(ctx, record))

	waitClusterReady(ctx, t, ns, cluster, replicas)
	ips := podIPs(ctx, t, ns, cluster, replicas)
	start := time.Now()
	// want: view -> name -> the A values (nil: NXDOMAIN).
	expect := func(what string, want map[netip.Addr]map[string][]string) {
		t.Helper()
		for i, ip := range ips {
			for src, names := range want {
				for name, values := range names {
					NewWithT(t).Eventually(func() error {
						m := new(dns.Msg)
						m.SetQuestion(dns.Fqdn(name+"."+zone), dns.TypeA)
						m.RecursionDesired = false
						in, err := localcluster.ExchangeFrom(src, "udp", ip, m)
						if err != nil {
							return err
						}
						got := aValues(in)
						if values == nil {
							if in.Rcode != dns.RcodeNameError {
								return fmt.Errorf("%s %v, want NXDOMAIN", dns.RcodeToString[in.Rcode], got)
							}
							return nil
						}
						if in.Rcode != dns.RcodeSuccess || !slices.Equal(got, values) {
							return fmt.Errorf("%s %v, want %v", dns.RcodeToString[in.Rcode], got, values)
						}
						return nil
					}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(),
						"%s: %s-%d asked from %s for %s", what, cluster, i, src, name)
				}
			}
		}
		t.Logf("%s: the primary and %d secondaries answer each view's own data (%s)", what, replicas-1, time.Since(start).Round(time.Millisecond))
	}
	expect("created", map[netip.Addr]map[string][]string{
		inside:  {"www": {"192.0.2.1"}, "api": {"192.0.2.10"}},
		outside: {"www": {"192.0.2.2"}, "api": nil},
	})

	// The zones report every pod in sync: the operator's serial checks
	// reached each pod's copy in the zone's view.
	for _, name := range []string{"example-inside", "example-outside"} {
		NewWithT(t).Eventually(func() error {
			var z v1.BindZone
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &z); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(z.Status.Conditions, v1.ConditionReady) {
				return fmt.Errorf("not Ready: %s", conditions(z.Status.Conditions))
			}
			if len(z.Status.Secondaries) != replicas-1 {
				return fmt.Errorf("status lists %d secondaries", len(z.Status.Secondaries))
			}
			for _, s := range z.Status.Secondaries {
				if !s.InSync {
					return fmt.Errorf("secondary %s not in sync (serial %v, zone %v)", s.Pod, ptr.Deref(s.Serial, 0), ptr.Deref(z.Status.Serial, 0))
				}
			}
			return nil
		}).WithContext(ctx).Should(Succeed(), "BindZone %s reports its secondaries", name)
	}

	// An edit of the DNSRecord reaches the inside view of every pod.
	start = time.Now()
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(record), record))
	record.Spec.Values = []string{"192.0.2.11"}
	testkit.Must(t, env.Client.Update(ctx, record))
	expect("DNSRecord edited", map[netip.Addr]map[string][]string{
		inside:  {"api": {"192.0.2.11"}},
		outside: {"api": nil},
	})

	// A client's UPDATE signed with the inside zone's update key, from
	// the address of the outside view, through the query Service.
	key := readTSIGKey(ctx, t, ns, "inside-updates")
	svc, err := env.Cluster.ServiceIP(ctx, ns, cluster)
	testkit.Must(t, err)
	start = time.Now()
	NewWithT(t).Eventually(func() error {
		m := new(dns.Msg)
		m.SetUpdate(dns.Fqdn(zone))
		rr, err := dns.NewRR("client." + zone + ". 60 IN A 192.0.2.20")
		if err != nil {
			return err
		}
		m.Insert([]dns.RR{rr})
		m.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
		in, err := localcluster.ExchangeSignedFrom(outside, "tcp", svc, m, map[string]string{key.Name: key.Secret})
		if err != nil {
			return err
		}
		if in.Rcode != dns.RcodeSuccess {
			return fmt.Errorf("UPDATE answered %s", dns.RcodeToString[in.Rcode])
		}
		return nil
	}).WithContext(ctx).Should(Succeed(), "an UPDATE signed with the inside zone's key is accepted from %s through the query Service", outside)
	expect("client UPDATE from the other view's address", map[netip.Addr]map[string][]string{
		inside:  {"client": {"192.0.2.20"}},
		outside: {"client": nil},
	})
}
