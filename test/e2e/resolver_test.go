package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestStubZoneResolvesThroughItsPrimaries (issue 13 item 4): a resolver's
// Stub zone takes the zone's NS records and their glue from its primaries
// (here the authoritative cluster's query Service) and then resolves names
// in it by asking those name servers, through kube-proxy. The resolver does
// not validate: the test network has no route to the root, so it could not
// prove an unsigned internal zone insecure (a Forward zone naming a
// BindCluster gets trust anchors instead: TestSamples).
func TestStubZoneResolvesThroughItsPrimaries(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-stub")
	a := authoritative{Namespace: ns, Name: "auth", Replicas: 2, Catalog: "catalog.auth.internal"}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	var authIP string
	NewWithT(t).Eventually(func() (err error) {
		authIP, err = env.Cluster.ServiceIP(ctx, ns, a.Name)
		return err
	}).WithContext(ctx).Should(Succeed(), "the authoritative query Service has an address")

	// The zone names its own server: ns1, whose glue is the query Service.
	const zone = "stub.e2e.example"
	testkit.Must(t, env.Client.Create(ctx, &v1.BindZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stub-zone"},
		Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: a.Name}, ZoneName: zone, Type: v1.ZonePrimary,
			CatalogZoneRef: &v1.LocalObjectReference{Name: a.Name + "-catalog"},
			SOA:            &v1.SOASpec{PrimaryNameServer: "ns1." + zone},
			Records: []v1.RecordSet{
				{Name: "@", Type: "NS", Values: []string{"ns1"}},
				{Name: "ns1", Type: "A", Values: []string{authIP}},
				{Name: "www", Type: "A", Values: []string{"192.0.2.77"}},
			},
		},
	}))
	testkit.Must(t, env.Client.Create(ctx, &v1.BindCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "resolver"},
		Spec: v1.BindClusterSpec{
			Mode: v1.ModeResolver, Replicas: ptr.To[int32](1), Storage: &v1.StorageSpec{Enabled: ptr.To(false)},
			Recursion: &v1.RecursionSpec{
				AllowRecursion:   []v1.AddressMatchElement{{Address: localcluster.NodeIP.String()}},
				DNSSECValidation: v1.DNSSECValidationNo,
			},
		},
	}))
	testkit.Must(t, env.Client.Create(ctx, &v1.BindZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stub"},
		Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: "resolver"}, ZoneName: zone, Type: v1.ZoneStub,
			Primaries: []v1.RemoteServer{{Address: authIP}},
		},
	}))
	a.servedByAll(ctx, t, zone)
	waitClusterReady(ctx, t, ns, "resolver", 1)
	resolverIP, err := env.Cluster.ServiceIP(ctx, ns, "resolver")
	testkit.Must(t, err)

	start := time.Now()
	ask := func() (*dns.Msg, error) {
		m := new(dns.Msg)
		m.SetQuestion("www."+zone+".", dns.TypeA)
		return localcluster.Exchange("udp", resolverIP, m)
	}
	NewWithT(t).Eventually(func() error {
		in, err := ask()
		if err != nil {
			return err
		}
		if got := aValues(in); in.Rcode != dns.RcodeSuccess || len(got) != 1 || got[0] != "192.0.2.77" {
			return fmt.Errorf("%s %v", dns.RcodeToString[in.Rcode], got)
		}
		return nil
	}).WithContext(ctx).Should(Succeed(), "the resolver answers www.%s through its Stub zone", zone)
	t.Logf("the resolver answered www.%s A 192.0.2.77 through its Stub zone (primaries %s) %s after it was Ready", zone, authIP, time.Since(start).Round(time.Millisecond))
}
