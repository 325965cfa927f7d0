package dnsrecords

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// A DNSRecord that its zone does not admit (spec.allowedRecords: another
// namespace not selected, a name outside the suffixes, a type not listed;
// records.Admits, the rule the webhook refuses with) takes part in
// nothing: it reports NotAdmitted and writes no data, and it never claims
// a name (claimant), never counts as an owned set for the agent
// (ownedSets). Admission at create time is not enough: a record applied
// before its zone existed was admitted with a warning, and the zone's
// owner may narrow allowedRecords or a namespace lose its labels later.
// Without this, a squatter in another namespace that wrote a DNSRecord for
// a zone before the zone existed would, being older, take the name from
// the zone owner's own record (issue 44, item 3).
//
// admissions is the one place that decides it for the controllers: the
// NotAdmitted condition, the claims and the owned sets all ask it.

// admissions decides which DNSRecords one zone admits, reading each
// namespace's labels once.
type admissions struct {
	reader client.Reader
	zone   *bindv1alpha1.BindZone
	labels map[string]map[string]string // namespace → its labels
}

func newAdmissions(reader client.Reader, zone *bindv1alpha1.BindZone) *admissions {
	return &admissions{reader: reader, zone: zone}
}

// refusal says why the zone does not admit rec, or nil when it does. The
// zone's own namespace is always admitted, without a read.
func (a *admissions) refusal(ctx context.Context, rec *bindv1alpha1.DNSRecord) (*records.Refusal, error) {
	if rec.Namespace == a.zone.Namespace {
		return nil, nil
	}
	nsLabels, err := a.namespaceLabels(ctx, rec.Namespace)
	if err != nil {
		return nil, err
	}
	return recordAdmission(a.zone, rec, nsLabels), nil
}

// admits tells whether the zone admits rec.
func (a *admissions) admits(ctx context.Context, rec *bindv1alpha1.DNSRecord) (bool, error) {
	no, err := a.refusal(ctx, rec)
	return no == nil, err
}

// namespaceLabels are the labels of namespace ns; none for a namespace
// that is gone (its records go with it).
func (a *admissions) namespaceLabels(ctx context.Context, ns string) (map[string]string, error) {
	if l, ok := a.labels[ns]; ok {
		return l, nil
	}
	var n corev1.Namespace
	if err := a.reader.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if a.labels == nil {
		a.labels = map[string]map[string]string{}
	}
	a.labels[ns] = n.Labels
	return n.Labels, nil
}

// recordAdmission is the zone's verdict on rec, whose namespace has the
// labels nsLabels: records.Admits on the record's name relative to the
// zone. A name that is not in the zone is not admitted.
func recordAdmission(zone *bindv1alpha1.BindZone, rec *bindv1alpha1.DNSRecord, nsLabels map[string]string) *records.Refusal {
	if rec.Namespace == zone.Namespace {
		return nil
	}
	name, err := records.RelativeName(string(zone.Spec.ZoneName), string(rec.Spec.Name))
	if err != nil {
		return &records.Refusal{Field: "name", Reason: err.Error()}
	}
	return records.Admits(zone, rec.Namespace, nsLabels, name, rec.Spec.Type)
}
