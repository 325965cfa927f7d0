package clusters

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestZoneShapesConfig(t *testing.T) {
	base := func() *bindv1alpha1.BindZone {
		return &bindv1alpha1.BindZone{
			ObjectMeta: metav1.ObjectMeta{Generation: 1},
			Status: bindv1alpha1.BindZoneStatus{
				Serial:     new(int64(5)),
				Conditions: []metav1.Condition{{Type: bindv1alpha1.ConditionReady, Status: metav1.ConditionFalse}},
				DNSSEC:     &bindv1alpha1.ZoneDNSSECStatus{DS: []string{"example.com. 3600 IN DS 1 13 2 AB"}},
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
		{"became ready", func(z *bindv1alpha1.BindZone) { z.Status.Conditions[0].Status = metav1.ConditionTrue }, false},
		{"secondaries reported", func(z *bindv1alpha1.BindZone) {
			z.Status.Secondaries = []bindv1alpha1.SecondaryZoneStatus{{Pod: "dns-1", InSync: true}}
		}, false},
		{"spec changed", func(z *bindv1alpha1.BindZone) { z.Generation = 2 }, true},
		{"being deleted", func(z *bindv1alpha1.BindZone) { now := metav1.NewTime(time.Unix(1000, 0)); z.DeletionTimestamp = &now }, true},
		{"DS rolled", func(z *bindv1alpha1.BindZone) { z.Status.DNSSEC.DS = []string{"example.com. 3600 IN DS 2 13 2 CD"} }, true},
		{"DS gone", func(z *bindv1alpha1.BindZone) { z.Status.DNSSEC = nil }, true},
	} {
		n := base()
		tc.change(n)
		if got := zoneShapesConfig(base(), n); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.desc, got, tc.want)
		}
	}
}
