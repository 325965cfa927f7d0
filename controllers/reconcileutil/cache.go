package reconcileutil

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// OwnedSelector selects what the operator creates: every object a
// BindCluster owns (and its pods) and every Secret a BindTSIGKey generates
// carries app.kubernetes.io/managed-by=bind-operator.
var OwnedSelector = labels.SelectorFromSet(labels.Set{bindv1alpha1.LabelManagedBy: bindv1alpha1.ManagedByValue})

// labelScoped are the kinds the manager caches only with OwnedSelector.
func labelScoped() []client.Object {
	return []client.Object{
		&corev1.Secret{}, &corev1.ConfigMap{}, &corev1.Service{}, &corev1.Pod{},
		&appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}, &networkingv1.NetworkPolicy{},
	}
}

// CacheOptions scope the manager's cache: the built-in kinds the operator
// creates are cached (and watched) only when they carry its label, so the
// manager holds neither the cluster's other Secrets nor anybody else's
// ConfigMaps, Services, StatefulSets, PDBs, NetworkPolicies or Pods.
// Objects outside the selector are read on demand (NewClient). The nine
// kinds are listed and watched with cfg (the manager's) through NewInformer,
// so an object stored in a shape this version cannot decode is reported
// rather than stopping the cache.
func CacheOptions(cfg *rest.Config) cache.Options {
	byObject := map[client.Object]cache.ByObject{}
	for _, o := range labelScoped() {
		byObject[o] = cache.ByObject{Label: OwnedSelector}
	}
	return cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields(), NewInformer: NewInformer(cfg)}
}

// NewClient is the manager's client (ctrl.Options.NewClient): reads come
// from the cache, and a Get of a label-scoped kind that the cache does not
// hold goes to the API server. That is how an imported TSIG Secret (never
// labelled: the operator does not modify it) is read, and how an
// unlabelled object that holds a name the operator wants is seen (see
// ReasonNameConflict) rather than taken over.
func NewClient(config *rest.Config, options client.Options) (client.Client, error) {
	api, err := client.New(config, client.Options{HTTPClient: options.HTTPClient, Scheme: options.Scheme, Mapper: options.Mapper})
	if err != nil {
		return nil, err
	}
	if options.Cache != nil && options.Cache.Reader != nil {
		options.Cache.Reader = onDemand{cache: options.Cache.Reader, api: api}
	}
	return client.New(config, options)
}

// onDemand reads the cache first and the API server for a label-scoped
// object the cache does not hold.
type onDemand struct {
	cache, api client.Reader
}

func (r onDemand) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.cache.Get(ctx, key, obj, opts...)
	if !apierrors.IsNotFound(err) || !isLabelScoped(obj) {
		return err
	}
	return r.api.Get(ctx, key, obj, opts...)
}

func (r onDemand) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.cache.List(ctx, list, opts...)
}

func isLabelScoped(obj client.Object) bool {
	switch obj.(type) {
	case *corev1.Secret, *corev1.ConfigMap, *corev1.Service, *corev1.Pod,
		*appsv1.StatefulSet, *policyv1.PodDisruptionBudget, *networkingv1.NetworkPolicy:
		return true
	}
	return false
}

// DefaultSecretResyncPeriod is how often Secrets outside the cache
// (imported TSIG keys) and objects in a NameConflict are read again.
const DefaultSecretResyncPeriod = time.Minute

// DefaultResyncPeriod is how often a BindZone compares what named serves
// with spec.records when nothing else triggers it.
const DefaultResyncPeriod = 5 * time.Minute
