package dnsrecords

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/internal/recordindex"
	"git.unkin.net/unkin/bind-operator/records"
	"git.unkin.net/unkin/bind-operator/render"
)

// A Primary zone whose update key is guarded (render.OperatorUpdateKey:
// the operator signs with another key) has named ask the primary's agent
// about every record an UPDATE signed with the update key touches. The
// agent refuses the record sets the operator owns, so external-dns,
// cert-manager or nsupdate get REFUSED there instead of overwriting a
// DNSRecord or an inline record that the operator would then fight over
// (docs/behaviours.md, "Owned record sets"). ZoneOwners tells the agent
// which sets those are.
//
// The agent also keeps, for every primary zone with DNSRecords, guarded
// or not, the values each DNSRecord wrote: DNSRecords carry no finalizer,
// so that record, on the primary's volume, is how an operator that starts
// finds the records deleted while none ran (sweep).

// ownersResync is how often a zone's owners are sent again although they
// did not change: a primary that lost its data volume under the same
// address learns them back.
const ownersResync = 10 * time.Minute

// ownersWindow: a DNSRecord change is pushed at once, and the changes
// that follow it within a second go out together at the end of that
// second. Each push lists and sorts every owned set of the zone: pushed
// per record, 10,000 records created in a row cost O(n²), the third of the
// manager's allocations in the records bench (issue 15, item 4), while a
// lone new DNSRecord is still guarded as soon as before.
const ownersWindow = time.Second

// ZoneOwners sends each primary zone's owned record sets to its primary's
// agent, skipping a push that would repeat the last one to the same agent.
type ZoneOwners struct {
	client    client.Reader
	records   *recordindex.Index // recordindex.Zones
	deleted   *DeletedRecords
	endpoints clusterpods.PodEndpoints
	agents    *clusterpods.AgentClients
	servers   clusterpods.ZoneServerResolver
	updates   *batch.Updates
	// rechecks: a zone the current rules refuse sends nothing; its agent
	// keeps the owners it had (reconcileutil/recheck.go).
	rechecks *reconcileutil.Rechecks

	mu   sync.Mutex
	sent map[types.NamespacedName]ownersSent
	// busy serialises the pushes of one zone (the BindZone reconcile and
	// the owners controller both push): the sets read last are the sets
	// sent last, so an older read never overwrites a newer one.
	busy sync.Map // types.NamespacedName → *sync.Mutex

	stored storedOwners
}

// NewZoneOwners sends zones' owned sets with the BindZone controller's
// reader, DNSRecord index by zone (recordindex.Zones), tombstones, pod
// endpoints, agent clients, zone servers, UPDATE batcher and rechecks.
func NewZoneOwners(c client.Reader, records *recordindex.Index, deleted *DeletedRecords, endpoints clusterpods.PodEndpoints, agents *clusterpods.AgentClients, servers clusterpods.ZoneServerResolver, updates *batch.Updates, rechecks *reconcileutil.Rechecks) *ZoneOwners {
	return &ZoneOwners{client: c, records: records, deleted: deleted, endpoints: endpoints, agents: agents, servers: servers, updates: updates, rechecks: rechecks}
}

type ownersSent struct {
	agent  string // agentKey of the primary
	digest [32]byte
	at     time.Time
	// skipped: nothing was sent, the zone had nothing to guard or record.
	skipped bool
}

// Push sends zone's owners to its primary's agent unless it holds them
// already. A zone that is not guarded and has no DNSRecords needs nothing,
// unless the agent stores owners for it from earlier.
func (o *ZoneOwners) Push(ctx context.Context, zone *bindv1alpha1.BindZone) error {
	key := client.ObjectKeyFromObject(zone)
	l, _ := o.busy.LoadOrStore(key, &sync.Mutex{})
	l.(*sync.Mutex).Lock()
	defer l.(*sync.Mutex).Unlock()
	req, cluster, ok, err := o.request(ctx, zone)
	if err != nil || !ok {
		return err
	}
	pods, err := o.endpoints.Pods(ctx, cluster)
	if err != nil {
		return err
	}
	if len(pods) == 0 || !pods[0].Primary {
		return nil // the pod watch brings the zone back once the primary has an address
	}
	addr := pods[0].AgentAddr
	sent := ownersSent{agent: clusterpods.AgentKey(cluster, addr), digest: ownersDigest(req), at: time.Now()}
	o.mu.Lock()
	last, had := o.sent[key]
	o.mu.Unlock()
	had = had && last.agent == sent.agent
	if had && last.digest == sent.digest && time.Since(last.at) < ownersResync {
		return nil
	}
	ac, err := o.agents.Get(ctx, cluster, addr)
	if err != nil {
		return err
	}
	stored, err := o.stored.zones(ctx, ac, sent.agent)
	if err != nil {
		return err
	}
	guarded := len(req.UpdateKeys) > 0
	if stored.legacy {
		if !guarded {
			// An agent of an earlier release takes no owners without keys.
			o.remember(key, sent, true)
			return nil
		}
		req = withoutValues(req)
	}
	ref := agent.ZoneRef{View: req.View, Zone: req.Zone}
	if !had && stored.has(ref) {
		// The first push to this agent since the operator started (or
		// since the primary moved): its sets may name DNSRecords that were
		// deleted while no operator watched.
		if err := o.sweep(ctx, zone, ac, ref, req); err != nil {
			return err
		}
	}
	if !guarded && !hasRecordValues(req) && !stored.has(ref) && (!had || last.skipped) {
		// Nothing to guard and nothing to record, now or before: the
		// zones of a large catalog without DNSRecords cost no call.
		o.remember(key, sent, true)
		return nil
	}
	if _, err := ac.SetOwners(ctx, req); err != nil {
		return fmt.Errorf("telling the agent of the primary %s which record sets of zone %s the operator owns: %w", pods[0].Pod, req.Zone, err)
	}
	o.remember(key, sent, false)
	return nil
}

// remember records what was sent for key, or that nothing needed sending.
func (o *ZoneOwners) remember(key types.NamespacedName, sent ownersSent, skipped bool) {
	sent.skipped = skipped
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sent == nil {
		o.sent = map[types.NamespacedName]ownersSent{}
	}
	o.sent[key] = sent
}

// withoutValues is req as an agent of an earlier release takes it: it
// refuses fields it does not know.
func withoutValues(req agent.OwnersRequest) agent.OwnersRequest {
	sets := slices.Clone(req.Sets)
	for i := range sets {
		sets[i].Values = nil
	}
	req.Sets = sets
	return req
}

// hasRecordValues tells whether req records what some DNSRecord wrote.
func hasRecordValues(req agent.OwnersRequest) bool {
	return slices.ContainsFunc(req.Sets, func(s agent.OwnedSet) bool { return len(s.Values) > 0 })
}

// ownersDigest identifies what a push would send, without encoding it
// (the request of a zone of 10,000 records is about 600 KB of JSON): each
// field length-prefixed, so no two requests share a digest.
func ownersDigest(req agent.OwnersRequest) [32]byte {
	h := sha256.New()
	var n [4]byte
	count := func(c int) {
		binary.BigEndian.PutUint32(n[:], uint32(c))
		_, _ = h.Write(n[:])
	}
	field := func(s string) {
		count(len(s))
		_, _ = io.WriteString(h, s)
	}
	field(req.View)
	field(req.Zone)
	count(len(req.UpdateKeys))
	for _, k := range req.UpdateKeys {
		field(k)
	}
	count(len(req.Sets))
	for _, set := range req.Sets {
		field(set.Name)
		field(set.Type)
		count(len(set.Values))
		for _, v := range set.Values {
			field(v)
		}
	}
	return [32]byte(h.Sum(nil))
}

// forget drops what was sent for a deleted zone (the agent drops its
// owners with the zone).
func (o *ZoneOwners) forget(key types.NamespacedName) {
	o.mu.Lock()
	delete(o.sent, key)
	o.mu.Unlock()
	o.busy.Delete(key)
}

// request builds the owners request of a primary zone; ok is false for a
// zone that has none. UpdateKeys is empty when the zone is not guarded:
// the agent then only keeps the record.
func (o *ZoneOwners) request(ctx context.Context, zone *bindv1alpha1.BindZone) (agent.OwnersRequest, *bindv1alpha1.BindCluster, bool, error) {
	if !zone.Spec.IsPrimary() || zone.DeletionTimestamp != nil || o.rechecks.Check(zone) != "" {
		return agent.OwnersRequest{}, nil, false, nil
	}
	var cluster bindv1alpha1.BindCluster
	if err := o.client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: zone.Spec.ClusterRef.Name}, &cluster); err != nil {
		return agent.OwnersRequest{}, nil, false, client.IgnoreNotFound(err)
	}
	view := ""
	if ref := zone.Spec.ViewRef; ref != nil {
		view = ref.Name
	}
	keys, err := o.guardedKeys(ctx, &cluster, zone)
	if err != nil {
		return agent.OwnersRequest{}, nil, false, err
	}
	sets, err := o.ownedSets(ctx, zone)
	if err != nil {
		return agent.OwnersRequest{}, nil, false, err
	}
	return agent.OwnersRequest{View: view, Zone: records.CanonicalZone(string(zone.Spec.ZoneName)), UpdateKeys: keys, Sets: sets}, &cluster, true, nil
}

// guardedKeys are the update keys whose UPDATEs the agent judges in
// zone: its update key when the operator signs with another one, else
// none.
func (o *ZoneOwners) guardedKeys(ctx context.Context, cluster *bindv1alpha1.BindCluster, zone *bindv1alpha1.BindZone) ([]string, error) {
	if zone.Spec.UpdateKeyRef == nil {
		return nil, nil
	}
	updKey, err := o.keyName(ctx, zone.Namespace, zone.Spec.UpdateKeyRef.Name)
	if err != nil {
		return nil, err
	}
	viewKey, xfrKey := "", ""
	if ref := zone.Spec.ViewRef; ref != nil {
		viewKey = bindv1alpha1.ViewKeyName(ref.Name)
	} else {
		ref, err := clusterpods.TransferKeyRef(ctx, o.client, cluster, zone)
		if err != nil {
			return nil, err
		}
		if ref != "" {
			if xfrKey, err = o.keyName(ctx, zone.Namespace, ref); err != nil {
				return nil, err
			}
		}
	}
	if _, guarded := render.OperatorUpdateKey(viewKey, xfrKey, updKey); !guarded {
		return nil, nil
	}
	return []string{updKey}, nil
}

// keyName is the BIND name of a BindTSIGKey.
func (o *ZoneOwners) keyName(ctx context.Context, namespace, name string) (string, error) {
	var k bindv1alpha1.BindTSIGKey
	if err := o.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &k); err != nil {
		return "", fmt.Errorf("BindTSIGKey %q: %w", name, err)
	}
	_, keyName, _ := clusterpods.TSIGDefaults(&k)
	return keyName, nil
}

// ownedSets are the record sets the operator writes in a zone: the apex
// SOA and NS (seeded, then kept from spec.soa), spec.records, and the
// DNSRecords that name the zone and that it admits, from any namespace,
// with the values each wrote, and those of the deleted ones whose data is
// not gone yet; sorted, one per name and type. A DNSRecord the zone does
// not admit (admissions) owns nothing: its set would keep the zone's own
// update key from a name that is not the operator's.
func (o *ZoneOwners) ownedSets(ctx context.Context, zone *bindv1alpha1.BindZone) ([]agent.OwnedSet, error) {
	name := string(zone.Spec.ZoneName)
	key := client.ObjectKeyFromObject(zone)
	recs, err := o.records.Get(ctx, recordindex.Zone(key))
	if err != nil {
		return nil, err
	}
	deleted := o.deleted.ofZone(key)
	// A slice sorted and compacted, not a set: the push runs while
	// thousands of records arrive, and a map of them was its largest
	// allocation after the list.
	sets := slices.Grow(zoneOwnSets(zone), len(recs)+len(deleted))
	admitted := newAdmissions(o.client, zone)
	for _, rec := range slices.Concat(recs, deleted) {
		if ok, err := admitted.admits(ctx, rec); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		set := agent.OwnedSet{Name: records.FQDN(name, string(rec.Spec.Name)), Type: strings.ToUpper(string(rec.Spec.Type))}
		if !meta.IsStatusConditionTrue(rec.Status.Conditions, bindv1alpha1.ConditionConflict) {
			set.Values = rec.Status.AppliedValues
		}
		sets = append(sets, set)
	}
	// Per name and type, the set with values first: it is the one kept.
	slices.SortFunc(sets, func(a, b agent.OwnedSet) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Type, b.Type), cmp.Compare(len(b.Values), len(a.Values)))
	})
	sets = slices.CompactFunc(sets, func(a, b agent.OwnedSet) bool { return a.Name == b.Name && a.Type == b.Type })
	if len(sets) > agent.MaxOwnedSets {
		return nil, fmt.Errorf("zone %s has %d record sets the operator owns, more than the %d its agent takes", name, len(sets), agent.MaxOwnedSets)
	}
	return sets, nil
}

// zoneOwnSets are the sets a zone writes itself: the apex SOA and NS
// (seeded, then kept from spec.soa) and spec.records, without values.
func zoneOwnSets(zone *bindv1alpha1.BindZone) []agent.OwnedSet {
	name := string(zone.Spec.ZoneName)
	apex := records.ZoneFQDN(name)
	sets := make([]agent.OwnedSet, 0, 2+len(zone.Spec.Records))
	sets = append(sets, agent.OwnedSet{Name: apex, Type: "SOA"}, agent.OwnedSet{Name: apex, Type: "NS"})
	for _, rs := range zone.Spec.Records {
		sets = append(sets, agent.OwnedSet{Name: records.FQDN(name, string(rs.Name)), Type: strings.ToUpper(string(rs.Type))})
	}
	return sets
}

// ownersReconciler pushes a zone's owners when its DNSRecords, its spec,
// its cluster or its primary change, and every ownersResync.
type ownersReconciler struct{ *ZoneOwners }

func (r ownersReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var zone bindv1alpha1.BindZone
	if err := r.client.Get(ctx, req.NamespacedName, &zone); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.Push(ctx, &zone); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: ownersResync}, nil
}

// recordOwnsOtherSets tells whether a DNSRecord event changes its zone's
// owned sets: created, a new name, type or zone, or new values written.
// Not a delete: the record's set stays owned until its data is gone, and
// its finished tombstone brings the zone back (SetupWithManager).
var recordOwnsOtherSets = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*bindv1alpha1.DNSRecord), e.ObjectNew.(*bindv1alpha1.DNSRecord)
		return o.Spec.Name != n.Spec.Name || o.Spec.Type != n.Spec.Type || o.ZoneKey() != n.ZoneKey() ||
			!slices.Equal(o.Status.AppliedValues, n.Status.AppliedValues)
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// SetupWithManager registers the controller that keeps the agents'
// owners current (named bindzone-owners); the BindZone controller calls it
// with its zonesOf and podsChanged, and o shares its agent clients and pod
// endpoints (NewZoneOwners).
func (o *ZoneOwners) SetupWithManager(mgr ctrl.Manager, zonesOf func(ctx context.Context, namespace, cluster string) []reconcile.Request, podsChanged predicate.Funcs) error {
	zoneOfRecord := reconcileutil.EnqueueThrottled(ownersWindow, clock.RealClock{}, func(o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: o.(*bindv1alpha1.DNSRecord).ZoneKey()}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindv1alpha1.BindZone{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&bindv1alpha1.DNSRecord{}, zoneOfRecord, builder.WithPredicates(recordOwnsOtherSets)).
		WatchesRawSource(source.Channel(o.deleted.Subscribe(), zoneOfRecord)).
		Watches(&bindv1alpha1.BindCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return zonesOf(ctx, o.GetNamespace(), o.GetName())
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			if cluster := o.GetLabels()[bindv1alpha1.LabelCluster]; cluster != "" {
				return zonesOf(ctx, o.GetNamespace(), cluster)
			}
			return nil
		}), builder.WithPredicates(podsChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Named("bindzone-owners").
		Complete(ownersReconciler{o})
}
