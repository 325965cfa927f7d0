package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	admissionmetrics "sigs.k8s.io/controller-runtime/pkg/webhook/admission/metrics"

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
	hook := withOneCall(func() *v1alpha1.DNSRecord { return &v1alpha1.DNSRecord{} }, w, w)

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
	// admit sends req to the webhook as the API server does: an
	// AdmissionReview over HTTP, its answer read back.
	admit := func(t *testing.T, req admission.Request) admissionv1.AdmissionResponse {
		t.Helper()
		return serveReview(t, hook, reviewOf(req))
	}
	// opsOf is the answer's patch as operations.
	opsOf := func(t *testing.T, resp admissionv1.AdmissionResponse) []jsonpatch.JsonPatchOperation {
		t.Helper()
		var ops []jsonpatch.JsonPatchOperation
		if resp.Patch != nil {
			NewWithT(t).Expect(json.Unmarshal(resp.Patch, &ops)).To(Succeed())
		}
		return ops
	}
	// patched is the object of req with the answer's patch applied, as
	// the API server applies it.
	patched := func(t *testing.T, req admission.Request, resp admissionv1.AdmissionResponse) v1alpha1.DNSRecord {
		t.Helper()
		g := NewWithT(t)
		p, err := jsonpatchapply.DecodePatch(resp.Patch)
		g.Expect(err).NotTo(HaveOccurred())
		out, err := p.Apply(req.Object.Raw)
		g.Expect(err).NotTo(HaveOccurred())
		var got v1alpha1.DNSRecord
		g.Expect(json.Unmarshal(out, &got)).To(Succeed())
		return got
	}
	canonical := v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "www", Type: "A", TTL: ptr.To[v1alpha1.TTL](60), Values: []string{"192.0.2.1"}}

	// notMetadata: no operation of a patch touches metadata (finalizers,
	// labels, annotations stay as the client sent them).
	notMetadata := Not(ContainElement(HaveField("Path", HavePrefix("/metadata"))))

	t.Run("a canonical create gets no patch at all", func(t *testing.T) {
		g := NewWithT(t)
		resp := admit(t, request(admissionv1.Create, raw(t, canonical), runtime.RawExtension{}))
		g.Expect(resp.Allowed).To(BeTrue())
		g.Expect(resp.UID).To(BeEquivalentTo("1"))
		g.Expect(resp.Patch).To(BeEmpty())
		g.Expect(resp.PatchType).To(BeNil())
	})

	t.Run("a create is canonicalised against its zone", func(t *testing.T) {
		g := NewWithT(t)
		spec := v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "WWW.example.com.", Type: "a", Values: []string{"192.0.2.1", "192.0.2.1"}}
		req := request(admissionv1.Create, raw(t, spec), runtime.RawExtension{})
		resp := admit(t, req)
		g.Expect(resp.Allowed).To(BeTrue())
		g.Expect(resp.PatchType).To(Equal(ptr.To(admissionv1.PatchTypeJSONPatch)))
		g.Expect(opsOf(t, resp)).To(notMetadata)
		got := patched(t, req, resp)
		g.Expect(got.Spec).To(Equal(canonical))
		g.Expect(got.Finalizers).To(BeEmpty(), "a DNSRecord is created without a finalizer")
	})

	// An object created by an earlier release carries the old finalizer
	// until the controller strips it: an UPDATE neither removes it nor,
	// once the controller (or a client) has removed it, adds it back.
	t.Run("an update keeps whatever finalizers the client sent", func(t *testing.T) {
		old := canonical.DeepCopy()
		old.Values = []string{"192.0.2.9"}
		nonCanonical := canonical.DeepCopy()
		nonCanonical.Name, nonCanonical.Type = "WWW.example.com.", "a"
		for _, c := range []struct {
			name       string
			spec       v1alpha1.DNSRecordSpec
			finalizers []string
		}{
			{"canonical, with the old finalizer", canonical, []string{v1alpha1.DNSRecordFinalizer}},
			{"canonical, the old finalizer removed", canonical, nil},
			{"canonical, with the old and another tool's", canonical, []string{"example.com/audit", v1alpha1.DNSRecordFinalizer}},
			{"non-canonical, with the old finalizer", *nonCanonical, []string{v1alpha1.DNSRecordFinalizer}},
			{"non-canonical, the old finalizer removed", *nonCanonical, nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				g := NewWithT(t)
				req := request(admissionv1.Update, raw(t, c.spec, c.finalizers...), raw(t, *old, v1alpha1.DNSRecordFinalizer))
				resp := admit(t, req)
				g.Expect(resp.Allowed).To(BeTrue())
				g.Expect(opsOf(t, resp)).To(notMetadata)
				if c.spec.Name == canonical.Name {
					g.Expect(resp.Patch).To(BeEmpty())
					return
				}
				got := patched(t, req, resp)
				g.Expect(got.Spec).To(Equal(canonical))
				g.Expect(got.Finalizers).To(Equal(c.finalizers))
			})
		}
	})

	t.Run("an invalid record is denied with its field path", func(t *testing.T) {
		g := NewWithT(t)
		bad := canonical.DeepCopy()
		bad.Values = []string{"192.0.2.300"}
		resp := admit(t, request(admissionv1.Create, raw(t, *bad), runtime.RawExtension{}))
		g.Expect(resp.Allowed).To(BeFalse())
		g.Expect(resp.Patch).To(BeEmpty())
		g.Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusUnprocessableEntity))
		g.Expect(resp.Result.Reason).To(Equal(metav1.StatusReasonInvalid))
		g.Expect(resp.Result.Details.Causes).To(ConsistOf(HaveField("Field", "spec.values[0]")))
	})

	t.Run("an object it cannot decode is a bad request", func(t *testing.T) {
		resp := hook.Handle(context.Background(), request(admissionv1.Create, runtime.RawExtension{Raw: []byte(`{"spec":`)}, runtime.RawExtension{}))
		NewWithT(t).Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusBadRequest))
	})

	t.Run("a delete is allowed untouched", func(t *testing.T) {
		resp := admit(t, request(admissionv1.Delete, runtime.RawExtension{}, raw(t, canonical)))
		NewWithT(t).Expect(resp.Allowed).To(BeTrue())
		NewWithT(t).Expect(resp.Patch).To(BeEmpty())
	})

	t.Run("another tool's finalizer is kept", func(t *testing.T) {
		g := NewWithT(t)
		resp := admit(t, request(admissionv1.Create, raw(t, canonical, "example.com/audit"), runtime.RawExtension{}))
		g.Expect(resp.Allowed).To(BeTrue())
		g.Expect(resp.Patch).To(BeEmpty(), "a canonical create with a finalizer of its own gets no patch")

		values := canonical.DeepCopy()
		values.Values = []string{"192.0.2.1", "192.0.2.1"}
		req := request(admissionv1.Create, raw(t, *values, "example.com/audit"), runtime.RawExtension{})
		resp = admit(t, req)
		g.Expect(resp.Allowed).To(BeTrue())
		g.Expect(opsOf(t, resp)).To(notMetadata)
		got := patched(t, req, resp)
		g.Expect(got.Finalizers).To(Equal([]string{"example.com/audit"}))
		g.Expect(got.Spec).To(Equal(canonical))
	})

	t.Run("what is not an AdmissionReview is answered with an error", func(t *testing.T) {
		body, err := json.Marshal(reviewOf(request(admissionv1.Create, raw(t, canonical), runtime.RawExtension{})))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		for _, c := range []struct {
			name, contentType string
			body              []byte
			code              int32
		}{
			{"wrong content type", "application/yaml", body, http.StatusBadRequest},
			{"not JSON", "application/json", []byte("{"), http.StatusBadRequest},
			{"another kind", "application/json", bytes.Replace(body, []byte(`"AdmissionReview"`), []byte(`"ConversionReview"`), 1), http.StatusBadRequest},
			{"no request", "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), http.StatusBadRequest},
			{"too large", "application/json", bytes.Repeat([]byte(" "), maxReviewSize+1), http.StatusRequestEntityTooLarge},
		} {
			t.Run(c.name, func(t *testing.T) {
				resp := postReview(t, hook, c.contentType, c.body)
				NewWithT(t).Expect(resp.Allowed).To(BeFalse())
				NewWithT(t).Expect(resp.Result.Code).To(Equal(c.code))
			})
		}
	})
}

// TestOneCallAnswersAPanicWithAnError: a validator that panics refuses the
// write; the webhook server goes on serving.
func TestOneCallAnswersAPanicWithAnError(t *testing.T) {
	g := NewWithT(t)
	hook := withOneCall(func() *v1alpha1.DNSRecord { return &v1alpha1.DNSRecord{} }, panicking{}, panicking{})
	obj, err := json.Marshal(v1alpha1.DNSRecord{ObjectMeta: objectMeta("r")})
	g.Expect(err).NotTo(HaveOccurred())
	panics := testutil.ToFloat64(admissionmetrics.WebhookPanics)
	resp := serveReview(t, hook, reviewOf(admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "2", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: obj}}}))
	g.Expect(resp.Allowed).To(BeFalse())
	g.Expect(resp.UID).To(BeEquivalentTo("2"))
	g.Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusInternalServerError))
	g.Expect(testutil.ToFloat64(admissionmetrics.WebhookPanics)).To(Equal(panics+1), "controller_runtime_webhook_panics_total counts the panic")
}

// FuzzOneCallReview: whatever body arrives, the webhook answers with an
// AdmissionReview and never panics (the body is network input), and what
// it admits is patched, if at all, in spec only: metadata (finalizers
// above all) passes through as the client sent it.
func FuzzOneCallReview(f *testing.F) {
	zone := &v1alpha1.BindZone{ObjectMeta: objectMeta("example"), Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "example.com", Type: v1alpha1.ZonePrimary,
	}}
	w := testWebhooks(f, zone).record
	hook := withOneCall(func() *v1alpha1.DNSRecord { return &v1alpha1.DNSRecord{} }, w, w)
	f.Add(dnsRecordCreateReview(f))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"UPDATE","object":{"spec":{"type":"CNAME"}},"oldObject":null}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE","object":{"metadata":{"finalizers":[null]},"spec":{"values":[""]}}}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"2","operation":"UPDATE",` +
		`"object":{"metadata":{"name":"r","finalizers":["bind.unkin.net/dnsrecord","example.com/audit"]},"spec":{"zoneRef":{"name":"example"},"name":"WWW","type":"a","values":["192.0.2.2","192.0.2.1"]}},` +
		`"oldObject":{"metadata":{"name":"r","finalizers":["bind.unkin.net/dnsrecord"]},"spec":{"zoneRef":{"name":"example"},"name":"www","type":"A","values":["192.0.2.1"]}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := postReview(t, hook, "application/json", body)
		if !resp.Allowed || resp.Patch == nil {
			return
		}
		var ops []jsonpatch.JsonPatchOperation
		if err := json.Unmarshal(resp.Patch, &ops); err != nil {
			t.Fatalf("patch %s: %v", resp.Patch, err)
		}
		for _, op := range ops {
			if strings.HasPrefix(op.Path, "/metadata") {
				t.Fatalf("the patch changes metadata: %s", resp.Patch)
			}
		}
	})
}

// panicking is a DNSRecord defaulter and validator that panics.
type panicking struct{}

func (panicking) Default(context.Context, *v1alpha1.DNSRecord) error { return nil }
func (panicking) ValidateCreate(context.Context, *v1alpha1.DNSRecord) (admission.Warnings, error) {
	panic("validator bug")
}
func (panicking) ValidateUpdate(context.Context, *v1alpha1.DNSRecord, *v1alpha1.DNSRecord) (admission.Warnings, error) {
	panic("validator bug")
}
func (panicking) ValidateDelete(context.Context, *v1alpha1.DNSRecord) (admission.Warnings, error) {
	panic("validator bug")
}

// reviewOf is the AdmissionReview the API server sends for req.
func reviewOf(req admission.Request) admissionv1.AdmissionReview {
	return admissionv1.AdmissionReview{TypeMeta: reviewType, Request: &req.AdmissionRequest}
}

// serveReview posts review to h and returns the answer.
func serveReview(t testing.TB, h http.Handler, review admissionv1.AdmissionReview) admissionv1.AdmissionResponse {
	t.Helper()
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return postReview(t, h, "application/json", body)
}

// postReview posts body to h as the API server would and reads the
// AdmissionReview it answers: every answer, even to garbage, must be one.
func postReview(t testing.TB, h http.Handler, contentType string, body []byte) admissionv1.AdmissionResponse {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, dnsRecordPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	h.ServeHTTP(rec, req)
	var out admissionv1.AdmissionReview
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.TypeMeta != reviewType || out.Response == nil {
		t.Fatalf("answer %d %q: want an AdmissionReview with a response", rec.Code, rec.Body)
	}
	return *out.Response
}
