package reconcileutil

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestReplaceStatusWritesTheWholeStatus: what the new status leaves out
// is gone from the stored one (a record whose data was withdrawn must
// not keep its appliedValues: they are its claim on the zone's data), a
// spec edit made meanwhile is kept, and an unchanged status sends nothing.
func TestReplaceStatusWritesTheWholeStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	rec := &bindv1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "www"},
		Spec:       bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Name: "example"}, Name: "www", Type: "A", Values: []string{"192.0.2.1"}},
		Status:     bindv1alpha1.DNSRecordStatus{FQDN: "www.example.", LastRcode: "NOERROR", AppliedValues: []string{"192.0.2.1"}, AppliedTTL: ptr.To[int32](60)},
	}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rec).WithStatusSubresource(rec).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()

	var read bindv1alpha1.DNSRecord
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rec), &read)).To(Succeed())
	edited := read.DeepCopy()
	edited.Spec.Values = []string{"192.0.2.2"}
	g.Expect(c.Update(ctx, edited)).To(Succeed())

	withdrawn := &bindv1alpha1.DNSRecordStatus{FQDN: "www.example.", ObservedGeneration: 1}
	g.Expect(ReplaceStatus(ctx, c, &read, &read.Status, withdrawn)).To(Succeed())
	g.Expect(patches).To(Equal(1))
	var stored bindv1alpha1.DNSRecord
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rec), &stored)).To(Succeed())
	g.Expect(stored.Status).To(Equal(*withdrawn))
	g.Expect(stored.Spec.Values).To(Equal([]string{"192.0.2.2"}))

	g.Expect(ReplaceStatus(ctx, c, &stored, &stored.Status, withdrawn.DeepCopy())).To(Succeed())
	g.Expect(patches).To(Equal(1), "an unchanged status is not written")
}

// TestReplaceStatusOnlyForTheSameObject: a status computed for an object
// that was deleted and created again under the same name (another UID)
// does not land on the new one. (What the real API server answers is
// pinned in test/controllers TestStatusPatchOfARecreatedRecord.)
func TestReplaceStatusOnlyForTheSameObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	now := &bindv1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "www", UID: "second"},
		Spec:       bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Name: "example"}, Name: "www", Type: "A", Values: []string{"192.0.2.2"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(now).WithStatusSubresource(now).Build()

	read := now.DeepCopy()
	read.UID = "first"
	claim := &bindv1alpha1.DNSRecordStatus{AppliedValues: []string{"192.0.2.1"}}
	g.Expect(ReplaceStatus(ctx, c, read, &read.Status, claim)).NotTo(Succeed())
	var stored bindv1alpha1.DNSRecord
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(now), &stored)).To(Succeed())
	g.Expect(stored.Status.AppliedValues).To(BeEmpty(), "the first object's claim on the second")

	g.Expect(ReplaceStatus(ctx, c, &stored, &stored.Status, claim)).To(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(now), &stored)).To(Succeed())
	g.Expect(stored.Status.AppliedValues).To(Equal(claim.AppliedValues))
}

// TestReplaceStatusReportsAnotherObjectAsNotFound: the API server's bare
// 422 for a patch it cannot apply (here: the UID test) reaches the caller
// as NotFound, which makes the write the old record's tombstone; a status
// the schema refuses stays an error of its own.
func TestReplaceStatusReportsAnotherObjectAsNotFound(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	rec := &bindv1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "www", UID: "first"}}
	var answer error
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rec).WithStatusSubresource(rec).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return answer
		}}).Build()
	claim := &bindv1alpha1.DNSRecordStatus{AppliedValues: []string{"192.0.2.1"}}

	answer = apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "testing value /metadata/uid failed", 0, false)
	err := ReplaceStatus(ctx, c, rec, &rec.Status, claim)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)

	answer = apierrors.NewInvalid(schema.GroupKind{Group: bindv1alpha1.GroupVersion.Group, Kind: "DNSRecord"}, "www",
		field.ErrorList{field.Invalid(field.NewPath("status", "appliedValues"), "x", "must be a list")})
	err = ReplaceStatus(ctx, c, rec, &rec.Status, claim)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(apierrors.IsNotFound(err)).To(BeFalse())
}
