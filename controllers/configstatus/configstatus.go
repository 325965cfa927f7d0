package configstatus

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
)

// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindviews/status;bindacls/status;bindpolicies/status;binddnssecpolicies/status,verbs=patch

// ConfigStatusReconciler writes the status of the kinds that are
// configuration the clusters use: BindView (its zones), BindACL (who names
// it), BindDNSSECPolicy (the zones it signs) and BindPolicy (its rules,
// which it also brings to every pod: bindpolicy_rules.go). Ready says whether every cluster that uses the
// object runs a configuration that holds it.
type ConfigStatusReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Rechecks runs the current admission rules over each object
	// (docs/behaviours.md, "Stored objects are re-checked"); nil
	// re-checks nothing.
	Rechecks *reconcileutil.Rechecks
	// Endpoints locates the pods a BindPolicy is enforced on; nil means
	// KubePods.
	Endpoints clusterpods.PodEndpoints
	agents    *clusterpods.AgentClients
	// PolicyRecheck is how often a BindPolicy is looked at again (pods
	// come and go); default 30 s.
	PolicyRecheck time.Duration
}

// SetupWithManager registers one controller per kind. Any change to a
// BindZone, BindView or BindCluster of a namespace refreshes every object
// of the kind there: few objects, and their status depends on all of them.
func (r *ConfigStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("bind-operator")
	}
	if r.Endpoints == nil {
		r.Endpoints = clusterpods.KubePods{Client: mgr.GetClient()}
	}
	r.agents = &clusterpods.AgentClients{Client: mgr.GetClient()}
	for _, k := range []struct {
		name    string
		obj     client.Object
		list    func() client.ObjectList
		observe func(context.Context, client.Object) (time.Duration, error)
	}{
		{"bindview-status", &bindv1alpha1.BindView{}, func() client.ObjectList { return &bindv1alpha1.BindViewList{} }, r.observeView},
		{"bindacl-status", &bindv1alpha1.BindACL{}, func() client.ObjectList { return &bindv1alpha1.BindACLList{} }, r.observeACL},
		{"binddnssecpolicy-status", &bindv1alpha1.BindDNSSECPolicy{}, func() client.ObjectList { return &bindv1alpha1.BindDNSSECPolicyList{} }, r.observeDNSSECPolicy},
		{"bindpolicy-status", &bindv1alpha1.BindPolicy{}, func() client.ObjectList { return &bindv1alpha1.BindPolicyList{} }, r.observePolicy},
	} {
		enqueue := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			l := k.list()
			if err := r.Client.List(ctx, l, client.InNamespace(o.GetNamespace())); err != nil {
				return nil
			}
			objs, _ := meta.ExtractList(l)
			reqs := make([]reconcile.Request, 0, len(objs))
			for _, x := range objs {
				if m, ok := x.(client.Object); ok {
					reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
				}
			}
			return reqs
		})
		obj, observe := k.obj, k.observe
		err := ctrl.NewControllerManagedBy(mgr).
			For(obj, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Watches(&bindv1alpha1.BindZone{}, enqueue, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Watches(&bindv1alpha1.BindView{}, enqueue, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Watches(&bindv1alpha1.BindACL{}, enqueue, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Watches(&bindv1alpha1.BindCluster{}, enqueue).
			Named(k.name).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				o := obj.DeepCopyObject().(client.Object)
				if err := r.Client.Get(ctx, req.NamespacedName, o); err != nil {
					return reconcile.Result{}, r.Rechecks.Gone(o, req.NamespacedName, err)
				}
				if msg := r.Rechecks.Check(o); msg != "" {
					return reconcile.Result{}, r.invalidConfig(ctx, o, msg)
				}
				after, err := observe(ctx, o)
				return reconcile.Result{RequeueAfter: after}, err
			}))
		if err != nil {
			return err
		}
	}
	return nil
}

// clusterState says whether each named cluster runs its current
// configuration; the message names the first one that does not.
func (r *ConfigStatusReconciler) clusterState(ctx context.Context, namespace string, names []string) (bool, string, error) {
	slices.Sort(names)
	names = slices.Compact(names)
	for _, n := range names {
		var c bindv1alpha1.BindCluster
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: n}, &c); err != nil {
			if apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("BindCluster %q does not exist; create it or fix the reference.", n), nil
			}
			return false, "", err
		}
		if valid := meta.FindStatusCondition(c.Status.Conditions, bindv1alpha1.ConditionConfigValid); valid == nil || valid.Status != metav1.ConditionTrue || valid.ObservedGeneration != c.Generation {
			msg := "has not rendered and checked its configuration yet"
			if valid != nil && valid.Status == metav1.ConditionFalse {
				msg = "refuses its configuration: " + valid.Message
			}
			return false, fmt.Sprintf("BindCluster %q %s", n, msg), nil
		}
		if p := meta.FindStatusCondition(c.Status.Conditions, bindv1alpha1.ConditionProgressing); p == nil || p.Status != metav1.ConditionFalse {
			return false, fmt.Sprintf("BindCluster %q is rolling out its configuration.", n), nil
		}
	}
	return true, "", nil
}

// ready sets Ready from the clusters that use an object: Unused when none,
// InRunningConfig when all run their current configuration.
func (r *ConfigStatusReconciler) ready(ctx context.Context, obj metav1.Object, conds *[]metav1.Condition, clusters []string, what string) error {
	if len(clusters) == 0 {
		reconcileutil.SetCondition(conds, obj, bindv1alpha1.ConditionReady, metav1.ConditionTrue, bindv1alpha1.ReasonUnused, "nothing uses it yet.")
		return nil
	}
	ok, msg, err := r.clusterState(ctx, obj.GetNamespace(), clusters)
	if err != nil {
		return err
	}
	if !ok {
		reconcileutil.SetCondition(conds, obj, bindv1alpha1.ConditionReady, metav1.ConditionFalse, bindv1alpha1.ReasonClusterNotUpToDate, msg)
		return nil
	}
	reconcileutil.SetCondition(conds, obj, bindv1alpha1.ConditionReady, metav1.ConditionTrue, bindv1alpha1.ReasonInRunningConfig, what)
	return nil
}

func (r *ConfigStatusReconciler) zones(ctx context.Context, namespace string) ([]bindv1alpha1.BindZone, error) {
	var l bindv1alpha1.BindZoneList
	// The callers only count and compare references: the cache's own
	// objects, not a copy of every zone of the namespace per status.
	if err := r.Client.List(ctx, &l, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (r *ConfigStatusReconciler) observeView(ctx context.Context, o client.Object) (time.Duration, error) {
	v := o.(*bindv1alpha1.BindView)
	zones, err := r.zones(ctx, v.Namespace)
	if err != nil {
		return 0, err
	}
	var n int32
	for _, z := range zones {
		if z.Spec.ViewRef != nil && z.Spec.ViewRef.Name == v.Name && z.Spec.ClusterRef.Name == v.Spec.ClusterRef.Name {
			n++
		}
	}
	status := v.Status.DeepCopy()
	status.ObservedGeneration, status.ZoneCount = v.Generation, n
	if err := r.ready(ctx, v, &status.Conditions, []string{v.Spec.ClusterRef.Name},
		fmt.Sprintf("BindCluster %q runs a configuration with this view and its %d zone(s).", v.Spec.ClusterRef.Name, n)); err != nil {
		return 0, err
	}
	return 0, reconcileutil.PatchStatus(ctx, r.Client, v, func(x *bindv1alpha1.BindView) { x.Status = *status })
}

func (r *ConfigStatusReconciler) observeDNSSECPolicy(ctx context.Context, o client.Object) (time.Duration, error) {
	p := o.(*bindv1alpha1.BindDNSSECPolicy)
	zones, err := r.zones(ctx, p.Namespace)
	if err != nil {
		return 0, err
	}
	var clusters []string
	for _, z := range zones {
		if z.Spec.DNSSECPolicyRef != nil && z.Spec.DNSSECPolicyRef.Name == p.Name {
			clusters = append(clusters, z.Spec.ClusterRef.Name)
		}
	}
	status := p.Status.DeepCopy()
	status.ObservedGeneration, status.ZoneCount = p.Generation, int32(len(clusters)) //nolint:gosec // bounded by the zones of a namespace
	if err := r.ready(ctx, p, &status.Conditions, clusters, fmt.Sprintf("%d zone(s) are signed with it.", len(clusters))); err != nil {
		return 0, err
	}
	return 0, reconcileutil.PatchStatus(ctx, r.Client, p, func(x *bindv1alpha1.BindDNSSECPolicy) { x.Status = *status })
}

func (r *ConfigStatusReconciler) observeACL(ctx context.Context, o client.Object) (time.Duration, error) {
	a := o.(*bindv1alpha1.BindACL)
	names := func(list []bindv1alpha1.AddressMatchElement) bool {
		return slices.ContainsFunc(list, func(e bindv1alpha1.AddressMatchElement) bool { return e.ACLRef == a.Name })
	}
	var users int32
	var clusters []string
	var cl bindv1alpha1.BindClusterList
	if err := r.Client.List(ctx, &cl, client.InNamespace(a.Namespace)); err != nil {
		return 0, err
	}
	for _, c := range cl.Items {
		if names(c.Spec.AllowQuery) || (c.Spec.Recursion != nil && names(c.Spec.Recursion.AllowRecursion)) {
			users++
			clusters = append(clusters, c.Name)
		}
	}
	var vl bindv1alpha1.BindViewList
	if err := r.Client.List(ctx, &vl, client.InNamespace(a.Namespace)); err != nil {
		return 0, err
	}
	for _, v := range vl.Items {
		if names(v.Spec.MatchClients) || names(v.Spec.MatchDestinations) || names(v.Spec.AllowRecursion) {
			users++
			clusters = append(clusters, v.Spec.ClusterRef.Name)
		}
	}
	zones, err := r.zones(ctx, a.Namespace)
	if err != nil {
		return 0, err
	}
	for _, z := range zones {
		if names(z.Spec.AllowTransfer) || names(z.Spec.AllowQuery) {
			users++
			clusters = append(clusters, z.Spec.ClusterRef.Name)
		}
	}
	var al bindv1alpha1.BindACLList
	if err := r.Client.List(ctx, &al, client.InNamespace(a.Namespace)); err != nil {
		return 0, err
	}
	for _, other := range al.Items {
		if other.Name != a.Name && names(other.Spec.Entries) {
			users++ // its own users' clusters render both
		}
	}
	status := a.Status.DeepCopy()
	status.ObservedGeneration, status.Users = a.Generation, users
	if err := r.ready(ctx, a, &status.Conditions, clusters, fmt.Sprintf("named by %d object(s); every cluster that uses it runs it.", users)); err != nil {
		return 0, err
	}
	return 0, reconcileutil.PatchStatus(ctx, r.Client, a, func(x *bindv1alpha1.BindACL) { x.Status = *status })
}

func (r *ConfigStatusReconciler) observePolicy(ctx context.Context, o client.Object) (time.Duration, error) {
	p := o.(*bindv1alpha1.BindPolicy)
	recheck := r.PolicyRecheck
	if recheck == 0 {
		recheck = 30 * time.Second
	}
	status := p.Status.DeepCopy()
	status.ObservedGeneration, status.RuleCount = p.Generation, int32(len(p.Spec.Rules)) //nolint:gosec // the CRD bounds the rules
	cluster := p.Spec.ClusterRef.Name
	if err := r.ready(ctx, p, &status.Conditions, []string{cluster}, fmt.Sprintf("BindCluster %q runs a configuration with these %d rule(s).", cluster, len(p.Spec.Rules))); err != nil {
		return 0, err
	}
	if c := meta.FindStatusCondition(status.Conditions, bindv1alpha1.ConditionReady); c.Status == metav1.ConditionTrue {
		r.enforcePolicy(ctx, p, status)
	}
	return recheck, reconcileutil.PatchStatus(ctx, r.Client, p, func(x *bindv1alpha1.BindPolicy) { x.Status = *status })
}

// invalidConfig reports a view, ACL, DNSSEC policy or response policy the
// current rules refuse: renders leave it (and what names it) out, and a
// policy's rules are not brought to the pods.
func (r *ConfigStatusReconciler) invalidConfig(ctx context.Context, o client.Object, msg string) error {
	switch x := o.(type) {
	case *bindv1alpha1.BindView:
		status := x.Status.DeepCopy()
		status.ObservedGeneration = x.Generation
		reconcileutil.ReportInvalid(r.Recorder, x, &status.Conditions, msg)
		return reconcileutil.PatchStatus(ctx, r.Client, x, func(v *bindv1alpha1.BindView) { v.Status = *status })
	case *bindv1alpha1.BindACL:
		status := x.Status.DeepCopy()
		status.ObservedGeneration = x.Generation
		reconcileutil.ReportInvalid(r.Recorder, x, &status.Conditions, msg)
		return reconcileutil.PatchStatus(ctx, r.Client, x, func(a *bindv1alpha1.BindACL) { a.Status = *status })
	case *bindv1alpha1.BindDNSSECPolicy:
		status := x.Status.DeepCopy()
		status.ObservedGeneration = x.Generation
		reconcileutil.ReportInvalid(r.Recorder, x, &status.Conditions, msg)
		return reconcileutil.PatchStatus(ctx, r.Client, x, func(p *bindv1alpha1.BindDNSSECPolicy) { p.Status = *status })
	case *bindv1alpha1.BindPolicy:
		status := x.Status.DeepCopy()
		status.ObservedGeneration = x.Generation
		reconcileutil.ReportInvalid(r.Recorder, x, &status.Conditions, msg)
		return reconcileutil.PatchStatus(ctx, r.Client, x, func(p *bindv1alpha1.BindPolicy) { p.Status = *status })
	}
	return nil
}
