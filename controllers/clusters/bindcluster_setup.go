package clusters

import (
	"context"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/inputs"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
)

// SetupWithManager registers the reconciler and the watches that make a
// change to any object that shapes the config re-render within a second.
func (r *BindClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("bind-operator")
	}
	clusterOf := func(ref func(client.Object) string) func(client.Object) []reconcile.Request {
		return func(o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref(o)}}}
		}
	}
	byClusterRef := func(ref func(client.Object) string) handler.EventHandler {
		toCluster := clusterOf(ref)
		return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request { return toCluster(o) })
	}
	zoneCluster := func(o client.Object) string { return o.(*bindv1alpha1.BindZone).Spec.ClusterRef.Name }
	allInNamespace := handler.EnqueueRequestsFromMapFunc(r.clustersInNamespace)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &bindv1alpha1.BindZone{}, indexZoneForwardsTo, func(o client.Object) []string {
		return inputs.ForwardedClusters(o.(*bindv1alpha1.BindZone).Spec.Forwarders)
	}); err != nil {
		return err
	}
	// A cluster whose forwarders name another follows that one's query
	// Service address and the DS records of the zones it serves.
	forwarders := func(ref func(client.Object) string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			if name := ref(o); name != "" {
				return r.clustersForwardingTo(ctx, o.GetNamespace(), name)
			}
			return nil
		})
	}
	zoneChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return zoneShapesConfig(e.ObjectOld.(*bindv1alpha1.BindZone), e.ObjectNew.(*bindv1alpha1.BindZone))
	}}
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindv1alpha1.BindCluster{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		// A burst of zone changes (thousands of zones applied at once)
		// re-renders once per zoneSettle, not once per zone: each render
		// lists and copies every zone of the cluster.
		Watches(&bindv1alpha1.BindZone{}, reconcileutil.EnqueueAfter(zoneSettle, clusterOf(zoneCluster)), builder.WithPredicates(zoneChanged)).
		Watches(&bindv1alpha1.BindZone{}, forwarders(zoneCluster), builder.WithPredicates(zoneChanged)).
		Watches(&bindv1alpha1.BindCluster{}, forwarders(client.Object.GetName)).
		Watches(&corev1.Service{}, forwarders(func(o client.Object) string { return o.GetLabels()[bindv1alpha1.LabelCluster] })).
		Watches(&bindv1alpha1.BindView{}, byClusterRef(func(o client.Object) string { return o.(*bindv1alpha1.BindView).Spec.ClusterRef.Name })).
		Watches(&bindv1alpha1.BindCatalogZone{}, byClusterRef(func(o client.Object) string { return o.(*bindv1alpha1.BindCatalogZone).Spec.ClusterRef.Name })).
		Watches(&bindv1alpha1.BindPolicy{}, byClusterRef(func(o client.Object) string { return o.(*bindv1alpha1.BindPolicy).Spec.ClusterRef.Name })).
		// Shared kinds reach a cluster only when referenced; re-rendering
		// every cluster of the namespace is cheap and the render is
		// deterministic, so unrelated changes never roll anything.
		Watches(&bindv1alpha1.BindACL{}, allInNamespace).
		Watches(&bindv1alpha1.BindDNSSECPolicy{}, allInNamespace).
		Watches(&bindv1alpha1.BindTSIGKey{}, allInNamespace).
		// Secrets: our own keys Secret (owned) and generated TSIG material;
		// the cache holds only the operator's Secrets, so imported ones are
		// re-read every SecretResyncPeriod instead.
		Watches(&corev1.Secret{}, allInNamespace).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			name := o.GetLabels()[bindv1alpha1.LabelCluster]
			if name == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
		})).
		Complete(r)
}

// zoneSettle is how long a zone change waits before its cluster is
// rendered again; the changes within it are rendered once.
const zoneSettle = time.Second

// zoneShapesConfig tells whether a zone's update can change what its
// cluster, or a cluster forwarding to it, renders: its spec, its deletion,
// or the DS records a forwarding cluster trusts. The BindZone controller
// writes a zone's status several times on its way to Ready and again with
// every serial; each of those re-rendered the whole cluster, listing and
// copying every zone, so n zones cost O(n²) and the renders took a core
// while thousands of zones were created (docs/behaviours.md, "Scale").
func zoneShapesConfig(o, n *bindv1alpha1.BindZone) bool {
	return o.Generation != n.Generation || !o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
		!slices.Equal(zoneDS(o), zoneDS(n))
}

func zoneDS(z *bindv1alpha1.BindZone) []string {
	if z.Status.DNSSEC == nil {
		return nil
	}
	return z.Status.DNSSEC.DS
}

func (r *BindClusterReconciler) clustersInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list bindv1alpha1.BindClusterList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return reqs
}

// indexZoneForwardsTo indexes BindZones by the BindClusters their
// forwarders name.
const indexZoneForwardsTo = "spec.forwarders.clusterRef"

// clustersForwardingTo lists the clusters of the namespace that forward to
// target: through a zone, a view or their own recursion forwarders.
func (r *BindClusterReconciler) clustersForwardingTo(ctx context.Context, namespace, target string) []reconcile.Request {
	names := map[string]bool{}
	var zones bindv1alpha1.BindZoneList
	if err := r.Client.List(ctx, &zones, client.InNamespace(namespace), client.MatchingFields{indexZoneForwardsTo: target}); err != nil {
		return nil
	}
	for _, z := range zones.Items {
		names[z.Spec.ClusterRef.Name] = true
	}
	forwardsThere := func(fw []bindv1alpha1.Forwarder) bool {
		return slices.Contains(inputs.ForwardedClusters(fw), target)
	}
	var views bindv1alpha1.BindViewList
	if err := r.Client.List(ctx, &views, client.InNamespace(namespace)); err != nil {
		return nil
	}
	for _, v := range views.Items {
		if forwardsThere(v.Spec.Forwarders) {
			names[v.Spec.ClusterRef.Name] = true
		}
	}
	var clusters bindv1alpha1.BindClusterList
	if err := r.Client.List(ctx, &clusters, client.InNamespace(namespace)); err != nil {
		return nil
	}
	for _, c := range clusters.Items {
		if c.Spec.Recursion != nil && forwardsThere(c.Spec.Recursion.Forwarders) {
			names[c.Name] = true
		}
	}
	reqs := make([]reconcile.Request, 0, len(names))
	for _, n := range slices.Sorted(maps.Keys(names)) {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: namespace, Name: n}})
	}
	return reqs
}
