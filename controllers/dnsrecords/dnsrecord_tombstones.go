package dnsrecords

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// DeletedRecords holds the last state of the DNSRecords deleted while the
// operator runs, until their data has left the zone. DNSRecords carry no
// finalizer (docs/proposals/dnsrecord-without-finalizer.md): a DELETE is
// one etcd write instead of three, and the object is gone at once. What
// the record wrote (status.appliedValues) survives here, taken from the
// informer's delete event, which carries the object's final state.
//
// The DNSRecord controller puts and finishes tombstones; the owners
// controller keeps their record sets owned while they are pending, so no
// client with the update key can write a set the operator is about to
// delete. Deletes that happen while no operator runs are found at start
// from the primary's agent instead (ZoneOwners.sweep).
//
// One DeletedRecords is shared by the DNSRecord and BindZone reconcilers
// of a manager; a reconciler given none makes its own.
type DeletedRecords struct {
	mu sync.Mutex
	// byKey holds, per namespace/name, the tombstones of every record of
	// that name deleted and not finished yet, oldest first: a record
	// deleted, created again and deleted again before the first is
	// finished leaves two, each with its own data.
	byKey map[types.NamespacedName][]tombstone
	// byZone indexes the same tombstones by zone and UID: the owners
	// controller asks for a zone's on every push, and during a mass
	// delete there are thousands pending in other zones.
	byZone map[types.NamespacedName]map[types.UID]*bindv1alpha1.DNSRecord
	// subscribers hear of every finished tombstone, and of every set a
	// sweep removed: the DNSRecord controller wakes the records that lost
	// the claim to it, the owners controller releases its set, the
	// replication controller looks at the zone's secondaries.
	subscribers []chan event.GenericEvent
}

type tombstone struct {
	rec *bindv1alpha1.DNSRecord
	at  time.Time // when the delete event arrived: DeleteGiveUp counts from it
}

// NewDeletedRecords returns an empty set of tombstones.
func NewDeletedRecords() *DeletedRecords {
	return &DeletedRecords{byKey: map[types.NamespacedName][]tombstone{}, byZone: map[types.NamespacedName]map[types.UID]*bindv1alpha1.DNSRecord{}}
}

// index files rec under its zone; d.mu is held.
func (d *DeletedRecords) index(rec *bindv1alpha1.DNSRecord) {
	zone := rec.ZoneKey()
	if d.byZone[zone] == nil {
		d.byZone[zone] = map[types.UID]*bindv1alpha1.DNSRecord{}
	}
	d.byZone[zone][rec.UID] = rec
}

// unindex removes rec from its zone's tombstones; d.mu is held.
func (d *DeletedRecords) unindex(rec *bindv1alpha1.DNSRecord) {
	zone := rec.ZoneKey()
	delete(d.byZone[zone], rec.UID)
	if len(d.byZone[zone]) == 0 {
		delete(d.byZone, zone)
	}
}

// put keeps rec's final state. A record that wrote nothing needs no
// tombstone but still gets one: its rivals are woken when it is finished,
// the same way for every record.
func (d *DeletedRecords) put(rec *bindv1alpha1.DNSRecord, now time.Time) {
	key := types.NamespacedName{Namespace: rec.Namespace, Name: rec.Name}
	d.mu.Lock()
	defer d.mu.Unlock()
	if slices.ContainsFunc(d.byKey[key], func(t tombstone) bool { return t.rec.UID == rec.UID }) {
		return // a repeated delete event (a relist): keep the first
	}
	d.byKey[key] = append(d.byKey[key], tombstone{rec: rec, at: now})
	d.index(rec)
}

// rewrite makes rec, as a reconcile that met it deleted has just written
// it, its tombstone: what that reconcile wrote supersedes what the delete
// event saw.
func (d *DeletedRecords) rewrite(rec *bindv1alpha1.DNSRecord, now time.Time) {
	key := types.NamespacedName{Namespace: rec.Namespace, Name: rec.Name}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, t := range d.byKey[key] {
		if t.rec.UID == rec.UID {
			d.unindex(t.rec)
			d.byKey[key][i].rec = rec
			d.index(rec)
			return
		}
	}
	d.byKey[key] = append(d.byKey[key], tombstone{rec: rec, at: now})
	d.index(rec)
}

// of returns the pending tombstones of key, oldest first.
func (d *DeletedRecords) of(key types.NamespacedName) []tombstone {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.byKey[key])
}

// finish drops rec's tombstone and tells the subscribers.
func (d *DeletedRecords) finish(ctx context.Context, rec *bindv1alpha1.DNSRecord) {
	key := types.NamespacedName{Namespace: rec.Namespace, Name: rec.Name}
	d.mu.Lock()
	left := slices.DeleteFunc(d.byKey[key], func(t tombstone) bool {
		if t.rec.UID != rec.UID {
			return false
		}
		d.unindex(t.rec)
		return true
	})
	if len(left) == 0 {
		delete(d.byKey, key)
	} else {
		d.byKey[key] = left
	}
	d.mu.Unlock()
	d.tell(ctx, rec)
}

// swept tells the subscribers that the data of a DNSRecord deleted while
// no operator ran is gone from zone at name (relative, canonical) and
// type: the records that lost the claim to it take the set over. Only
// what the subscribers map by is known of that record: its zone, name and
// type.
func (d *DeletedRecords) swept(ctx context.Context, zone types.NamespacedName, name, typ string) {
	d.tell(ctx, &bindv1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: zone.Namespace},
		Spec: bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Name: zone.Name, Namespace: zone.Namespace},
			Name: bindv1alpha1.RecordName(name), Type: bindv1alpha1.RecordType(typ)},
	})
}

// tell sends rec to every subscriber. Blocks while a subscriber's buffer
// is full, so no wake-up is lost, unless ctx ends.
func (d *DeletedRecords) tell(ctx context.Context, rec *bindv1alpha1.DNSRecord) {
	d.mu.Lock()
	subs := d.subscribers
	d.mu.Unlock()
	for _, ch := range subs {
		select {
		case ch <- event.GenericEvent{Object: rec}:
		case <-ctx.Done():
			return
		}
	}
}

// ofZone are the pending tombstones of zone's records, in no order. It
// costs what the zone has pending, whatever other zones have
// (BenchmarkDeletedRecordsOfZone).
func (d *DeletedRecords) ofZone(zone types.NamespacedName) []*bindv1alpha1.DNSRecord {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Collect(maps.Values(d.byZone[zone]))
}

// Subscribe returns a channel that hears of every finished tombstone
// (for a source.Channel, which drains it into the controller's queue).
func (d *DeletedRecords) Subscribe() <-chan event.GenericEvent {
	ch := make(chan event.GenericEvent, 1024)
	d.mu.Lock()
	d.subscribers = append(d.subscribers, ch)
	d.mu.Unlock()
	return ch
}
