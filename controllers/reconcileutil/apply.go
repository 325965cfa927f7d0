package reconcileutil

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// fieldManager is the operator's name in managedFields: the owner of every
// field the reconcilers apply.
const fieldManager = bindv1alpha1.ManagedByValue

// Apply makes the API server hold obj's fields with server-side apply and
// reads the result back into obj (ClusterIPs, status).
//
// obj is the desired object: exactly the fields the operator decides, as the
// build functions return it. What the API server fills in (ClusterIPs,
// node ports, defaults) and what others add (labels, annotations) is
// theirs and stays; a field the operator applied before and no longer
// applies is removed. An apply that changes nothing is not written, so an
// identical reconcile leaves the object, its resourceVersion and its
// watchers alone. Ownership is forced: these objects are the operator's.
func Apply(ctx context.Context, c client.Client, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	// A typed object always carries a status and null timestamps; neither
	// is something the operator means to set.
	delete(u, "status")
	dropNulls(u)
	desired := &unstructured.Unstructured{Object: u}
	desired.SetGroupVersionKind(gvk)
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(desired), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(desired.Object, obj)
}

// dropNulls removes null values (zero timestamps, nil fields without
// omitempty) from an object tree: they carry no intent.
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(v)
		case []any:
			for _, e := range v {
				if em, ok := e.(map[string]any); ok {
					dropNulls(em)
				}
			}
		}
	}
}
