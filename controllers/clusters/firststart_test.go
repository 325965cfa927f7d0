package clusters

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestFirstStartWait(t *testing.T) {
	created := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	cluster := func(at time.Time) *bindv1alpha1.BindCluster {
		return &bindv1alpha1.BindCluster{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at)}}
	}
	for _, tc := range []struct {
		name    string
		cluster *bindv1alpha1.BindCluster
		running string
		now     time.Time
		want    time.Duration
	}{
		{"just created", cluster(created), "", created, firstStartSettle},
		{"a second old", cluster(created), "", created.Add(time.Second), firstStartSettle - time.Second},
		{"old enough", cluster(created), "", created.Add(firstStartSettle), 0},
		{"long created, StatefulSet deleted", cluster(created), "", created.Add(time.Hour), 0},
		{"pods running: a config change never waits", cluster(created), "abc", created, 0},
		{"no creation time (not from the API server)", cluster(time.Time{}), "", created, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(firstStartWait(tc.cluster, tc.running, tc.now)).To(Equal(tc.want))
		})
	}
}
