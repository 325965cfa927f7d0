package zones

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestCaughtUpZoneIsReportedServedByTheLook: a Replicating zone whose
// secondaries all serve the primary's serial is reported Served by the
// bindzone-replication controller's own status patch, with the status
// the zone's full reconcile writes. Everything else goes to the BindZone
// controller: a secondary at another serial, a zone changed since it was
// read, a status of an older generation, a signed zone (its DS records
// are the full reconcile's to read). A zone deleted meanwhile, or one that
// is not Replicating, is left alone.
func TestCaughtUpZoneIsReportedServedByTheLook(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	const primary = 7
	inSync := func() []bindv1alpha1.SecondaryZoneStatus {
		return []bindv1alpha1.SecondaryZoneStatus{{Pod: "dns-1", Serial: ptr.To[int64](primary)}, {Pod: "dns-2", Serial: ptr.To[int64](primary)}}
	}
	replicating := func(mutate func(*bindv1alpha1.BindZone)) *bindv1alpha1.BindZone {
		z := &bindv1alpha1.BindZone{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "example", Generation: 3},
			Spec:       bindv1alpha1.BindZoneSpec{ClusterRef: bindv1alpha1.LocalObjectReference{Name: "dns"}, ZoneName: "example.test", Type: bindv1alpha1.ZonePrimary},
			// The serial of the reconcile that reported it Replicating:
			// the primary has moved on since.
			Status: bindv1alpha1.BindZoneStatus{ObservedGeneration: 3, Serial: ptr.To[int64](primary - 1),
				Secondaries: []bindv1alpha1.SecondaryZoneStatus{{Pod: "dns-1", Serial: ptr.To[int64](primary - 1)}, {Pod: "dns-2"}}},
		}
		setZoneCondition(z, &z.Status, metav1.ConditionTrue, bindv1alpha1.ReasonReplicating, "the primary serves serial 7; some secondaries do not serve it yet")
		if mutate != nil {
			mutate(z)
		}
		return z
	}
	for _, tc := range []struct {
		name       string
		zone       *bindv1alpha1.BindZone
		secs       []bindv1alpha1.SecondaryZoneStatus
		editBefore bool // the zone changes after the look read it
		deleted    bool // the zone is gone after the look read it
		served     bool // reported Served by the look
		handedOver bool // sent to the BindZone controller
	}{
		{name: "every secondary at the primary's serial", zone: replicating(nil), secs: inSync(), served: true},
		{name: "a secondary ahead of the primary", zone: replicating(nil),
			secs: []bindv1alpha1.SecondaryZoneStatus{{Pod: "dns-1", Serial: ptr.To[int64](primary)}, {Pod: "dns-2", Serial: ptr.To[int64](primary + 5)}}, handedOver: true},
		{name: "changed since the look read it", zone: replicating(nil), secs: inSync(), editBefore: true, handedOver: true},
		{name: "deleted since the look read it", zone: replicating(nil), secs: inSync(), deleted: true},
		{name: "a signed zone", zone: replicating(func(z *bindv1alpha1.BindZone) {
			z.Spec.DNSSECPolicyRef = &bindv1alpha1.LocalObjectReference{Name: "signed"}
		}), secs: inSync(), handedOver: true},
		{name: "status of an older generation", zone: replicating(func(z *bindv1alpha1.BindZone) { z.Generation = 4 }), secs: inSync(), handedOver: true},
		{name: "already Served", zone: replicating(func(z *bindv1alpha1.BindZone) { setServed(z, &z.Status) }), secs: inSync()},
		{name: "records refused", zone: replicating(func(z *bindv1alpha1.BindZone) {
			setZoneCondition(z, &z.Status, metav1.ConditionFalse, bindv1alpha1.ReasonRecordsRefused, "1 record set(s) of spec.records were not applied")
		}), secs: inSync()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.zone).WithStatusSubresource(tc.zone).Build()
			var read bindv1alpha1.BindZone
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(tc.zone), &read)).To(Succeed())
			if tc.editBefore {
				edited := read.DeepCopy()
				edited.Annotations = map[string]string{"edited": "yes"}
				g.Expect(c.Update(ctx, edited)).To(Succeed())
			}
			if tc.deleted {
				g.Expect(c.Delete(ctx, read.DeepCopy())).To(Succeed())
			}
			before := read.Status.DeepCopy()
			ch := make(chan event.GenericEvent, 1)
			r := replicationReconciler{BindZoneReconciler: &BindZoneReconciler{Client: c, caughtUp: ch}, state: &replication{}}
			r.reportCaughtUp(ctx, &read, primary, tc.secs)

			var stored bindv1alpha1.BindZone
			err := c.Get(ctx, client.ObjectKeyFromObject(tc.zone), &stored)
			switch {
			case tc.deleted:
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
			case tc.served:
				g.Expect(err).NotTo(HaveOccurred())
				// What the full reconcile writes for the same look.
				want := tc.zone.DeepCopy()
				g.Expect(observed(&want.Status, primary, inSync())).To(BeTrue())
				setServed(want, &want.Status)
				g.Expect(stored.Status.Serial).To(Equal(ptr.To[int64](primary)))
				g.Expect(stored.Status.Serial).To(Equal(want.Status.Serial))
				g.Expect(stored.Status.Secondaries).To(Equal(want.Status.Secondaries))
				g.Expect(stored.Status.Secondaries).To(HaveEach(HaveField("InSync", BeTrue())))
				ready := meta.FindStatusCondition(stored.Status.Conditions, bindv1alpha1.ConditionReady)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(ready.Reason).To(Equal(bindv1alpha1.ReasonServed))
				g.Expect(ready.Message).To(Equal("zone example.test is served by the primary (serial 7) and every secondary."))
				g.Expect(ready.ObservedGeneration).To(Equal(stored.Generation))
				wantReady := meta.FindStatusCondition(want.Status.Conditions, bindv1alpha1.ConditionReady)
				g.Expect(ready.Message).To(Equal(wantReady.Message))
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(stored.Status).To(Equal(*before), "the look wrote no status")
			}
			g.Expect(ch).To(HaveLen(map[bool]int{true: 1}[tc.handedOver]), "handed to the BindZone controller")
		})
	}
}
