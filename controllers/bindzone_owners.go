package controllers

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

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
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
// (docs/behaviours.md, "Owned record sets"). zoneOwners tells the agent
// which sets those are.

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

// zoneOwners sends each guarded zone's owned record sets to its primary's
// agent, skipping a push that would repeat the last one to the same agent.
type zoneOwners struct {
	client    client.Reader
	records   *recordindex.Index // recordindex.Zones
	endpoints PodEndpoints
	agents    *agentClients

	mu   sync.Mutex
	sent map[types.NamespacedName]ownersSent
	// busy serialises the pushes of one zone (the BindZone reconcile and
	// the owners controller both push): the sets read last are the sets
	// sent last, so an older read never overwrites a newer one.
	busy sync.Map // types.NamespacedName → *sync.Mutex
}

type ownersSent struct {
	agent  string // agentKey of the primary
	digest [32]byte
	at     time.Time
}

// push sends zone's owners to its primary's agent unless it holds them
// already. Zones that are not guarded need nothing.
func (o *zoneOwners) push(ctx context.Context, zone *bindv1alpha1.BindZone) error {
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
	sent := ownersSent{agent: agentKey(cluster, addr), digest: ownersDigest(req), at: time.Now()}
	o.mu.Lock()
	last, had := o.sent[key]
	o.mu.Unlock()
	if had && last.agent == sent.agent && last.digest == sent.digest && time.Since(last.at) < ownersResync {
		return nil
	}
	ac, err := o.agents.get(ctx, cluster, addr)
	if err != nil {
		return err
	}
	if _, err := ac.SetOwners(ctx, req); err != nil {
		return fmt.Errorf("telling the agent of the primary %s which record sets of zone %s the operator owns: %w", pods[0].Pod, req.Zone, err)
	}
	o.mu.Lock()
	if o.sent == nil {
		o.sent = map[types.NamespacedName]ownersSent{}
	}
	o.sent[key] = sent
	o.mu.Unlock()
	return nil
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
	}
	return [32]byte(h.Sum(nil))
}

// forget drops what was sent for a deleted zone (the agent drops its
// owners with the zone).
func (o *zoneOwners) forget(key types.NamespacedName) {
	o.mu.Lock()
	delete(o.sent, key)
	o.mu.Unlock()
	o.busy.Delete(key)
}

// request builds the owners request of a guarded zone; ok is false for a
// zone that is not guarded.
func (o *zoneOwners) request(ctx context.Context, zone *bindv1alpha1.BindZone) (agent.OwnersRequest, *bindv1alpha1.BindCluster, bool, error) {
	if !zone.Spec.IsPrimary() || zone.Spec.UpdateKeyRef == nil || zone.DeletionTimestamp != nil {
		return agent.OwnersRequest{}, nil, false, nil
	}
	var cluster bindv1alpha1.BindCluster
	if err := o.client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: zone.Spec.ClusterRef.Name}, &cluster); err != nil {
		return agent.OwnersRequest{}, nil, false, client.IgnoreNotFound(err)
	}
	updKey, err := o.keyName(ctx, zone.Namespace, zone.Spec.UpdateKeyRef.Name)
	if err != nil {
		return agent.OwnersRequest{}, nil, false, err
	}
	view, viewKey, xfrKey := "", "", ""
	if ref := zone.Spec.ViewRef; ref != nil {
		view, viewKey = ref.Name, bindv1alpha1.ViewKeyName(ref.Name)
	} else {
		ref, err := TransferKeyRef(ctx, o.client, &cluster, zone)
		if err != nil {
			return agent.OwnersRequest{}, nil, false, err
		}
		if ref != "" {
			if xfrKey, err = o.keyName(ctx, zone.Namespace, ref); err != nil {
				return agent.OwnersRequest{}, nil, false, err
			}
		}
	}
	if _, guarded := render.OperatorUpdateKey(viewKey, xfrKey, updKey); !guarded {
		return agent.OwnersRequest{}, nil, false, nil
	}
	sets, err := o.ownedSets(ctx, zone)
	if err != nil {
		return agent.OwnersRequest{}, nil, false, err
	}
	return agent.OwnersRequest{View: view, Zone: records.CanonicalZone(string(zone.Spec.ZoneName)), UpdateKeys: []string{updKey}, Sets: sets}, &cluster, true, nil
}

// keyName is the BIND name of a BindTSIGKey.
func (o *zoneOwners) keyName(ctx context.Context, namespace, name string) (string, error) {
	var k bindv1alpha1.BindTSIGKey
	if err := o.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &k); err != nil {
		return "", fmt.Errorf("BindTSIGKey %q: %w", name, err)
	}
	_, keyName, _ := tsigDefaults(&k)
	return keyName, nil
}

// ownedSets are the record sets the operator writes in a zone: the apex
// SOA and NS (seeded, then kept from spec.soa), spec.records, and the
// DNSRecords that name the zone, from any namespace, sorted.
func (o *zoneOwners) ownedSets(ctx context.Context, zone *bindv1alpha1.BindZone) ([]agent.OwnedSet, error) {
	name := string(zone.Spec.ZoneName)
	apex := records.ZoneFQDN(name)
	recs, err := o.records.Get(ctx, recordindex.Zone(client.ObjectKeyFromObject(zone)))
	if err != nil {
		return nil, err
	}
	// A slice sorted and compacted, not a set: the push runs while
	// thousands of records arrive, and a map of them was its largest
	// allocation after the list.
	sets := make([]agent.OwnedSet, 0, 2+len(zone.Spec.Records)+len(recs))
	sets = append(sets, agent.OwnedSet{Name: apex, Type: "SOA"}, agent.OwnedSet{Name: apex, Type: "NS"})
	for _, rs := range zone.Spec.Records {
		sets = append(sets, agent.OwnedSet{Name: records.FQDN(name, string(rs.Name)), Type: strings.ToUpper(string(rs.Type))})
	}
	for _, rec := range recs {
		sets = append(sets, agent.OwnedSet{Name: records.FQDN(name, string(rec.Spec.Name)), Type: strings.ToUpper(string(rec.Spec.Type))})
	}
	slices.SortFunc(sets, func(a, b agent.OwnedSet) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Type, b.Type))
	})
	sets = slices.Compact(sets)
	if len(sets) > agent.MaxOwnedSets {
		return nil, fmt.Errorf("zone %s has %d record sets the operator owns, more than the %d its agent takes", name, len(sets), agent.MaxOwnedSets)
	}
	return sets, nil
}

// ownersReconciler pushes a zone's owners when its DNSRecords, its spec,
// its cluster or its primary change, and every ownersResync.
type ownersReconciler struct{ *zoneOwners }

func (r ownersReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var zone bindv1alpha1.BindZone
	if err := r.client.Get(ctx, req.NamespacedName, &zone); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.push(ctx, &zone); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: ownersResync}, nil
}

// recordOwnsOtherSets tells whether a DNSRecord event changes its zone's
// owned sets: created, deleted, or a new name, type or zone.
var recordOwnsOtherSets = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*bindv1alpha1.DNSRecord), e.ObjectNew.(*bindv1alpha1.DNSRecord)
		return o.Spec.Name != n.Spec.Name || o.Spec.Type != n.Spec.Type || o.ZoneKey() != n.ZoneKey()
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// setupOwners registers the controller that keeps the agents' owners
// current; it shares the BindZone controller's agent clients and pod
// endpoints.
func (r *BindZoneReconciler) setupOwners(mgr ctrl.Manager, zonesOf func(ctx context.Context, namespace, cluster string) []reconcile.Request, podsChanged predicate.Funcs) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindv1alpha1.BindZone{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&bindv1alpha1.DNSRecord{}, enqueueThrottled(ownersWindow, clock.RealClock{}, func(o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: o.(*bindv1alpha1.DNSRecord).ZoneKey()}}
		}), builder.WithPredicates(recordOwnsOtherSets)).
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
		Complete(ownersReconciler{r.owners})
}
