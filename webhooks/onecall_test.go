package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	. "github.com/onsi/gomega"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestDNSRecordOneCall drives the DNSRecord's single admission call as the
// API server sends it: raw JSON in, a JSON patch or a denial out.
func TestDNSRecordOneCall(t *testing.T) {
	zone := &v1alpha1.BindZone{ObjectMeta: objectMeta("example"), Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "example.com", Type: v1alpha1.ZonePrimary, DefaultTTL: ptr.To[v1alpha1.TTL](60),
	}}
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	w := testWebhooks(t, zone).record
	hook := withOneCall(scheme, func() *v1alpha1.DNSRecord { return &v1alpha1.DNSRecord{} }, w, w)

	raw := func(t *testing.T, spec v1alpha1.DNSRecordSpec, finalizers ...string) runtime.RawExtension {
		r := v1alpha1.DNSRecord{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DNSRecord"}, ObjectMeta: objectMeta("r"), Spec: spec}
		r.Finalizers = finalizers
		b, err := json.Marshal(r)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		return runtime.RawExtension{Raw: b}
	}
	request := func(op admissionv1.Operation, obj, old runtime.RawExtension) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "1", Operation: op, Namespace: "ns", Name: "r", Object: obj, OldObject: old}}
	}
	canonical := v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "www", Type: "A", TTL: ptr.To[v1alpha1.TTL](60), Values: []string{"192.0.2.1"}}

	t.Run("a canonical create gets only its finalizer", func(t *testing.T) {
		g := NewWithT(t)
		resp := hook.Handle(context.Background(), request(admissionv1.Create, raw(t, canonical), runtime.RawExtension{}))
		g.Expect(resp.Allowed).To(BeTrue())
		g.Expect(resp.Patches).To(Equal([]jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/metadata/finalizers", Value: []any{v1alpha1.DNSRecordFinalizer}}}))
	})

	t.Run("a create is canonicalised against its zone", func(t *testing.T) {
		g := NewWithT(t)
		spec := v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "WWW.example.com.", Type: "a", Values: []string{"192.0.2.1", "192.0.2.1"}}
		req := request(admissionv1.Create, raw(t, spec), runtime.RawExtension{})
		resp := hook.Handle(context.Background(), req)
		g.Expect(resp.Allowed).To(BeTrue())
		g.Expect(resp.PatchType).To(Equal(ptr.To(admissionv1.PatchTypeJSONPatch)))
		patch, err := json.Marshal(resp.Patches)
		g.Expect(err).NotTo(HaveOccurred())
		p, err := jsonpatchapply.DecodePatch(patch)
		g.Expect(err).NotTo(HaveOccurred())
		out, err := p.Apply(req.Object.Raw)
		g.Expect(err).NotTo(HaveOccurred())
		var got v1alpha1.DNSRecord
		g.Expect(json.Unmarshal(out, &got)).To(Succeed())
		g.Expect(got.Spec).To(Equal(canonical))
		g.Expect(got.Finalizers).To(Equal([]string{v1alpha1.DNSRecordFinalizer}))
	})

	t.Run("an update keeps the finalizer the controller removed", func(t *testing.T) {
		g := NewWithT(t)
		old := canonical.DeepCopy()
		old.Values = []string{"192.0.2.9"}
		resp := hook.Handle(context.Background(), request(admissionv1.Update, raw(t, canonical), raw(t, *old, v1alpha1.DNSRecordFinalizer)))
		g.Expect(resp.Allowed).To(BeTrue())
		g.Expect(resp.Patches).To(BeEmpty())
	})

	t.Run("an invalid record is denied with its field path", func(t *testing.T) {
		g := NewWithT(t)
		bad := canonical.DeepCopy()
		bad.Values = []string{"192.0.2.300"}
		resp := hook.Handle(context.Background(), request(admissionv1.Create, raw(t, *bad), runtime.RawExtension{}))
		g.Expect(resp.Allowed).To(BeFalse())
		g.Expect(resp.Patches).To(BeEmpty())
		g.Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusUnprocessableEntity))
		g.Expect(resp.Result.Reason).To(Equal(metav1.StatusReasonInvalid))
		g.Expect(resp.Result.Details.Causes).To(ConsistOf(HaveField("Field", "spec.values[0]")))
	})

	t.Run("an object it cannot decode is a bad request", func(t *testing.T) {
		resp := hook.Handle(context.Background(), request(admissionv1.Create, runtime.RawExtension{Raw: []byte(`{"spec":`)}, runtime.RawExtension{}))
		NewWithT(t).Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusBadRequest))
	})

	t.Run("a delete is allowed untouched", func(t *testing.T) {
		resp := hook.Handle(context.Background(), request(admissionv1.Delete, runtime.RawExtension{}, raw(t, canonical)))
		NewWithT(t).Expect(resp.Allowed).To(BeTrue())
		NewWithT(t).Expect(resp.Patches).To(BeEmpty())
	})
}
