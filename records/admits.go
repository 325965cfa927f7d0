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

// A refusal names the zone (the record's own zoneRef) and the field of
// spec.allowedRecords that refuses, never its value: the requester lives
// in another namespace and may not be allowed to read the zone, and the
// selector, suffixes and types are its owner's. Whoever may read the
// BindZone sees them there.
//
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
		return &Refusal{"zoneRef.namespace", fmt.Sprintf("BindZone %s/%s has an invalid spec.allowedRecords.namespaces; its owner must fix it", z.Namespace, z.Name)}
	}
	if !sel.Matches(labels.Set(nsLabels)) {
		return &Refusal{"zoneRef.namespace", fmt.Sprintf("BindZone %s/%s does not admit DNSRecords from namespace %q: its spec.allowedRecords.namespaces does not select it; ask the zone's owner, or use a zone of your own namespace", z.Namespace, z.Name, ns)}
	}
	if len(a.NameSuffixes) > 0 && !slices.ContainsFunc(a.NameSuffixes, func(s v1alpha1.RecordName) bool {
		suffix := strings.ToLower(strings.TrimSuffix(string(s), "."))
		return name == suffix || (suffix != "@" && strings.HasSuffix(name, "."+suffix))
	}) {
		return &Refusal{"name", fmt.Sprintf("BindZone %s/%s does not admit the name %q from other namespaces: it is under none of its spec.allowedRecords.nameSuffixes; ask the zone's owner which names it admits", z.Namespace, z.Name, name)}
	}
	if len(a.Types) > 0 && !slices.Contains(a.Types, typ) {
		return &Refusal{"type", fmt.Sprintf("BindZone %s/%s does not admit record type %s from other namespaces: it is not among its spec.allowedRecords.types; ask the zone's owner which types it admits", z.Namespace, z.Name, typ)}
	}
	return nil
}
