package records

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Refusal says why a zone does not admit a DNSRecord: Field is the
// DNSRecord's field at fault ("zoneRef.namespace", "name" or "type").
type Refusal struct {
	Field, Reason string
}

// Admits says whether zone z admits a DNSRecord of namespace ns
// (whose labels are nsLabels) holding name (relative to the zone, "@" for
// the apex) with type typ: nil when it does. The zone's own namespace is
// always admitted; another only through spec.allowedRecords. The webhook
// refuses with it, and the DNSRecord controller checks it again, since the
// zone's owner may narrow allowedRecords later.
func Admits(z *v1alpha1.BindZone, ns string, nsLabels map[string]string, name string, typ v1alpha1.RecordType) *Refusal {
	if ns == z.Namespace {
		return nil
	}
	a := z.Spec.AllowedRecords
	if a == nil {
		return &Refusal{"zoneRef.namespace", fmt.Sprintf("BindZone %s/%s does not admit DNSRecords from other namespaces; its owner can admit namespace %q with spec.allowedRecords", z.Namespace, z.Name, ns)}
	}
	sel, err := metav1.LabelSelectorAsSelector(&a.Namespaces)
	if err != nil {
		return &Refusal{"zoneRef.namespace", fmt.Sprintf("BindZone %s/%s has an invalid spec.allowedRecords.namespaces (%v); its owner must fix it", z.Namespace, z.Name, err)}
	}
	if !sel.Matches(labels.Set(nsLabels)) {
		return &Refusal{"zoneRef.namespace", fmt.Sprintf("BindZone %s/%s admits DNSRecords only from namespaces matching %s, and namespace %q does not; ask the zone's owner, or use a zone of your own namespace", z.Namespace, z.Name, sel, ns)}
	}
	if len(a.NameSuffixes) > 0 && !slices.ContainsFunc(a.NameSuffixes, func(s v1alpha1.RecordName) bool {
		suffix := strings.ToLower(strings.TrimSuffix(string(s), "."))
		return name == suffix || (suffix != "@" && strings.HasSuffix(name, "."+suffix))
	}) {
		return &Refusal{"name", fmt.Sprintf("BindZone %s/%s admits names from other namespaces only under %v; choose a name there", z.Namespace, z.Name, a.NameSuffixes)}
	}
	if len(a.Types) > 0 && !slices.Contains(a.Types, typ) {
		return &Refusal{"type", fmt.Sprintf("BindZone %s/%s admits only record types %v from other namespaces", z.Namespace, z.Name, a.Types)}
	}
	return nil
}
