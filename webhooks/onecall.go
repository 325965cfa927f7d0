package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
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
type oneCall[T runtime.Object] struct {
	decoder   admission.Decoder
	defaulter admission.Defaulter[T]
	validator admission.Validator[T]
	new       func() T
}

// withOneCall is the admission.Webhook of oneCall for T.
func withOneCall[T runtime.Object](scheme *runtime.Scheme, newT func() T, d admission.Defaulter[T], v admission.Validator[T]) *admission.Webhook {
	return &admission.Webhook{Handler: &oneCall[T]{decoder: admission.NewDecoder(scheme), defaulter: d, validator: v, new: newT}}
}

// Handle defaults, validates and patches one CREATE or UPDATE; every other
// operation is allowed untouched (the configuration sends none).
func (h *oneCall[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	ctx = admission.NewContextWithRequest(ctx, req)
	obj := h.new()
	if err := h.decoder.DecodeRaw(req.Object, obj); err != nil {
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
		old := h.new()
		if derr := h.decoder.DecodeRaw(req.OldObject, old); derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.validator.ValidateUpdate(ctx, old, obj)
	}
	if err != nil {
		return denied(err, warnings)
	}
	after, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(before, after).WithWarnings(warnings...)
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
