package quota

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Tracker keeps the use of every namespace and zone, and the limits they
// are held to.
//
// It is fed by event handlers on the manager's informers of the nine
// kinds (Watch): an add adds what the object contributes (Of), a delete
// takes it away, an update takes away the old object's and adds the new
// one's. An update that leaves the generation alone (a status write, a
// label) changes no spec and is skipped without measuring anything, so
// the DNSRecords' status writes cost nothing here. Nothing is kept per
// object: the old object of an update and the last state of a deleted one
// are the informer's, measured again, which gives the same bytes they
// were added with.
//
// The counts follow the cache, so they lag the API server by the
// informer's delay: creates admitted at the same moment, or before the
// cache has seen the ones just admitted, are all judged against the same
// use, and a namespace may go past its limit by the requests admitted in
// that window (with 32 clients at the measured 200 creates a second,
// some tens of objects). The next create after the cache catches up is
// refused.
type Tracker struct {
	limits atomic.Pointer[Limits]

	mu         sync.RWMutex
	namespaces map[string]Use
	zones      map[types.NamespacedName]*zoneUse

	regMu    sync.Mutex
	synced   []func() bool
	watching map[cache.Cache]bool
}

// zoneUse is a zone's use: its inline records, and the DNSRecords that
// name it, by their namespace (the zone admits some namespaces and not
// others: webhooks count only those it admits).
type zoneUse struct {
	inline  Use
	writers map[string]Use
}

// NewTracker is a tracker with limits and nothing counted; Watch feeds it.
func NewTracker(limits Limits) *Tracker {
	t := &Tracker{namespaces: map[string]Use{}, zones: map[types.NamespacedName]*zoneUse{}, watching: map[cache.Cache]bool{}}
	t.SetLimits(limits)
	return t
}

// Limits are the limits now.
func (t *Tracker) Limits() Limits { return *t.limits.Load() }

// SetLimits replaces the limits; the next admission is judged by them.
// The manager sets them once, from its flags; the webhooks' tests lower
// them for a while.
func (t *Tracker) SetLimits(l Limits) { t.limits.Store(&l) }

// kinds are empty objects of the nine kinds, whose informers feed a
// tracker.
func kinds() []client.Object {
	return []client.Object{
		&v1alpha1.BindCluster{}, &v1alpha1.BindZone{}, &v1alpha1.DNSRecord{}, &v1alpha1.BindView{}, &v1alpha1.BindTSIGKey{},
		&v1alpha1.BindACL{}, &v1alpha1.BindCatalogZone{}, &v1alpha1.BindPolicy{}, &v1alpha1.BindDNSSECPolicy{},
	}
}

// Watch adds the tracker's event handlers to c's informers of the nine
// kinds, once per cache. The manager's cache holds every object of them
// in every namespace already (the controllers watch them all), so this
// adds counters, not copies. The informers start with the cache; until
// each has delivered its first list, Synced is false.
func (t *Tracker) Watch(ctx context.Context, c cache.Cache) error {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	if t.watching[c] {
		return nil
	}
	for _, obj := range kinds() {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("quota: the informer of %T: %w", obj, err)
		}
		reg, err := inf.AddEventHandler(t.Handler())
		if err != nil {
			return fmt.Errorf("quota: watching %T: %w", obj, err)
		}
		t.synced = append(t.synced, reg.HasSynced)
	}
	t.watching[c] = true
	return nil
}

// Handler is the tracker's event handler for an informer of any of the
// nine kinds (Watch adds it; tests call it directly).
func (t *Tracker) Handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(client.Object); ok {
				t.Add(o)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(client.Object)
			n, ok2 := newObj.(client.Object)
			if ok1 && ok2 {
				t.Update(o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(client.Object); ok {
				t.Delete(o)
			}
		},
	}
}

// Synced tells whether every watched informer has delivered its first
// list: before, the counts are short.
func (t *Tracker) Synced() bool {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	for _, s := range t.synced {
		if !s() {
			return false
		}
	}
	return true
}

// WaitSynced waits until Synced, for as long as ctx lets it.
func (t *Tracker) WaitSynced(ctx context.Context) error {
	if t.Synced() {
		return nil
	}
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) { return t.Synced(), nil })
}

// Add counts obj.
func (t *Tracker) Add(obj client.Object) {
	if c, ok := Of(obj, ""); ok {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.apply(c, 1)
	}
}

// Delete takes obj away.
func (t *Tracker) Delete(obj client.Object) {
	if c, ok := Of(obj, ""); ok {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.apply(c, -1)
	}
}

// Update replaces what oldObj contributed with what newObj does. The API
// server raises the generation on every change of the spec (every kind
// has a status subresource), so an update that leaves it alone is
// skipped unmeasured.
func (t *Tracker) Update(oldObj, newObj client.Object) {
	if g := newObj.GetGeneration(); g != 0 && g == oldObj.GetGeneration() && oldObj.GetUID() == newObj.GetUID() {
		return
	}
	oc, ok1 := Of(oldObj, "")
	nc, ok2 := Of(newObj, "")
	t.mu.Lock()
	defer t.mu.Unlock()
	if ok1 {
		t.apply(oc, -1)
	}
	if ok2 {
		t.apply(nc, 1)
	}
}

// apply adds c to the counts (sign 1) or takes it away (-1), dropping
// what falls to nothing so that deleted namespaces and zones leave no
// entry behind. Callers hold mu.
func (t *Tracker) apply(c Contribution, sign int64) {
	scaled := func(u Use) Use { return Use{Count: sign * u.Count, Bytes: sign * u.Bytes} }
	if u := t.namespaces[c.Namespace].Plus(scaled(c.Object)); u == (Use{}) {
		delete(t.namespaces, c.Namespace)
	} else {
		t.namespaces[c.Namespace] = u
	}
	if c.Zone.Name == "" || c.InZone == (Use{}) {
		return
	}
	z := t.zones[c.Zone]
	if z == nil {
		z = &zoneUse{writers: map[string]Use{}}
		t.zones[c.Zone] = z
	}
	if c.Writer == "" {
		z.inline = z.inline.Plus(scaled(c.InZone))
	} else if u := z.writers[c.Writer].Plus(scaled(c.InZone)); u == (Use{}) {
		delete(z.writers, c.Writer)
	} else {
		z.writers[c.Writer] = u
	}
	if z.inline == (Use{}) && len(z.writers) == 0 {
		delete(t.zones, c.Zone)
	}
}

// Namespace is the use of namespace ns.
func (t *Tracker) Namespace(ns string) Use {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.namespaces[ns]
}

// ZoneUse is the use of one zone: its inline records and the DNSRecords
// that name it, by their namespace.
type ZoneUse struct {
	Inline  Use
	Writers map[string]Use
}

// Total is everything that names the zone, admitted or not: an upper
// bound of what it holds.
func (z ZoneUse) Total() Use {
	u := z.Inline
	for _, w := range z.Writers {
		u = u.Plus(w)
	}
	return u
}

// Zone is the use of the BindZone zone (namespace and object name), a
// copy.
func (t *Tracker) Zone(zone types.NamespacedName) ZoneUse {
	t.mu.RLock()
	defer t.mu.RUnlock()
	z := t.zones[zone]
	if z == nil {
		return ZoneUse{}
	}
	return ZoneUse{Inline: z.inline, Writers: maps.Clone(z.writers)}
}
