package webhooks

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// refs resolves references in the object's namespace. It reads through an
// uncached reader: admission must see an object created a moment ago (a
// GitOps apply of a cluster and its zones) and is rare enough that a GET
// per reference costs nothing.
type refs struct {
	r  client.Reader
	ns string
}

// get fetches name into obj. found is false when it does not exist; other
// errors (RBAC, API server trouble) become a warning, never a 500: the
// controllers will report what is wrong once the object is stored.
func (f refs) get(ctx context.Context, name string, obj client.Object, w *admission.Warnings) bool {
	if f.r == nil || name == "" {
		return false
	}
	err := f.r.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: name}, obj)
	if err == nil {
		return true
	}
	if !apierrors.IsNotFound(err) {
		*w = append(*w, fmt.Sprintf("could not read %T %q to check it (%v); it was not checked", obj, name, err))
	}
	return false
}

// expect warns when a referenced object does not exist yet.
func (f refs) expect(ctx context.Context, path, kind, name string, obj client.Object, w *admission.Warnings) bool {
	ok := f.get(ctx, name, obj, w)
	if !ok && f.r != nil {
		*w = append(*w, missing(path, kind, name, f.ns))
	}
	return ok
}

func missing(path, kind, name, ns string) string {
	return fmt.Sprintf("%s: %s %q does not exist yet in namespace %q; the object stays not Ready until it does", path, kind, name, ns)
}

// list lists objects of the namespace; errors become warnings.
func (f refs) list(ctx context.Context, l client.ObjectList, w *admission.Warnings, opts ...client.ListOption) bool {
	if f.r == nil {
		return false
	}
	if err := f.r.List(ctx, l, append([]client.ListOption{client.InNamespace(f.ns)}, opts...)...); err != nil {
		*w = append(*w, fmt.Sprintf("could not list %T to check for conflicts (%v); they were not checked", l, err))
		return false
	}
	return true
}

// addressListRefs warns about aclRef and keyRef elements that do not exist.
func (f refs) addressListRefs(ctx context.Context, path string, l []v1alpha1.AddressMatchElement, w *admission.Warnings) {
	for i, e := range l {
		p := fmt.Sprintf("%s[%d]", path, i)
		if e.ACLRef != "" {
			f.expect(ctx, p+".aclRef", "BindACL", e.ACLRef, &v1alpha1.BindACL{}, w)
		}
		if e.KeyRef != "" {
			f.expect(ctx, p+".keyRef", "BindTSIGKey", e.KeyRef, &v1alpha1.BindTSIGKey{}, w)
		}
	}
}

func (f refs) remoteServerRefs(ctx context.Context, path string, l []v1alpha1.RemoteServer, w *admission.Warnings) {
	for i, s := range l {
		if s.KeyRef != nil {
			f.expect(ctx, fmt.Sprintf("%s[%d].keyRef", path, i), "BindTSIGKey", s.KeyRef.Name, &v1alpha1.BindTSIGKey{}, w)
		}
	}
}

// namespaceOf is the object's namespace, or the request's while the object
// does not carry it yet.
func namespaceOf(ctx context.Context, ns string) string {
	if ns != "" {
		return ns
	}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		return req.Namespace
	}
	return ""
}
