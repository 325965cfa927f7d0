package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	admissionmetrics "sigs.k8s.io/controller-runtime/pkg/webhook/admission/metrics"
	sigsjson "sigs.k8s.io/json"
)

// oneCall admits a kind in a single mutating call: the object is defaulted
// and the defaulted object validated, so a rejection carries the same
// field paths and sentences the validating webhook would have given, and an
// accepted object comes back as a JSON patch.
//
// Why: every admission webhook call costs the API server about as much CPU
// as the write itself (encoding the object into an AdmissionReview,
// dispatch, applying the patch). DNSRecords are created by the thousand, so
// for them the second call halved what admission could take (issue 15 item
// 2; docs/validation.md, "One call for DNSRecords"). The configuration sets
// reinvocationPolicy IfNeeded: a later mutating webhook that changes the
// object calls this one again, and the DNSRecord controller refuses a spec
// that does not canonicalise (ReasonInvalidRecord) whatever let it in.
//
// It serves the AdmissionReview itself (ServeHTTP) rather than through
// controller-runtime's admission.Webhook, for the same reason: that one
// parses each review twice (once to find its kind) and each object twice,
// and diffs the raw object against an encoding of the defaulted one on
// every call. Here the review and the object are each parsed once, and a
// canonical object, the common case, is admitted with no patch at all:
// only an object the defaulting changed is diffed
// (BenchmarkDNSRecordAdmission).
type oneCall[T client.Object] struct {
	defaulter admission.Defaulter[T]
	validator admission.Validator[T]
	new       func() T
}

// withOneCall is the webhook handler of oneCall for T. The webhook server
// wraps it in controller-runtime's webhook metrics (Server.Register).
func withOneCall[T client.Object](newT func() T, d admission.Defaulter[T], v admission.Validator[T]) *oneCall[T] {
	return &oneCall[T]{defaulter: d, validator: v, new: newT}
}

// maxReviewSize bounds the AdmissionReview read from the API server, as
// controller-runtime's webhooks do: a request body is at most 3 MiB (the
// API server's own limit) and an update's review carries the object twice.
const maxReviewSize = 7 << 20

// ServeHTTP answers one AdmissionReview (admission.k8s.io/v1, the only
// version the configuration accepts). A review it cannot read is answered
// with an error in the review, as controller-runtime does: the API server
// then refuses the write (failurePolicy Fail) with that message.
func (h *oneCall[T]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var resp admission.Response
	req, code, err := readReview(r)
	if err != nil {
		resp = admission.Errored(code, err)
	} else {
		resp = h.handleRecovered(r.Context(), req)
	}
	if err := resp.Complete(req); err != nil {
		resp = admission.Errored(http.StatusInternalServerError, err)
		_ = resp.Complete(req)
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(admissionv1.AdmissionReview{
		TypeMeta: reviewType,
		Response: &resp.AdmissionResponse,
	}); err != nil {
		// The connection broke: nothing more can be sent on it.
		log.FromContext(r.Context()).V(1).Info("writing an admission response", "error", err.Error())
	}
}

var reviewType = metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"}

// readReview reads and parses one AdmissionReview request. The code is
// the HTTP status of the error.
func readReview(r *http.Request) (admission.Request, int32, error) {
	var req admission.Request
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return req, http.StatusBadRequest, fmt.Errorf("content type %q: an AdmissionReview is sent as application/json", ct)
	}
	if r.Body == nil {
		return req, http.StatusBadRequest, errors.New("the request has no body: an AdmissionReview was expected")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewSize+1))
	if err != nil {
		return req, http.StatusBadRequest, fmt.Errorf("reading the AdmissionReview: %w", err)
	}
	if len(body) > maxReviewSize {
		return req, http.StatusRequestEntityTooLarge, fmt.Errorf("the AdmissionReview is larger than %d bytes", maxReviewSize)
	}
	var review admissionv1.AdmissionReview
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &review); err != nil {
		return req, http.StatusBadRequest, fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	if review.TypeMeta != reviewType || review.Request == nil {
		return req, http.StatusBadRequest, fmt.Errorf("expected an %s AdmissionReview with a request, got %q %q", reviewType.APIVersion, review.APIVersion, review.Kind)
	}
	req.AdmissionRequest = *review.Request
	return req, 0, nil
}

// handleRecovered is Handle that answers a panic with an error instead of
// dropping the API server's connection: the write is refused, the
// webhook keeps serving. It counts in controller_runtime_webhook_panics_total
// like every controller-runtime webhook, so one alert covers all of ours.
func (h *oneCall[T]) handleRecovered(ctx context.Context, req admission.Request) (resp admission.Response) {
	defer func() {
		if p := recover(); p != nil {
			admissionmetrics.WebhookPanics.WithLabelValues().Inc()
			log.FromContext(ctx).Error(fmt.Errorf("%v", p), "admission panicked", "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
			resp = admission.Errored(http.StatusInternalServerError, errors.New("the webhook failed on this object; the operator's log has the cause"))
		}
	}()
	return h.Handle(ctx, req)
}

// Handle defaults, validates and patches one CREATE or UPDATE; every other
// operation is allowed untouched (the configuration sends none).
func (h *oneCall[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	ctx = admission.NewContextWithRequest(ctx, req)
	obj, err := h.decode(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	// The patch is taken between two encodings of the Go type, not from
	// the raw request: fields the type drops (an empty list the client
	// spelled out) then never turn into "remove" operations.
	before, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if err := h.defaulter.Default(ctx, obj); err != nil {
		return denied(err, nil)
	}
	var warnings admission.Warnings
	if req.Operation == admissionv1.Create {
		warnings, err = h.validator.ValidateCreate(ctx, obj)
	} else {
		old, derr := h.decode(req.OldObject.Raw)
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.validator.ValidateUpdate(ctx, old, obj)
	}
	if err != nil {
		return denied(err, warnings)
	}
	patch, err := patchOf(obj, before)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := admission.Allowed("")
	if len(patch) > 0 {
		resp = admission.Patched("", patch...)
	}
	return resp.WithWarnings(warnings...)
}

// decode parses an object of the request, as the API server's JSON
// serializer does (case-sensitive field names).
func (h *oneCall[T]) decode(raw []byte) (T, error) {
	obj := h.new()
	if len(raw) == 0 {
		return obj, errors.New("the AdmissionReview carries no object")
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, obj); err != nil {
		return obj, fmt.Errorf("decoding the object: %w", err)
	}
	return obj, nil
}

// patchOf is the JSON patch from the object as it came (encoded as
// before) to obj, defaulted. It holds only what the defaulting changed (a
// non-canonical spec): no defaulter touches metadata, so the finalizers,
// labels and annotations a client sent pass through as they are. A
// canonical object, the common case, needs no diff and gets no patch.
func patchOf(obj client.Object, before []byte) ([]jsonpatch.Operation, error) {
	after, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(before, after) {
		return nil, nil
	}
	return jsonpatch.CreatePatch(before, after)
}

// denied answers with err's Status when it has one (apierrors.NewInvalid:
// the causes with their field paths reach the client as they are).
func denied(err error, warnings admission.Warnings) admission.Response {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &s}}.WithWarnings(warnings...)
	}
	return admission.Denied(fmt.Sprint(err)).WithWarnings(warnings...)
}
