package records

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestAdmits(t *testing.T) {
	zone := func(a *v1alpha1.AllowedRecords) *v1alpha1.BindZone {
		return &v1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "apps"}, Spec: v1alpha1.BindZoneSpec{AllowedRecords: a}}
	}
	team := map[string]string{"team": "a"}
	open := &v1alpha1.AllowedRecords{}
	narrow := &v1alpha1.AllowedRecords{
		Namespaces:   metav1.LabelSelector{MatchLabels: team},
		NameSuffixes: []v1alpha1.RecordName{"team-a", "@"},
		Types:        []v1alpha1.RecordType{"A"},
	}
	for _, tc := range []struct {
		desc      string
		zone      *v1alpha1.BindZone
		ns        string
		labels    map[string]string
		name      string
		typ       v1alpha1.RecordType
		wantField string // "" admitted
	}{
		{"own namespace, no allowedRecords", zone(nil), "dns", nil, "x", "TXT", ""},
		{"other namespace, no allowedRecords", zone(nil), "apps", team, "x", "A", "zoneRef.namespace"},
		{"empty selector admits every namespace", zone(open), "apps", nil, "x", "TXT", ""},
		{"selected namespace", zone(narrow), "apps", team, "api.team-a", "A", ""},
		{"suffix itself", zone(narrow), "apps", team, "team-a", "A", ""},
		{"apex", zone(narrow), "apps", team, "@", "A", ""},
		{"namespace not selected", zone(narrow), "apps", map[string]string{"team": "b"}, "api.team-a", "A", "zoneRef.namespace"},
		{"suffix without its dot", zone(narrow), "apps", team, "xteam-a", "A", "name"},
		{"type not admitted", zone(narrow), "apps", team, "api.team-a", "TXT", "type"},
		{"own namespace ignores the limits", zone(narrow), "dns", nil, "elsewhere", "TXT", ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := Admits(tc.zone, tc.ns, tc.labels, tc.name, tc.typ)
			if tc.wantField == "" {
				NewWithT(t).Expect(got).To(BeNil())
				return
			}
			NewWithT(t).Expect(got).NotTo(BeNil())
			NewWithT(t).Expect(got.Field).To(Equal(tc.wantField), got.Reason)
		})
	}
}
