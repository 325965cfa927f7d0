package zones

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/dnsrecords"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/internal/recordindex"
	"git.unkin.net/unkin/bind-operator/render"
)

// zoneFinalizer removes a primary zone from the pods (delzone) and from its
// catalog before the BindZone goes away.
const zoneFinalizer = "bind.unkin.net/bindzone"

// BindZoneReconciler runs primary zones on a cluster's primary pod:
//
//   - the zone is added through the primary's agent (rndc addzone with the
//     seed SOA; modzone when the clause changes), with allow-update for the
//     operator key (OperatorKeyRef), keyed allow-transfer for the
//     secondaries and `also-notify { <secondary pod IP> key "K"; }` that is
//     re-applied whenever a secondary's pod IP changes (never in named.conf);
//   - spec.records go to named as guarded, batched UPDATEs (shared with the
//     DNSRecord controller) and are compared with an AXFR periodically
//     (ResyncPeriod) and on demand (annotation bind.unkin.net/resync);
//     declared data is repaired, data nobody declared is never touched;
//   - a zone in a catalog gets a PTR <CatalogMemberLabel>.zones.<catalog>
//     (UPDATE signed with the catalog's key); a zone outside catalogs is
//     added on every secondary through its agent, transferring from the
//     primary Service keyed with K;
//   - status reports the primary's serial and, per secondary, whether it
//     serves it.
//
// Secondary, Stub and Forward zones live in named.conf (render); this
// reconciler only reports them.
type BindZoneReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Servers resolves where UPDATEs go; nil means ClusterResolver over
	// Endpoints.
	Servers clusterpods.ZoneServerResolver
	// Endpoints locates the pods; nil means KubePods.
	Endpoints clusterpods.PodEndpoints
	// Updates is the shared UPDATE batcher; nil creates one.
	Updates *batch.Updates
	// Deleted are the DNSRecord reconciler's tombstones (DeletedRecords):
	// their sets stay owned until their data is gone. Nil makes an empty
	// one, for a manager that runs no DNSRecord controller.
	Deleted *dnsrecords.DeletedRecords
	// Zones coalesces zone ensures per pod; nil creates one that stops
	// with the manager.
	Zones *batch.ZoneBatcher
	// Paths are the pods' mount points (render.DefaultPaths when zero).
	Paths render.Paths
	// ResyncPeriod bounds how stale a drift check may be; zero means
	// DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// MaxConcurrentReconciles defaults to 32. A new zone's reconcile is a
	// chain of round trips (agent, SOA, catalog UPDATE, NOTIFY, status),
	// so workers wait more than they compute: with 8, 10,000 zones in one
	// catalog were not all Ready after 9 minutes (1,062 Served after 7);
	// with 32 all were Ready in 9 min 22 s, and 2,000 in 1 min 19 s
	// instead of 1 min 38 s (docs/behaviours.md, "Scale").
	MaxConcurrentReconciles int
	// Rechecks runs the current admission rules over the zone and what its
	// clause gathers (docs/behaviours.md, "Stored objects are
	// re-checked"); nil re-checks nothing.
	Rechecks *reconcileutil.Rechecks
	// ClusterDomain is the cluster DNS domain of Service names, for the
	// SOA MNAME of zones that name none; empty means
	// bindv1alpha1.DefaultClusterDomain.
	ClusterDomain string

	agents *clusterpods.AgentClients
	// checkedSerials: zone UID -> the primary's serial at the zone's last
	// full drift check (unchangedSinceCheck).
	checkedSerials sync.Map
	// refusedSeeds: zone UID -> seedRefusal, the agent's verdict on the
	// zone file of spec.seedFrom (seedFrom is immutable, and the verdict
	// is on its bytes).
	refusedSeeds sync.Map
	owners       *dnsrecords.ZoneOwners
	// caughtUp carries the zones the bindzone-replication controller saw
	// served by every secondary while their Ready said Replicating, and
	// could not report Served itself (reportCaughtUp).
	caughtUp chan event.GenericEvent
}

// replicatingRecheck is how soon a zone whose secondaries do not serve
// the primary's serial yet is reconciled again if nothing else triggers
// it. The bindzone-replication controller watches the secondaries and
// reports the zone Served as soon as they serve it (reportCaughtUp); this
// is the fallback. A full reconcile of every Replicating zone every 2 s, its
// earlier pace, starved new zones once thousands were waiting for their
// catalog to reach the secondaries.
const replicatingRecheck = 15 * time.Second

// Finalizers are written with a merge patch, status with a status patch.
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindzones,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindzones/status,verbs=patch
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindzones/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update

// Reconcile applies one BindZone.
func (r *BindZoneReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var zone bindv1alpha1.BindZone
	if err := r.Client.Get(ctx, req.NamespacedName, &zone); err != nil {
		return ctrl.Result{}, r.Rechecks.Gone(&zone, req.NamespacedName, err)
	}
	if zone.DeletionTimestamp != nil {
		return r.finalize(ctx, &zone)
	}
	if msg := r.Rechecks.Check(&zone); msg != "" {
		return ctrl.Result{}, r.invalidZone(ctx, &zone, msg)
	}
	status := zone.Status.DeepCopy()
	if zone.Spec.Type == bindv1alpha1.ZoneSecondary {
		status.ObservedGeneration = zone.Generation
		res := r.observeSecondary(ctx, &zone, status)
		return res, reconcileutil.PatchStatus(ctx, r.Client, &zone, func(z *bindv1alpha1.BindZone) { z.Status = *status })
	}
	if !zone.Spec.IsPrimary() {
		status.ObservedGeneration = zone.Generation
		setZoneCondition(&zone, status, metav1.ConditionTrue, bindv1alpha1.ReasonInConfig,
			fmt.Sprintf("%s zones are declared in named.conf by BindCluster %q.", zone.Spec.Type, zone.Spec.ClusterRef.Name))
		return ctrl.Result{}, reconcileutil.PatchStatus(ctx, r.Client, &zone, func(z *bindv1alpha1.BindZone) { z.Status = *status })
	}
	if err := reconcileutil.AddFinalizer(ctx, r.Client, &zone, zoneFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.apply(ctx, &zone, status)
	status.ObservedGeneration = zone.Generation
	if uerr := reconcileutil.PatchStatus(ctx, r.Client, &zone, func(z *bindv1alpha1.BindZone) { z.Status = *status }); uerr != nil {
		return ctrl.Result{}, errors.Join(err, uerr)
	}
	if err == nil && res.RequeueAfter == 0 {
		res.RequeueAfter = r.resyncPeriod()
	}
	return res, err
}

func (r *BindZoneReconciler) resyncPeriod() time.Duration {
	if r.ResyncPeriod > 0 {
		return r.ResyncPeriod
	}
	return reconcileutil.DefaultResyncPeriod
}

func (r *BindZoneReconciler) apply(ctx context.Context, zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus) (ctrl.Result, error) {
	t, err := r.target(ctx, zone)
	if err != nil {
		return r.report(zone, status, err)
	}
	// Before the zone can be added to a primary without its keys: named
	// would make new ones.
	keys, err := r.keysSecret(ctx, zone)
	if err != nil {
		return r.report(zone, status, err)
	}
	if err := r.restoreKeys(ctx, zone, t, keys); err != nil {
		return r.report(zone, status, err)
	}
	// Before the ensure, which would otherwise write the small seed.
	if err := r.seed(ctx, zone, t); err != nil {
		return r.report(zone, status, err)
	}
	added, err := r.ensureOnPods(ctx, zone, t)
	if err != nil {
		return r.report(zone, status, err)
	}
	// Before the zone reports Ready: a client that waits for it finds its
	// update key working, and the owned sets guarded.
	if err := r.owners.Push(ctx, zone); err != nil {
		return r.report(zone, status, &problem{bindv1alpha1.ReasonAgentError, agent.Bound(err.Error()), 10 * time.Second})
	}
	if added {
		now := metav1.Now()
		status.PrimarySeededAt = &now
	}
	if due, periodic := r.recordsDue(zone, status, added); due && periodic && r.untouchedSinceCheck(ctx, zone, t, status) {
		status.LastDriftCheck = &metav1.Time{Time: time.Now()}
	} else if due {
		if err := r.syncRecords(ctx, zone, t, status); err != nil {
			return r.report(zone, status, err)
		}
		if _, err := r.ensureSOA(ctx, zone, t); err != nil {
			return r.report(zone, status, err)
		}
	}
	if err := r.ensureCatalogMember(ctx, zone, t); err != nil {
		return r.report(zone, status, err)
	}
	inSync := r.observeSerials(ctx, t, status)
	r.observeDNSSEC(ctx, zone, t, status)
	keysAgain := r.keepKeys(ctx, zone, t, status, keys)
	res, err := r.settle(ctx, zone, t, status, inSync)
	if err == nil && keysAgain > 0 && (res.RequeueAfter == 0 || keysAgain < res.RequeueAfter) {
		res.RequeueAfter = keysAgain
	}
	return res, err
}

// settle catches the serial up and reports how the zone is served.
func (r *BindZoneReconciler) settle(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, status *bindv1alpha1.BindZoneStatus, inSync bool) (ctrl.Result, error) {
	if again, err := r.catchUpSerial(ctx, zone, t, status); err != nil {
		return r.report(zone, status, err)
	} else if again {
		inSync = r.observeSerials(ctx, t, status)
	}
	if len(status.RejectedRecords) > 0 {
		first := status.RejectedRecords[0]
		setZoneCondition(zone, status, metav1.ConditionFalse, bindv1alpha1.ReasonRecordsRefused,
			fmt.Sprintf("%d record set(s) of spec.records were not applied; first %s %s: %s %s (the others are served)", len(status.RejectedRecords), first.Name, first.Type, first.Rcode, first.Message))
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	failing, behind := r.observeExternal(ctx, zone, t, status)
	if !inSync {
		r.renotify(ctx, zone, t, status)
	}
	serial := ptr.Deref(status.Serial, 0)
	switch {
	case len(failing) > 0 && inSync:
		setZoneCondition(zone, status, metav1.ConditionFalse, bindv1alpha1.ReasonExternalSecondaryFailing,
			fmt.Sprintf("every pod of the cluster serves serial %d; external secondaries that do not serve the zone: %s", serial, externalSummary(failing)))
		return ctrl.Result{RequeueAfter: externalRecheck}, nil
	case len(failing) > 0:
		setZoneCondition(zone, status, metav1.ConditionFalse, bindv1alpha1.ReasonExternalSecondaryFailing,
			fmt.Sprintf("the primary serves serial %d; external secondaries that do not serve the zone: %s", serial, externalSummary(failing)))
	case !inSync:
		setZoneCondition(zone, status, metav1.ConditionTrue, bindv1alpha1.ReasonReplicating, fmt.Sprintf("the primary serves serial %d; some secondaries do not serve it yet", serial))
	case len(behind) > 0:
		setZoneCondition(zone, status, metav1.ConditionTrue, bindv1alpha1.ReasonReplicating, fmt.Sprintf("the primary serves serial %d; external secondaries behind it: %s", serial, externalSummary(behind)))
	default:
		setServed(zone, status)
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: replicatingRecheck}, nil
}

// finalize removes the zone from its catalog and from the pods, then lets
// the object go. A cluster that is gone releases it at once; failures are
// retried for DeleteGiveUp, never forever.
func (r *BindZoneReconciler) finalize(ctx context.Context, zone *bindv1alpha1.BindZone) (ctrl.Result, error) {
	r.checkedSerials.Delete(zone.UID)
	r.refusedSeeds.Delete(zone.UID)
	if !controllerutil.ContainsFinalizer(zone, zoneFinalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.removeFromPods(ctx, zone); err != nil {
		if time.Since(zone.DeletionTimestamp.Time) < reconcileutil.DeleteGiveUp {
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
		r.Recorder.Eventf(zone, nil, corev1.EventTypeWarning, "DeleteAbandoned", "Delete", "gave up removing zone %s from the cluster after %s: %v", zone.Spec.ZoneName, reconcileutil.DeleteGiveUp, err)
	}
	return ctrl.Result{}, reconcileutil.RemoveFinalizer(ctx, r.Client, zone, zoneFinalizer)
}

// Field index of BindZones by cluster.
const indexZoneCluster = "spec.clusterRef.name"

// SetupWithManager registers the reconciler: zones re-apply when their
// spec or annotations change, when their cluster changes, and when a pod of
// their cluster gets a new IP (also-notify follows the secondaries).
func (r *BindZoneReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("bind-operator")
	}
	if r.Endpoints == nil {
		r.Endpoints = clusterpods.KubePods{Client: mgr.GetClient()}
	}
	if r.Servers == nil {
		r.Servers = clusterpods.ClusterResolver{Client: mgr.GetClient(), Endpoints: r.Endpoints}
	}
	if r.Updates == nil {
		r.Updates = batch.NewUpdates(0, 0)
	}
	if r.Zones == nil {
		r.Zones = batch.NewZoneBatcher(batch.ZoneBatchOptions{})
		if err := mgr.Add(closeOnStop{r.Zones}); err != nil {
			return err
		}
	}
	if r.Paths == (render.Paths{}) {
		r.Paths = render.DefaultPaths()
	}
	r.agents = &clusterpods.AgentClients{Client: mgr.GetClient()}
	zoneRecords, err := recordindex.Zones(context.Background(), mgr.GetCache())
	if err != nil {
		return err
	}
	if r.Deleted == nil {
		r.Deleted = dnsrecords.NewDeletedRecords()
	}
	r.owners = dnsrecords.NewZoneOwners(mgr.GetClient(), zoneRecords, r.Deleted, r.Endpoints, r.agents, r.Servers, r.Updates, r.Rechecks)
	workers := r.MaxConcurrentReconciles
	if workers == 0 {
		workers = 32
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &bindv1alpha1.BindZone{}, indexZoneCluster, func(o client.Object) []string {
		return []string{o.(*bindv1alpha1.BindZone).Spec.ClusterRef.Name}
	}); err != nil {
		return err
	}
	zonesOf := func(ctx context.Context, namespace, cluster string) []reconcile.Request {
		var list bindv1alpha1.BindZoneList
		// Only the keys are read: a pod event of a cluster with 10,000
		// zones does not copy them all.
		if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{indexZoneCluster: cluster}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, z := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&z)})
		}
		return reqs
	}
	podsChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
			return o.Status.PodIP != n.Status.PodIP
		},
	}
	if err := r.owners.SetupWithManager(mgr, zonesOf, podsChanged); err != nil {
		return err
	}
	r.caughtUp = make(chan event.GenericEvent, 1024)
	if err := r.setupReplication(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindv1alpha1.BindZone{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{},
			predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return e.ObjectNew.GetDeletionTimestamp() != nil }},
		))).
		Watches(&bindv1alpha1.BindCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return zonesOf(ctx, o.GetNamespace(), o.GetName())
		}), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*bindv1alpha1.BindCluster), e.ObjectNew.(*bindv1alpha1.BindCluster)
			return o.Status.PrimaryAddress != n.Status.PrimaryAddress || o.Generation != n.Generation
		}})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			cluster := o.GetLabels()[bindv1alpha1.LabelCluster]
			if cluster == "" {
				return nil
			}
			return zonesOf(ctx, o.GetNamespace(), cluster)
		}), builder.WithPredicates(podsChanged)).
		WatchesRawSource(source.Channel(r.caughtUp, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Named("bindzone").
		Complete(r)
}

// closeOnStop closes a ZoneBatcher when the manager stops, so no sender
// goroutine outlives it. It runs on every replica, leader or not: a
// batcher has nothing to do until a reconcile uses it.
type closeOnStop struct{ b *batch.ZoneBatcher }

func (c closeOnStop) Start(ctx context.Context) error {
	<-ctx.Done()
	c.b.Close()
	return nil
}

func (closeOnStop) NeedLeaderElection() bool { return false }

// invalidZone reports a zone the current rules refuse. Nothing reaches its
// pods: no addzone or modzone, no record UPDATE, no catalog change and no
// owned sets; what they serve stays. Deleting it still removes it.
func (r *BindZoneReconciler) invalidZone(ctx context.Context, zone *bindv1alpha1.BindZone, msg string) error {
	status := zone.Status.DeepCopy()
	status.ObservedGeneration = zone.Generation
	reconcileutil.ReportInvalid(r.Recorder, zone, &status.Conditions, msg)
	return reconcileutil.PatchStatus(ctx, r.Client, zone, func(z *bindv1alpha1.BindZone) { z.Status = *status })
}
