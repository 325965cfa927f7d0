package dnsrecords

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/internal/recordindex"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

func tombstoneRecord(ns, name, uid, zone string) *bindv1alpha1.DNSRecord {
	return &bindv1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Name: zone}, Name: bindv1alpha1.RecordName(name), Type: "A"},
	}
}

// TestDeletedRecordsTombstones: a repeated delete event (a relist) keeps
// the time of the first, so DeleteGiveUp counts from the real delete; a
// record deleted, created again and deleted again before the first is
// finished leaves two tombstones, oldest first, each finished on its own;
// what a reconcile wrote to a deleted record replaces what its delete
// event saw; every subscriber hears of each finished tombstone.
func TestDeletedRecordsTombstones(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	d := NewDeletedRecords()
	rivals, owners := d.Subscribe(), d.Subscribe()
	key := types.NamespacedName{Namespace: "dns", Name: "www"}
	uids := func() []types.UID {
		var out []types.UID
		for _, ts := range d.of(key) {
			out = append(out, ts.rec.UID)
		}
		return out
	}
	t0 := time.Unix(1000, 0)
	first := tombstoneRecord("dns", "www", "uid-1", "example")
	d.put(first, t0)
	d.put(first.DeepCopy(), t0.Add(time.Minute))
	g.Expect(d.of(key)).To(HaveLen(1))
	g.Expect(d.of(key)[0].at).To(Equal(t0), "a repeated delete event keeps the first time")

	d.put(tombstoneRecord("dns", "api", "uid-2", "other"), t0)
	g.Expect(d.ofZone(types.NamespacedName{Namespace: "dns", Name: "example"})).To(ConsistOf(first))

	again := tombstoneRecord("dns", "www", "uid-3", "example")
	d.put(again, t0.Add(time.Hour))
	g.Expect(uids()).To(Equal([]types.UID{"uid-1", "uid-3"}), "the record created again and deleted again does not hide the first")
	g.Expect(d.ofZone(types.NamespacedName{Namespace: "dns", Name: "example"})).To(ConsistOf(first, again))

	written := again.DeepCopy()
	written.Status.AppliedValues = []string{"192.0.2.9"}
	d.rewrite(written, t0.Add(2*time.Hour))
	g.Expect(d.of(key)[1].rec.Status.AppliedValues).To(Equal([]string{"192.0.2.9"}), "what the reconcile wrote replaces what the delete event saw")
	g.Expect(d.of(key)[1].at).To(Equal(t0.Add(time.Hour)))
	g.Expect(d.ofZone(types.NamespacedName{Namespace: "dns", Name: "example"})).To(ConsistOf(first, written), "the zone's tombstones hold the rewritten state")

	d.finish(ctx, first)
	g.Expect(uids()).To(Equal([]types.UID{"uid-3"}), "finishing one tombstone keeps the other")
	d.finish(ctx, written)
	g.Expect(d.of(key)).To(BeEmpty())
	g.Expect(d.ofZone(types.NamespacedName{Namespace: "dns", Name: "example"})).To(BeEmpty())
	g.Expect(d.byZone).NotTo(HaveKey(types.NamespacedName{Namespace: "dns", Name: "example"}), "a zone whose tombstones are all finished leaves no entry")
	for name, ch := range map[string]<-chan event.GenericEvent{"rivals": rivals, "owners": owners} {
		g.Expect((<-ch).Object.GetUID()).To(Equal(types.UID("uid-1")), name)
		g.Expect((<-ch).Object.GetUID()).To(Equal(types.UID("uid-3")), name)
	}
}

// BenchmarkDeletedRecordsOfZone reads one zone's 100 pending tombstones
// while 0 or 9,900 more are pending in 99 other zones, as during a mass
// delete: the owners controller asks on every push, and the cost must not
// grow with the other zones'.
func BenchmarkDeletedRecordsOfZone(b *testing.B) {
	for _, others := range []int{0, 99} {
		b.Run(fmt.Sprintf("other-zones=%d", others), func(b *testing.B) {
			d := NewDeletedRecords()
			for z := 0; z <= others; z++ {
				for i := range 100 {
					d.put(tombstoneRecord("dns", fmt.Sprintf("r%d-%d", z, i), fmt.Sprintf("uid-%d-%d", z, i), fmt.Sprintf("zone%d", z)), time.Unix(0, 0))
				}
			}
			zone := types.NamespacedName{Namespace: "dns", Name: "zone0"}
			b.ReportAllocs()
			for b.Loop() {
				if len(d.ofZone(zone)) != 100 {
					b.Fatal("wrong tombstones")
				}
			}
		})
	}
}

// TestOrphanedSets: only sets that recorded values (a DNSRecord's) and
// that no record with values wants any more are deleted, each guarded by
// its values; the apex and spec.records never are; names compare without
// case or final dot.
func TestOrphanedSets(t *testing.T) {
	g := NewWithT(t)
	stored := []agent.OwnedSet{
		{Name: "example.test", Type: "SOA"},
		{Name: "example.test", Type: "NS"},
		{Name: "inline.example.test", Type: "A"},
		{Name: "now-inline.example.test", Type: "A", Values: []string{"192.0.2.4"}}, // a deleted record's, now spec.records
		{Name: "gone.example.test", Type: "A", Values: []string{"192.0.2.1", "192.0.2.2"}},
		{Name: "kept.example.test", Type: "TXT", Values: []string{`"x"`}},
		{Name: "claimed.example.test", Type: "A", Values: []string{"192.0.2.3"}},
		{Name: "odd.example.test", Type: "NOSUCHTYPE", Values: []string{"1"}},
	}
	want := []agent.OwnedSet{
		{Name: "example.test.", Type: "SOA"},
		{Name: "Kept.Example.Test.", Type: "txt", Values: []string{`"y"`}},
		{Name: "claimed.example.test.", Type: "A"}, // lost the claim to the deleted record: wrote nothing
		{Name: "inline.example.test.", Type: "A"},
	}
	zone := &bindv1alpha1.BindZone{Spec: bindv1alpha1.BindZoneSpec{ZoneName: "example.test", Records: []bindv1alpha1.RecordSet{
		{Name: "inline", Type: "A"}, {Name: "Now-Inline", Type: "a"},
	}}}
	g.Expect(orphanedSets(stored, want, zone)).To(Equal([]dnsclient.Change{{
		Op:   dnsclient.Delete,
		Set:  dnsclient.RRSet{Name: "gone.example.test.", Type: dns.TypeA},
		Prev: []string{"192.0.2.1", "192.0.2.2"},
	}, {
		Op:   dnsclient.Delete,
		Set:  dnsclient.RRSet{Name: "claimed.example.test.", Type: dns.TypeA},
		Prev: []string{"192.0.2.3"},
	}}))
}

// fixedServer resolves every zone to one named.
type fixedServer struct{ srv clusterpods.ZoneServer }

func (f fixedServer) Resolve(context.Context, *bindv1alpha1.BindZone) (clusterpods.ZoneServer, error) {
	return f.srv, nil
}

// TestReconcileUndoesAWriteToADeletedRecord: a record deleted while its
// reconcile wrote to the zone (its status patch answers NotFound) has
// what was just written deleted again: what it wrote becomes its
// tombstone (the delete event saw the values from before that write).
func TestReconcileUndoesAWriteToADeletedRecord(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	upd := bindtest.NewKey("upd", "hmac-sha256")
	srv := bindtest.Start(t, bindtest.Options{
		Keys:   []bindtest.Key{upd},
		Files:  map[string]string{"example.db": bindtest.SeedZone("example.test.", 1)},
		Config: `zone "example.test" { type primary; file "example.db"; allow-update { key "upd"; }; };`,
	})
	key, err := dnsclient.NewKey(upd.Name, upd.Algorithm, upd.Secret)
	g.Expect(err).NotTo(HaveOccurred())

	scheme := runtime.NewScheme()
	g.Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	zone := &bindv1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "example"},
		Spec: bindv1alpha1.BindZoneSpec{ZoneName: "example.test", ClusterRef: bindv1alpha1.LocalObjectReference{Name: "dns"}}}
	rec := &bindv1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "racing", UID: "uid-1", Generation: 1},
		Spec: bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Name: "example"}, Name: "racing", Type: "A", Values: []string{"192.0.2.7"}}}
	var patched string
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(zone, rec).WithStatusSubresource(rec).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
			data, _ := patch.Data(obj)
			patched = string(data)
			return apierrors.NewNotFound(schema.GroupResource{Group: bindv1alpha1.GroupVersion.Group, Resource: "dnsrecords"}, "racing")
		}}).Build()
	informer := listed{toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &bindv1alpha1.DNSRecord{}, 0, toolscache.Indexers{})}
	names, err := recordindex.OnInformer(informer, recordindex.ByZoneName)
	g.Expect(err).NotTo(HaveOccurred())
	r := &DNSRecordReconciler{Client: c, Recorder: events.NewFakeRecorder(10), Servers: fixedServer{clusterpods.ZoneServer{Addr: srv.DNSAddr, Key: key}},
		Updates: batch.NewUpdates(0, 0), Deleted: NewDeletedRecords(), ResyncPeriod: -1, names: names}

	_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rec)})
	g.Expect(err).NotTo(HaveOccurred())
	m := new(dns.Msg)
	m.SetQuestion("racing.example.test.", dns.TypeA)
	in, err := dns.Exchange(m, srv.DNSAddr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(in.Answer).To(BeEmpty(), "what the reconcile wrote for the deleted record is gone: %v", in.Answer)
	g.Expect(patched).To(ContainSubstring(`"appliedValues":["192.0.2.7"]`), "the reconcile wrote before it met the deleted record")
}

// TestReconcileFinalizesARecordOfAnEarlierRelease: a record that was
// deleting with the old finalizer when this release started is finalized
// as before: its data removed (here its zone is gone, so there is none),
// then the finalizer, and the object goes.
func TestReconcileFinalizesARecordOfAnEarlierRelease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	now := metav1.Now()
	rec := &bindv1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "old", DeletionTimestamp: &now, Finalizers: []string{recordFinalizer}},
		Spec:   bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Name: "gone"}, Name: "old", Type: "A", Values: []string{"192.0.2.8"}},
		Status: bindv1alpha1.DNSRecordStatus{FQDN: "old.example.test.", AppliedValues: []string{"192.0.2.8"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rec).WithStatusSubresource(rec).Build()
	r := &DNSRecordReconciler{Client: c, Recorder: events.NewFakeRecorder(10), Deleted: NewDeletedRecords()}
	_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rec)})
	g.Expect(err).NotTo(HaveOccurred())
	err = c.Get(ctx, client.ObjectKeyFromObject(rec), &bindv1alpha1.DNSRecord{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the finalized record is gone: %v", err)
}
