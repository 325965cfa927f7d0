package dnsrecords

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestZoneMattersToRecords(t *testing.T) {
	base := func() *bindv1alpha1.BindZone {
		seeded := metav1.NewTime(time.Unix(1000, 0))
		return &bindv1alpha1.BindZone{
			ObjectMeta: metav1.ObjectMeta{Generation: 1},
			Status: bindv1alpha1.BindZoneStatus{
				Serial:          new(int64(5)),
				PrimarySeededAt: &seeded,
				Conditions:      []metav1.Condition{{Type: bindv1alpha1.ConditionReady, Status: metav1.ConditionTrue}},
			},
		}
	}
	for _, tc := range []struct {
		desc   string
		change func(*bindv1alpha1.BindZone)
		want   bool
	}{
		{"nothing", func(*bindv1alpha1.BindZone) {}, false},
		{"serial moved", func(z *bindv1alpha1.BindZone) { z.Status.Serial = new(int64(6)) }, false},
		{"drift check", func(z *bindv1alpha1.BindZone) { now := metav1.Now(); z.Status.LastDriftCheck = &now }, false},
		{"spec changed", func(z *bindv1alpha1.BindZone) { z.Generation = 2 }, true},
		{"became unready", func(z *bindv1alpha1.BindZone) { z.Status.Conditions[0].Status = metav1.ConditionFalse }, true},
		{"seeded again", func(z *bindv1alpha1.BindZone) {
			later := metav1.NewTime(time.Unix(2000, 0))
			z.Status.PrimarySeededAt = &later
		}, true},
		{"being deleted", func(z *bindv1alpha1.BindZone) { now := metav1.Now(); z.DeletionTimestamp = &now }, true},
	} {
		n := base()
		tc.change(n)
		if got := zoneMattersToRecords(base(), n); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.desc, got, tc.want)
		}
	}
}
