package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func record(ns, name, zone, zoneNS string, values ...string) *v1alpha1.DNSRecord {
	return &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Generation: 1},
		Spec:       v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: zone, Namespace: zoneNS}, Name: v1alpha1.RecordName(name), Type: "A", Values: values},
	}
}

func zone(ns, name string, records ...v1alpha1.RecordSet) *v1alpha1.BindZone {
	return &v1alpha1.BindZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Generation: 1},
		Spec:       v1alpha1.BindZoneSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "c"}, ZoneName: v1alpha1.DomainName(name + ".example"), Records: records},
	}
}

func size(t *testing.T, v any) int64 {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(b))
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// TestOfMeasuresTheSpec: every kind counts as one object of its spec's
// JSON length; a DNSRecord adds itself to its zone (of its own namespace
// unless zoneRef says), a BindZone its inline records; an object of
// another kind contributes nothing.
func TestOfMeasuresTheSpec(t *testing.T) {
	r := record("team-a", "www", "prod", "", "192.0.2.1")
	c, ok := Of(r, "")
	if !ok {
		t.Fatal("a DNSRecord is not measured")
	}
	want := Contribution{Namespace: "team-a", Object: Use{1, size(t, &r.Spec)}, Zone: key("team-a", "prod"), Writer: "team-a", InZone: Use{1, size(t, &r.Spec)}}
	if c != want {
		t.Errorf("Of(DNSRecord) = %+v, want %+v", c, want)
	}
	cross := record("team-b", "api", "prod", "team-a", "192.0.2.2")
	if c, _ := Of(cross, ""); c.Zone != key("team-a", "prod") || c.Writer != "team-b" {
		t.Errorf("a DNSRecord naming a zone of another namespace: zone %v writer %q", c.Zone, c.Writer)
	}
	// A create's object may carry no namespace: the request's is used.
	bare := record("", "mx", "prod", "", "192.0.2.3")
	if c, _ := Of(bare, "team-c"); c.Namespace != "team-c" || c.Zone != key("team-c", "prod") || c.Writer != "team-c" {
		t.Errorf("Of(DNSRecord without a namespace, team-c) = %+v", c)
	}

	recs := []v1alpha1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}, {Name: "@", Type: "MX", Values: []string{"10 mail"}}}
	z := zone("team-a", "prod", recs...)
	c, _ = Of(z, "")
	if want := (Contribution{Namespace: "team-a", Object: Use{1, size(t, &z.Spec)}, Zone: key("team-a", "prod"), InZone: Use{2, size(t, recs)}}); c != want {
		t.Errorf("Of(BindZone) = %+v, want %+v", c, want)
	}
	if c, _ := Of(zone("team-a", "empty"), ""); c.InZone != (Use{}) {
		t.Errorf("a zone without inline records adds %+v to its zone", c.InZone)
	}

	for _, o := range []client.Object{&v1alpha1.BindCluster{}, &v1alpha1.BindView{}, &v1alpha1.BindTSIGKey{}, &v1alpha1.BindACL{},
		&v1alpha1.BindCatalogZone{}, &v1alpha1.BindPolicy{}, &v1alpha1.BindDNSSECPolicy{}} {
		o.SetNamespace("ns")
		c, ok := Of(o, "")
		if !ok || c.Object.Count != 1 || c.Object.Bytes <= 0 || c.Zone != (types.NamespacedName{}) {
			t.Errorf("Of(%T) = %+v, %v", o, c, ok)
		}
	}
	if _, ok := Of(&metav1.PartialObjectMetadata{}, ""); ok {
		t.Error("an object of another kind is measured")
	}
}

// TestTrackerCounts: adds, updates and deletes move the namespace's and
// the zone's use, and leave nothing behind once everything is deleted.
func TestTrackerCounts(t *testing.T) {
	tr := NewTracker(DefaultLimits())
	z := zone("team-a", "prod", v1alpha1.RecordSet{Name: "@", Type: "NS", Values: []string{"ns1.example.net."}})
	a := record("team-a", "www", "prod", "", "192.0.2.1")
	b := record("team-b", "api", "prod", "team-a", "192.0.2.2")
	for _, o := range []client.Object{z, a, b} {
		tr.Add(o)
	}
	zc, _ := Of(z, "")
	ac, _ := Of(a, "")
	bc, _ := Of(b, "")
	if got, want := tr.Namespace("team-a"), zc.Object.Plus(ac.Object); got != want {
		t.Errorf("team-a uses %+v, want %+v", got, want)
	}
	if got, want := tr.Namespace("team-b"), bc.Object; got != want {
		t.Errorf("team-b uses %+v, want %+v", got, want)
	}
	zu := tr.Zone(key("team-a", "prod"))
	if zu.Inline != zc.InZone || zu.Writers["team-a"] != ac.InZone || zu.Writers["team-b"] != bc.InZone || len(zu.Writers) != 2 {
		t.Errorf("the zone's use is %+v", zu)
	}
	if got, want := zu.Total(), zc.InZone.Plus(ac.InZone).Plus(bc.InZone); got != want {
		t.Errorf("the zone's total is %+v, want %+v", got, want)
	}

	// A spec change (a new generation) replaces the record's bytes.
	grown := a.DeepCopy()
	grown.Generation = 2
	grown.Spec.Values = []string{"192.0.2.1", "192.0.2.10", "192.0.2.11"}
	tr.Update(a, grown)
	gc, _ := Of(grown, "")
	if got, want := tr.Namespace("team-a"), zc.Object.Plus(gc.Object); got != want {
		t.Errorf("after the update team-a uses %+v, want %+v", got, want)
	}
	if got := tr.Zone(key("team-a", "prod")).Writers["team-a"]; got != gc.InZone {
		t.Errorf("after the update team-a's records in the zone are %+v, want %+v", got, gc.InZone)
	}

	// The zone's inline records grow.
	z2 := z.DeepCopy()
	z2.Generation = 2
	z2.Spec.Records = append(z2.Spec.Records, v1alpha1.RecordSet{Name: "mail", Type: "A", Values: []string{"192.0.2.25"}})
	tr.Update(z, z2)
	z2c, _ := Of(z2, "")
	if got := tr.Zone(key("team-a", "prod")).Inline; got != z2c.InZone || got.Count != 2 {
		t.Errorf("after the zone's update its inline use is %+v, want %+v", got, z2c.InZone)
	}

	// Deleted, one as a tombstone the informer missed the delete of.
	h := tr.Handler()
	h.OnDelete(grown)
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team-b/api", Obj: b})
	h.OnDelete(z2)
	if tr.Namespace("team-a") != (Use{}) || tr.Namespace("team-b") != (Use{}) {
		t.Errorf("after every delete: team-a %+v, team-b %+v", tr.Namespace("team-a"), tr.Namespace("team-b"))
	}
	if len(tr.namespaces) != 0 || len(tr.zones) != 0 {
		t.Errorf("entries left behind: namespaces %v, zones %v", tr.namespaces, tr.zones)
	}
}

// TestTrackerSkipsStatusWrites: an update with the same generation (a
// status write, a label) changes nothing, even if a test's object differs.
func TestTrackerSkipsStatusWrites(t *testing.T) {
	tr := NewTracker(DefaultLimits())
	a := record("team-a", "www", "prod", "", "192.0.2.1")
	tr.Add(a)
	before := tr.Namespace("team-a")
	status := a.DeepCopy()
	status.Status.FQDN = "www.prod.example."
	status.Spec.Values = []string{"this is not what the API server would send"}
	tr.Update(a, status)
	if got := tr.Namespace("team-a"); got != before {
		t.Errorf("a status write moved the use from %+v to %+v", before, got)
	}
}

// TestTrackerZoneMoves: a record that names another zone (the CRD makes
// zoneRef immutable, but objects stored without the webhook exist) leaves
// the first zone's use and enters the second's.
func TestTrackerZoneMoves(t *testing.T) {
	tr := NewTracker(DefaultLimits())
	a := record("team-a", "www", "prod", "", "192.0.2.1")
	tr.Add(a)
	moved := a.DeepCopy()
	moved.Generation = 2
	moved.Spec.ZoneRef = v1alpha1.ZoneReference{Name: "shared", Namespace: "infra"}
	tr.Update(a, moved)
	if u := tr.Zone(key("team-a", "prod")); u.Total() != (Use{}) {
		t.Errorf("the first zone still holds %+v", u)
	}
	mc, _ := Of(moved, "")
	if u := tr.Zone(key("infra", "shared")); u.Writers["team-a"] != mc.InZone {
		t.Errorf("the second zone holds %+v, want team-a's %+v", u, mc.InZone)
	}
	if got := tr.Namespace("team-a"); got != mc.Object {
		t.Errorf("the namespace uses %+v, want %+v", got, mc.Object)
	}
}

// TestLimitArithmetic: a quota is passed only by what adds to it; at the
// limit a create is refused, below it admitted; taking away (a delete, a
// shrinking update) is never refused, even over a limit lowered since;
// 0 turns a quota off.
func TestLimitArithmetic(t *testing.T) {
	l := Limits{NamespaceObjects: 10, NamespaceBytes: 1000, ZoneRecords: 5, ZoneBytes: 500}
	for _, tc := range []struct {
		desc     string
		use, add Use
		want     []Quota
	}{
		{"below both", Use{9, 900}, Use{1, 100}, nil},
		{"at the object limit", Use{10, 100}, Use{1, 10}, []Quota{NamespaceObjects}},
		{"one byte over", Use{5, 901}, Use{1, 100}, []Quota{NamespaceBytes}},
		{"both", Use{10, 1000}, Use{1, 1}, []Quota{NamespaceObjects, NamespaceBytes}},
		{"an update that grows within", Use{10, 900}, Use{0, 100}, nil},
		{"an update that grows past", Use{10, 950}, Use{0, 100}, []Quota{NamespaceBytes}},
		{"a shrinking update over the limit", Use{12, 5000}, Use{0, -100}, nil},
		{"an update that changes nothing over the limit", Use{12, 5000}, Use{}, nil},
	} {
		got := l.Namespace("team-a", tc.use, tc.add)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %+v, want %v", tc.desc, got, tc.want)
			continue
		}
		for i := range got {
			if got[i].Quota != tc.want[i] || got[i].Use != pick(tc.use, tc.want[i]) || got[i].Limit != pick(Use{l.NamespaceObjects, l.NamespaceBytes}, tc.want[i]) {
				t.Errorf("%s: %+v, want %v", tc.desc, got[i], tc.want[i])
			}
		}
	}
	if got := l.Zone(key("team-a", "prod"), Use{5, 10}, Use{1, 10}); len(got) != 1 || got[0].Quota != ZoneRecords {
		t.Errorf("a zone at its record limit: %+v", got)
	}
	if got := l.Zone(key("team-a", "prod"), Use{0, 0}, Use{3, 501}); len(got) != 1 || got[0].Quota != ZoneBytes {
		t.Errorf("inline records past the zone's bytes: %+v", got)
	}
	if got := (Limits{}).Namespace("team-a", Use{1 << 40, 1 << 40}, Use{1, 1 << 30}); got != nil {
		t.Errorf("limits of 0 refused: %+v", got)
	}
	if !(Limits{}).Off() || DefaultLimits().Off() {
		t.Error("Off")
	}
}

func pick(u Use, q Quota) int64 {
	if q == NamespaceObjects || q == ZoneRecords {
		return u.Count
	}
	return u.Bytes
}

// TestRefusalsSayWhatToDo: each sentence names the namespace or zone, the
// use, the limit and the flag that raises it, and what to do.
func TestRefusalsSayWhatToDo(t *testing.T) {
	l := DefaultLimits()
	ns := l.Namespace("team-a", Use{20000, 16 << 20}, Use{1, 401 << 10})
	zs := l.Zone(key("team-a", "prod"), Use{20000, 8 << 20}, Use{3, 2048})
	if len(ns) != 2 || len(zs) != 2 {
		t.Fatalf("namespace %+v zone %+v", ns, zs)
	}
	for _, tc := range []struct {
		got  string
		want []string
	}{
		{ns[0].Message, []string{`namespace "team-a" holds 20,000 bind.unkin.net objects`, "at most 20,000", "--quota-namespace-objects", "delete some", "raise the limit"}},
		{ns[1].Message, []string{`namespace "team-a" holds 16 MiB of bind.unkin.net specs`, "at most 16 MiB", "--quota-namespace-bytes", "would add 401 KiB", "make it smaller"}},
		{zs[0].Message, []string{"BindZone team-a/prod holds 20,000 record sets", "at most 20,000", "--quota-zone-records", "would add 3", "delete some"}},
		{zs[1].Message, []string{"BindZone team-a/prod holds 8 MiB of records", "at most 8 MiB", "--quota-zone-bytes", "would add 2 KiB"}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.got, w) {
				t.Errorf("%q does not say %q", tc.got, w)
			}
		}
	}
}

func TestFormats(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{512: "512 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 16 << 20: "16 MiB", 15<<20 + 900<<10: "15.9 MiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSetLimits: the limits can be replaced while admissions read them
// (run with -race).
func TestSetLimits(t *testing.T) {
	tr := NewTracker(DefaultLimits())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			_ = tr.Limits()
		}
	}()
	tr.SetLimits(Limits{NamespaceObjects: 3})
	<-done
	if got := tr.Limits(); got != (Limits{NamespaceObjects: 3}) {
		t.Errorf("limits %+v", got)
	}
}

// fakeCache hands out one fakeInformer per kind; the other methods of
// cache.Cache are not called.
type fakeCache struct {
	cache.Cache
	informers map[string]*fakeInformer
}

func (c *fakeCache) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	k := fmt.Sprintf("%T", obj)
	if c.informers[k] == nil {
		c.informers[k] = &fakeInformer{}
	}
	return c.informers[k], nil
}

type fakeInformer struct {
	cache.Informer
	handlers []toolscache.ResourceEventHandler
	synced   atomic.Bool
}

func (i *fakeInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.handlers = append(i.handlers, h)
	return registration{i: i}, nil
}

type registration struct {
	toolscache.ResourceEventHandlerRegistration
	i *fakeInformer
}

func (r registration) HasSynced() bool { return r.i.synced.Load() }

// TestWatchHooksTheNineKinds: Watch adds one handler to the informer of
// each of the nine kinds, once per cache; Synced waits for all of them;
// the handlers count what the informers deliver.
func TestWatchHooksTheNineKinds(t *testing.T) {
	c := &fakeCache{informers: map[string]*fakeInformer{}}
	tr := NewTracker(DefaultLimits())
	for range 2 {
		if err := tr.Watch(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.informers) != 9 {
		t.Fatalf("informers of %d kinds, want 9", len(c.informers))
	}
	for k, i := range c.informers {
		if len(i.handlers) != 1 {
			t.Errorf("%s has %d handlers, want 1 (Watch twice on one cache adds one)", k, len(i.handlers))
		}
	}
	if tr.Synced() {
		t.Error("synced before any informer listed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := tr.WaitSynced(ctx); err == nil {
		t.Error("WaitSynced returned before the informers listed")
	}
	for _, i := range c.informers {
		i.synced.Store(true)
	}
	if err := tr.WaitSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.informers["*v1alpha1.DNSRecord"].handlers[0].OnAdd(record("team-a", "www", "prod", "", "192.0.2.1"), true)
	c.informers["*v1alpha1.BindCluster"].handlers[0].OnAdd(&v1alpha1.BindCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "c"}}, true)
	if got := tr.Namespace("team-a").Count; got != 2 {
		t.Errorf("team-a holds %d objects, want 2", got)
	}
}
