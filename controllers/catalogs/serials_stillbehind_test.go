package catalogs

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// fixedPods are a cluster's pods at fixed addresses.
type fixedPods []clusterpods.PodEndpoint

func (f fixedPods) Pods(context.Context, *bindv1alpha1.BindCluster) ([]clusterpods.PodEndpoint, error) {
	return f, nil
}

func (f fixedPods) Transfer(context.Context, *bindv1alpha1.BindCluster) (string, int32, error) {
	return "", 0, nil
}

// TestCatalogSerialRaisedOnlyWhenThePrimaryIsStillBehind: the same for a
// catalog, whose status reads the primary's serial from a transfer of the
// whole catalog, long before the secondaries'. A secondary that caught up
// meanwhile leaves the serial alone.
func TestCatalogSerialRaisedOnlyWhenThePrimaryIsStillBehind(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const zoneName = "catalog.test."
	upd := bindtest.NewKey("upd", "hmac-sha256")
	start := func(serial uint32) *bindtest.Server {
		return bindtest.Start(t, bindtest.Options{
			Keys:   []bindtest.Key{upd},
			Files:  map[string]string{"catalog.db": bindtest.SeedZone(zoneName, serial)},
			Config: `zone "catalog.test" { type primary; file "catalog.db"; allow-update { key "upd"; }; };`,
		})
	}
	// The secondary's served serial is all the look reads of it: a
	// second named serves the catalog at the serial it transferred.
	primary, secondary := start(10), start(10)
	key, err := dnsclient.NewKey(upd.Name, upd.Algorithm, upd.Secret)
	g.Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	g.Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	// A member being added: the primary's catalog does not list it yet.
	member := &bindv1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "member"},
		Spec: bindv1alpha1.BindZoneSpec{ZoneName: "member.test", CatalogZoneRef: &bindv1alpha1.LocalObjectReference{Name: "catalog"}}}
	r := &BindCatalogZoneReconciler{
		Client:    fake.NewClientBuilder().WithScheme(scheme).WithObjects(member).Build(),
		Endpoints: fixedPods{{Pod: "dns-0", Primary: true, DNSAddr: primary.DNSAddr}, {Pod: "dns-1", DNSAddr: secondary.DNSAddr}},
	}
	cat := &bindv1alpha1.BindCatalogZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "catalog"},
		Spec: bindv1alpha1.BindCatalogZoneSpec{ZoneName: zoneName}}
	srv := clusterpods.ZoneServer{Addr: primary.DNSAddr, Key: key}
	serving := func() uint32 {
		s, err := clusterpods.SOASerial(ctx, primary.DNSAddr, nil, zoneName)
		g.Expect(err).NotTo(HaveOccurred())
		return s
	}

	// Transferred at 8 without the member being added; the secondary
	// then took 10, which the primary serves by now. Not behind, so not a
	// primary rebuilding its catalog that lacks a member. (A second read
	// that failed would leave the serial alone too: the case below is the
	// one that shows it reads the right server.)
	g.Expect(r.catchUpSerial(ctx, cat, &bindv1alpha1.BindCluster{}, srv, 8, nil)).To(Succeed())
	g.Expect(serving()).To(Equal(uint32(10)), "a secondary that caught up with the primary between the two reads")

	// The secondary serves 20 while the primary serves 10: it lost its
	// data. Raised past it once its catalog lists every member.
	_, _, err = clusterpods.RaiseSerial(ctx, clusterpods.ZoneServer{Addr: secondary.DNSAddr, Key: key}, zoneName, 19)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.catchUpSerial(ctx, cat, &bindv1alpha1.BindCluster{}, srv, 10, nil)).To(MatchError(ContainSubstring("lacks 1 member(s) (first member.test)")))
	g.Expect(serving()).To(Equal(uint32(10)))
	g.Expect(r.catchUpSerial(ctx, cat, &bindv1alpha1.BindCluster{}, srv, 10, []string{"member.test"})).To(Succeed())
	g.Expect(serving()).To(Equal(uint32(21)))
}
