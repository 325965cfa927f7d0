package webhooks

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// cacheFirst is the webhooks' reader. An object of this API group (a
// DNSRecord's BindZone, a zone's BindCluster, …) is read from the
// manager's cache, which the controllers keep warm anyway: an uncached GET
// in every admission call doubled the API server's work for each of the
// thousands of DNSRecords a GitOps tool may apply at once. The cache can
// lag a moment behind a create in the same `kubectl apply`, so a miss is
// asked again of the API server. Everything else (Pods, Nodes) and every
// List go to the API server: caching a whole cluster's Pods and Nodes for
// admission would cost more memory than those rare reads cost.
type cacheFirst struct {
	cache, api client.Reader
	scheme     *runtime.Scheme
}

var _ client.Reader = cacheFirst{}

func (r cacheFirst) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if gvk, err := apiutil.GVKForObject(obj, r.scheme); err == nil && gvk.Group == v1alpha1.GroupVersion.Group {
		err := r.cache.Get(ctx, key, obj, opts...)
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	return r.api.Get(ctx, key, obj, opts...)
}

func (r cacheFirst) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.api.List(ctx, list, opts...)
}
