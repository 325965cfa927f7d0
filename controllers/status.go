package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchStatus writes the status setStatus gives obj, unless that is what
// obj already holds: an idle reconcile writes nothing, so it wakes no
// watcher and costs the API server nothing. The write is a merge patch of
// the status subresource, so it never conflicts with spec edits made while
// the reconcile ran; an object deleted meanwhile is no error.
func patchStatus[T client.Object](ctx context.Context, c client.Client, obj T, setStatus func(T)) error {
	base := obj.DeepCopyObject().(T)
	setStatus(obj)
	if equality.Semantic.DeepEqual(base, obj) {
		return nil
	}
	return client.IgnoreNotFound(c.Status().Patch(ctx, obj, client.MergeFrom(base)))
}

// setCondition records a condition as observed at obj's generation.
// meta.SetStatusCondition keeps lastTransitionTime while the status stays
// the same, so re-reporting a condition is no change.
func setCondition(conditions *[]metav1.Condition, obj metav1.Object, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: obj.GetGeneration(),
	})
}
