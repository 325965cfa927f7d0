package webhooks

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// A view that holds a Primary zone cannot turn to matching only recursive
// queries: the zone's transfers, NOTIFYs and UPDATEs would stop reaching it
// (the converse of the fixture bindzone-primary-in-recursive-only-view).
func TestRecursiveOnlyViewKeepsNoPrimaryZone(t *testing.T) {
	const space = "rec-only"
	testkit.Must(t, k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}}))
	in := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: space, Name: name} }
	view := &v1alpha1.BindView{ObjectMeta: in("resolvers"), Spec: v1alpha1.BindViewSpec{
		ClusterRef: ref("dns"), MatchClients: []v1alpha1.AddressMatchElement{{Builtin: "localnets"}},
		Recursion: ptr.To(true), AllowRecursion: []v1alpha1.AddressMatchElement{{Builtin: "localnets"}},
	}}
	for _, o := range []client.Object{
		&v1alpha1.BindCluster{ObjectMeta: in("dns"), Spec: v1alpha1.BindClusterSpec{Mode: v1alpha1.ModeResolver}},
		view,
		&v1alpha1.BindZone{ObjectMeta: in("internal"), Spec: v1alpha1.BindZoneSpec{
			ClusterRef: ref("dns"), ViewRef: &v1alpha1.LocalObjectReference{Name: "resolvers"}, ZoneName: "internal.example"}},
	} {
		testkit.Must(t, k8sClient.Create(ctx, o))
	}
	view.Spec.MatchRecursiveOnly = true
	// The webhook lists zones through its cache, which may lag a moment.
	NewWithT(t).Eventually(func() error {
		return k8sClient.Update(ctx, view.DeepCopy(), client.DryRunAll)
	}).WithTimeout(10 * time.Second).Should(HaveOccurred())
	err := k8sClient.Update(ctx, view)
	for _, want := range []string{"spec.matchRecursiveOnly", `the view holds Primary zone "internal"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q: %v", want, err)
		}
	}
}
