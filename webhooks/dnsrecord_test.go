package webhooks

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestCNAMERuleOnlyBetweenAdmittedRecords: a DNSRecord of another
// namespace that the zone does not admit (or, before the zone exists,
// any of another namespace than the zone's) never holds a name against
// the zone's own records; one it admits does, and is not named to the
// requester.
func TestCNAMERuleOnlyBetweenAdmittedRecords(t *testing.T) {
	in := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	closed := &v1alpha1.BindZone{ObjectMeta: in("ns", "example"), Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "example.com", Type: v1alpha1.ZonePrimary,
	}}
	open := closed.DeepCopy()
	open.Spec.AllowedRecords = &v1alpha1.AllowedRecords{Namespaces: metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}
	squatter := &v1alpha1.DNSRecord{ObjectMeta: in("team-b", "grab"), Spec: v1alpha1.DNSRecordSpec{
		ZoneRef: v1alpha1.ZoneReference{Namespace: "ns", Name: "example"}, Name: "www", Type: "CNAME", Values: []string{"evil.example.net."}}}
	teamB := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"team": "b"}}}
	owners := &v1alpha1.DNSRecord{ObjectMeta: in("ns", "www"), Spec: v1alpha1.DNSRecordSpec{
		ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "www", Type: "A", Values: []string{"192.0.2.1"}}}
	for _, tc := range []struct {
		desc string
		zone *v1alpha1.BindZone // nil: not created yet
		want string             // "" for admitted
	}{
		{"the zone admits no other namespace", closed, ""},
		{"the zone does not exist yet", nil, ""},
		{"the zone admits the other namespace", open,
			`Invalid value: "A": a DNSRecord in another namespace is a CNAME at www, and a CNAME cannot coexist with other records at a name; put the A record at the CNAME's target`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			g := NewWithT(t)
			objs := []client.Object{squatter, teamB, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}}
			if tc.zone != nil {
				objs = append(objs, tc.zone)
			}
			w := testWebhooks(t, objs...).record
			r := owners.DeepCopy()
			g.Expect(w.Default(context.Background(), r)).To(Succeed())
			_, err := w.ValidateCreate(context.Background(), r)
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(causes(t, err)).To(Equal(field.ErrorList{{Type: field.ErrorTypeInvalid, Field: "spec.type", Detail: tc.want}}))
			g.Expect(err.Error()).NotTo(ContainSubstring("grab"))
			g.Expect(err.Error()).NotTo(ContainSubstring("team-b"))
		})
	}
}
