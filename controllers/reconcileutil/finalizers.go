package reconcileutil

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// AddFinalizer adds finalizer to obj unless it has it. Only the finalizers
// are written (a merge patch), guarded by obj's resourceVersion: a merge
// patch replaces the whole list, so without the guard it could drop a
// finalizer someone else added meanwhile; with it, that race is a conflict
// and the reconcile is retried.
func AddFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	base := obj.DeepCopyObject().(client.Object)
	if !controllerutil.AddFinalizer(obj, finalizer) {
		return nil
	}
	return c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// RemoveFinalizer removes finalizer from obj, the same way; an object that
// is already gone is no error.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	base := obj.DeepCopyObject().(client.Object)
	if !controllerutil.RemoveFinalizer(obj, finalizer) {
		return nil
	}
	return client.IgnoreNotFound(c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})))
}

// DeleteGiveUp bounds how long a deleted DNSRecord or BindZone waits for
// its primary: a cluster that is gone for good must not keep objects
// forever.
const DeleteGiveUp = 5 * time.Minute
