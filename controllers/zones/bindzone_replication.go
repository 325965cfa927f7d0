package zones

import (
	"context"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
)

// A secondary that misses the primary's NOTIFY (it was cut off the
// network, restarting, or the datagram was lost) would otherwise wait for
// the SOA refresh, 300 s, and BIND retries a NOTIFY only for seconds. After
// every change the operator writes to a zone, the bindzone-replication
// controller looks at the secondaries' serials until each serves the
// primary's, and NOTIFYs again (signed with the transfer key) every
// secondary that did not move since the previous look.
const (
	// replicationMinGap spaces two looks at one zone, however many changes
	// arrive between them (10,000 DNSRecords created at once make one look
	// a second, not one per record).
	replicationMinGap = time.Second
	// replicationMaxBackoff bounds the interval between looks at a zone
	// whose secondary stays behind without moving (it is down, or cut
	// off): once it is back it catches up within this.
	replicationMaxBackoff = 10 * time.Second
	// replicationQueryTimeout bounds the SOA queries of one look.
	replicationQueryTimeout = 2 * time.Second
)

// replication is what the bindzone-replication controller remembers per
// zone: the serial each secondary served at the previous look, when that
// was, and how long to wait for the next.
type replication struct {
	mu    sync.Mutex
	zones map[types.NamespacedName]*replicationState
}

type replicationState struct {
	looked  time.Time
	last    *serialLook // nil until the primary answered a look
	backoff time.Duration
}

// replicationReconciler looks at one zone's serials (see replication).
type replicationReconciler struct {
	*BindZoneReconciler
	state *replication
}

func (r replicationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if wait := r.state.wait(req.NamespacedName); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	var zone bindv1alpha1.BindZone
	if err := r.Client.Get(ctx, req.NamespacedName, &zone); err != nil {
		if apierrors.IsNotFound(err) {
			r.state.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !zone.Spec.IsPrimary() || zone.DeletionTimestamp != nil {
		r.state.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	pods, readKey, notifyKey, ok := r.replicationTarget(ctx, &zone)
	if !ok {
		// The zone's own reconcile reports why (no cluster, no primary
		// yet, no key): nothing to look at.
		r.state.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	// Pods answer SOA queries in milliseconds; a short bound keeps a
	// secondary that is down from holding a worker for long.
	qctx, cancel := context.WithTimeout(ctx, replicationQueryTimeout)
	defer cancel()
	zoneName := string(zone.Spec.ZoneName)
	var primary *clusterpods.PodEndpoint
	var secondaries []clusterpods.PodEndpoint
	for i := range pods {
		if pods[i].Primary {
			primary = &pods[i]
		} else {
			secondaries = append(secondaries, pods[i])
		}
	}
	if primary == nil || len(secondaries) == 0 {
		r.state.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	serial, err := clusterpods.SOASerial(qctx, primary.DNSAddr, readKey, zoneName)
	if err != nil {
		// The primary does not answer (restarting): look again later.
		return ctrl.Result{RequeueAfter: r.state.looked(req.NamespacedName, nil, true)}, nil
	}
	now := clusterpods.ServedSerials(qctx, secondaries, readKey, zoneName)
	behind := false
	for _, s := range now {
		behind = behind || s.Serial == nil || clusterpods.SerialNewer(serial, uint32(*s.Serial)) //nolint:gosec // serials are uint32 on the wire
	}
	if !behind {
		r.state.forget(req.NamespacedName)
		r.reportCaughtUp(ctx, &zone, serial, now)
		return ctrl.Result{}, nil
	}
	look := lookOf(serial, now)
	stuck := stuckSecondaries(r.state.previous(req.NamespacedName), look)
	if notifyKey != nil {
		notifyStuck(ctx, secondaries, stuck, zoneName, *notifyKey)
	}
	return ctrl.Result{RequeueAfter: r.state.looked(req.NamespacedName, look, len(stuck) > 0)}, nil
}

// replicationTarget is the zone's pods and the keys a look needs: readKey
// signs the SOA queries (a view's key; nil outside views), notifyKey the
// NOTIFYs (the view's key, else the cluster's transfer key K).
func (r replicationReconciler) replicationTarget(ctx context.Context, zone *bindv1alpha1.BindZone) (pods []clusterpods.PodEndpoint, readKey, notifyKey *dnsclient.Key, ok bool) {
	var cluster bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: zone.Spec.ClusterRef.Name}, &cluster); err != nil {
		return nil, nil, nil, false
	}
	if ref := zone.Spec.ViewRef; ref != nil {
		k, err := clusterpods.ViewKey(ctx, r.Client, &cluster, ref.Name)
		if err != nil {
			return nil, nil, nil, false
		}
		readKey, notifyKey = &k, &k
	} else if name, err := clusterpods.TransferKeyRef(ctx, r.Client, &cluster, zone); err == nil && name != "" {
		k, err := clusterpods.LoadUpdateKey(ctx, r.Client, zone.Namespace, name)
		if err != nil {
			return nil, nil, nil, false
		}
		notifyKey = &k
	}
	pods, err := r.Endpoints.Pods(ctx, &cluster)
	if err != nil {
		return nil, nil, nil, false
	}
	return pods, readKey, notifyKey, true
}

// serialLook is what one look saw: the primary's serial, the serial each
// secondary served by pod, and the secondaries that did not answer.
type serialLook struct {
	primary uint32
	served  map[string]int64
	silent  map[string]bool
}

// lookOf is the look that found the primary at primary and the
// secondaries at secs.
func lookOf(primary uint32, secs []bindv1alpha1.SecondaryZoneStatus) *serialLook {
	l := &serialLook{primary: primary, served: make(map[string]int64, len(secs)), silent: map[string]bool{}}
	for _, s := range secs {
		if s.Serial == nil {
			l.silent[s.Pod] = true
		} else {
			l.served[s.Pod] = *s.Serial
		}
	}
	return l
}

// stuckSecondaries names the secondaries that missed a NOTIFY: at the
// previous look (before) they were already behind the primary, or did not
// answer, and now they serve the same serial as then (or still none). A
// secondary first seen behind or silent (a pod that has just started) is
// given until the next look, and so is one that was in sync before: the
// primary has just changed and its NOTIFY is on its way, and re-sending
// then would race it for nothing. The first look (before nil) has nothing
// to compare with.
func stuckSecondaries(before, now *serialLook) map[string]bool {
	stuck := map[string]bool{}
	if before == nil {
		return stuck
	}
	for pod, served := range now.served {
		prev, seen := before.served[pod]
		if seen && prev == served && clusterpods.SerialNewer(before.primary, uint32(prev)) && clusterpods.SerialNewer(now.primary, uint32(served)) { //nolint:gosec // serials are uint32 on the wire
			stuck[pod] = true
		}
	}
	for pod := range now.silent {
		if before.silent[pod] {
			stuck[pod] = true
		}
	}
	return stuck
}

// wait is how long until the next look at zone may be taken: zero when it
// is due now.
func (s *replication) wait(zone types.NamespacedName) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.zones[zone]
	if !ok {
		return 0
	}
	return time.Until(st.looked.Add(replicationMinGap))
}

// previous is what the previous look saw; nil when there was none.
func (s *replication) previous(zone types.NamespacedName) *serialLook {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.zones[zone]; ok {
		return st.last
	}
	return nil
}

// reportCaughtUp reports Served a zone whose Ready still says
// Replicating, now that every secondary serves the primary's serial. The
// look just made is all that report needs, so it is a status patch here,
// at once, rather than a reconcile of the zone that waits its turn in the
// BindZone controller's queue. It does not spare the zone its next full
// reconcile: the recheck its Replicating reconcile left in that queue
// (replicatingRecheck) still comes, and finds it Served. The patch is
// made only if the zone has not changed since it was read (optimistic
// lock): a spec edit, or a status its own reconcile wrote meanwhile, wins.
// Otherwise the zone goes to the BindZone controller, which looks again and
// reports what it finds; so does a zone a secondary serves at a serial
// other than the primary's (newer: the primary lost its data), and a
// signed zone, whose status also carries the DS records only the full
// reconcile reads (observeDNSSEC). A full channel drops it: the zone's own
// recheck comes anyway.
func (r replicationReconciler) reportCaughtUp(ctx context.Context, zone *bindv1alpha1.BindZone, primary uint32, secs []bindv1alpha1.SecondaryZoneStatus) {
	if readyReason(zone) != bindv1alpha1.ReasonReplicating {
		return
	}
	if zone.Status.ObservedGeneration == zone.Generation && zone.Spec.DNSSECPolicyRef == nil {
		base := zone.DeepCopy()
		if observed(&zone.Status, primary, secs) {
			setServed(zone, &zone.Status)
			err := r.Client.Status().Patch(ctx, zone, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
			if err == nil || apierrors.IsNotFound(err) {
				return
			}
		}
	}
	if r.caughtUp == nil {
		return
	}
	select {
	case r.caughtUp <- event.GenericEvent{Object: zone}:
	default:
	}
}

// readyReason is the reason of a zone's Ready condition, "" without one.
func readyReason(zone *bindv1alpha1.BindZone) string {
	if c := meta.FindStatusCondition(zone.Status.Conditions, bindv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// looked records a look (now: what it saw, nil when the primary did not
// answer) and returns when to look again:
// replicationMinGap while the secondaries move, doubling up to
// replicationMaxBackoff while one is stuck.
func (s *replication) looked(zone types.NamespacedName, now *serialLook, stuck bool) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zones == nil {
		s.zones = map[types.NamespacedName]*replicationState{}
	}
	st, ok := s.zones[zone]
	switch {
	case !ok:
		st = &replicationState{backoff: replicationMinGap}
		s.zones[zone] = st
	case stuck:
		st.backoff = min(2*st.backoff, replicationMaxBackoff)
	default:
		st.backoff = replicationMinGap
	}
	st.looked = time.Now()
	if now != nil {
		st.last = now
	}
	return st.backoff
}

// forget drops a zone whose secondaries are in sync (or that is gone).
func (s *replication) forget(zone types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.zones, zone)
}

// recordApplied tells whether a DNSRecord event may have changed its
// zone's data: what it applied changed. Not a delete: the data goes only
// when its tombstone is finished, which the controller hears of too.
var recordApplied = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	DeleteFunc: func(event.DeleteEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*bindv1alpha1.DNSRecord), e.ObjectNew.(*bindv1alpha1.DNSRecord)
		return !slices.Equal(o.Status.AppliedValues, n.Status.AppliedValues) || ptr.Deref(o.Status.AppliedTTL, -1) != ptr.Deref(n.Status.AppliedTTL, -1)
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// setupReplication registers the bindzone-replication controller: a look
// when a DNSRecord applied data, when a deleted one's data is gone
// (DeletedRecords) and when the zone's spec changed, then until its
// secondaries serve the primary's serial.
func (r *BindZoneReconciler) setupReplication(mgr ctrl.Manager) error {
	// A zone that starts Replicating is looked at then too: the look its
	// spec change triggered may have come before the primary served the
	// new serial, and only a look reports it caught up (reportCaughtUp).
	startsReplicating := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return readyReason(e.ObjectNew.(*bindv1alpha1.BindZone)) == bindv1alpha1.ReasonReplicating &&
			readyReason(e.ObjectOld.(*bindv1alpha1.BindZone)) != bindv1alpha1.ReasonReplicating
	}}
	zoneOfRecord := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: o.(*bindv1alpha1.DNSRecord).ZoneKey()}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindv1alpha1.BindZone{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, startsReplicating))).
		Watches(&bindv1alpha1.DNSRecord{}, zoneOfRecord, builder.WithPredicates(recordApplied)).
		WatchesRawSource(source.Channel(r.Deleted.Subscribe(), zoneOfRecord)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Named("bindzone-replication").
		Complete(replicationReconciler{BindZoneReconciler: r, state: &replication{}})
}
