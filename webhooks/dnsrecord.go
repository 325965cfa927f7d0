package webhooks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/recordindex"
	"git.unkin.net/unkin/bind-operator/records"
)

// One mutating webhook defaults and validates a DNSRecord (oneCall); the
// kind has no validating webhook. Creates and updates are two entries of
// the same call: an update is sent only when its spec changed
// (matchConditions), and a create, which always is, skips the CEL
// evaluation the API server would otherwise run on every one of the
// thousands a GitOps tool applies (issue 15 item 2).
// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-dnsrecord,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=dnsrecords,verbs=create,versions=v1alpha1,name=mdnsrecord.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,reinvocationPolicy=IfNeeded
// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-dnsrecord,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=dnsrecords,verbs=update,versions=v1alpha1,name=mdnsrecord-update.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,reinvocationPolicy=IfNeeded,patch=`{"matchConditions":[{"name":"spec-changed","expression":"!has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// Namespace labels decide which namespaces a BindZone admits DNSRecords from
// (spec.allowedRecords); the webhook and the DNSRecord controller read them.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// dnsRecordPath is where the DNSRecord's one admission call is served.
const dnsRecordPath = "/mutate-bind-unkin-net-v1alpha1-dnsrecord"

// DNSRecordWebhook defaults and validates DNSRecords. A DNSRecord may name
// a BindZone of another namespace that admits it (spec.allowedRecords): the
// webhook reads the record's Namespace for its labels (RBAC below).
type DNSRecordWebhook struct {
	Reader client.Reader
	// Index finds DNSRecords by zone and name (recordindex.Names, in the
	// manager's cache). Nil: Reader lists the DNSRecords and filters
	// them.
	Index *recordindex.Index
}

// zoneKey is where r's BindZone is (DNSRecord.ZoneKey), with the request's
// namespace for an object that has none yet.
func zoneKey(ctx context.Context, r *v1alpha1.DNSRecord) types.NamespacedName {
	k := r.ZoneKey()
	if k.Namespace == "" {
		k.Namespace = namespaceOf(ctx, r.Namespace)
	}
	return k
}

// sameName lists the other DNSRecords of r's zone at r's name, in every
// namespace. They may be the cache's own: read them, never change them.
func (w *DNSRecordWebhook) sameName(ctx context.Context, r *v1alpha1.DNSRecord) ([]*v1alpha1.DNSRecord, error) {
	key := recordindex.Key(zoneKey(ctx, r), string(r.Spec.Name))
	self := types.NamespacedName{Namespace: namespaceOf(ctx, r.Namespace), Name: r.Name}
	var found []*v1alpha1.DNSRecord
	switch {
	case w.Index != nil:
		var err error
		if found, err = w.Index.Get(ctx, key); err != nil {
			return nil, err
		}
	case w.Reader != nil:
		var list v1alpha1.DNSRecordList
		if err := w.Reader.List(ctx, &list); err != nil {
			return nil, err
		}
		for i := range list.Items {
			found = append(found, &list.Items[i])
		}
	}
	return slices.DeleteFunc(found, func(o *v1alpha1.DNSRecord) bool {
		return (types.NamespacedName{Namespace: o.Namespace, Name: o.Name}) == self || o.DeletionTimestamp != nil || recordindex.Of(o) != key
	}), nil
}

// validateCNAMEAcrossRecords: a CNAME cannot share its name with other
// data, whether the other record set is inline in the BindZone
// (validateAgainstZone) or another DNSRecord (here). Two DNSRecords of the
// same type at one name are not refused: the older one owns the record set
// and the other reports Conflict.
//
// Only the DNSRecords the zone admits count (admission): one it does not
// admit never holds a name, or a tenant could squat the zone owner's names
// from another namespace, even before the zone exists. Without the zone,
// only the records of its namespace are sure to be admitted. A record of
// another namespace is not named: the requester may not be allowed to read
// it.
func (w *DNSRecordWebhook) validateCNAMEAcrossRecords(ctx context.Context, r *v1alpha1.DNSRecord, z *v1alpha1.BindZone, spec *field.Path, warns *admission.Warnings) field.ErrorList {
	others, err := w.sameName(ctx, r)
	if err != nil {
		*warns = append(*warns, fmt.Sprintf("other DNSRecords at %s could not be listed (%v); CNAME exclusivity was not checked", r.Spec.Name, err))
		return nil
	}
	slices.SortFunc(others, func(a, b *v1alpha1.DNSRecord) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	ns := namespaceOf(ctx, r.Namespace)
	zoneNS := zoneKey(ctx, r).Namespace
	for _, o := range others {
		if o.Spec.Type == r.Spec.Type || (o.Spec.Type != "CNAME" && r.Spec.Type != "CNAME") {
			continue
		}
		switch {
		case z == nil && o.Namespace != zoneNS:
			continue
		case z != nil:
			no, err := w.admission(ctx, z, o.Namespace, o.Spec.Name, o.Spec.Type)
			if err != nil {
				*warns = append(*warns, fmt.Sprintf("whether BindZone %s/%s admits the other DNSRecords at %s could not be read (%v); CNAME exclusivity was not checked", z.Namespace, z.Name, r.Spec.Name, err))
				return nil
			}
			if no != nil {
				continue
			}
		}
		who, fix := "a DNSRecord in another namespace", ""
		if o.Namespace == ns {
			who, fix = fmt.Sprintf("DNSRecord %q", o.Name), fmt.Sprintf(" or delete DNSRecord %q", o.Name)
		}
		if r.Spec.Type == "CNAME" {
			return field.ErrorList{field.Invalid(spec.Child("type"), r.Spec.Type, fmt.Sprintf(
				"%s already holds %s data at %s, and a CNAME cannot coexist with other records at a name; choose another name for the alias%s", who, o.Spec.Type, r.Spec.Name, fix))}
		}
		return field.ErrorList{field.Invalid(spec.Child("type"), r.Spec.Type, fmt.Sprintf(
			"%s is a CNAME at %s, and a CNAME cannot coexist with other records at a name; put the %s record at the CNAME's target%s", who, r.Spec.Name, r.Spec.Type, fix))}
	}
	return nil
}

var (
	_ admission.Defaulter[*v1alpha1.DNSRecord] = &DNSRecordWebhook{}
	_ admission.Validator[*v1alpha1.DNSRecord] = &DNSRecordWebhook{}
)

// zoneOf reads the record's BindZone; nil when it does not exist (yet) or
// cannot be read.
func (w *DNSRecordWebhook) zoneOf(ctx context.Context, r *v1alpha1.DNSRecord) *v1alpha1.BindZone {
	if w.Reader == nil || r.Spec.ZoneRef.Name == "" {
		return nil
	}
	var z v1alpha1.BindZone
	if err := w.Reader.Get(ctx, zoneKey(ctx, r), &z); err != nil {
		return nil
	}
	return &z
}

// Default canonicalises the record set against its zone: owner name made
// relative, rdata canonical, TTL from the zone's defaultTTL
// (DNSRecord.SetDefaults). Without the zone (not created yet) only the
// zone-independent parts are normalised (case of name and type, order and
// duplicates of values) and the TTL is left unset: guessing would make
// absolute names and relative rdata wrong.
//
// Nothing but the spec is touched: a DNSRecord carries no finalizer (the
// controller removes a deleted record's data from the last state its
// informer saw), so a canonical create is admitted without a patch and a
// DELETE is one write. Finalizers a client sets, another tool's or
// v1alpha1.DNSRecordFinalizer on an object of an earlier release, are left
// as they are.
func (w *DNSRecordWebhook) Default(ctx context.Context, r *v1alpha1.DNSRecord) error {
	defaultDNSRecord(r, w.zoneOf(ctx, r))
	return nil
}

// defaultDNSRecord normalises a record set; zone may be nil.
func defaultDNSRecord(r *v1alpha1.DNSRecord, zone *v1alpha1.BindZone) {
	s := &r.Spec
	if zone == nil || zone.Spec.ZoneName == "" {
		s.Name = v1alpha1.RecordName(records.FoldName(string(s.Name)))
		s.Type = v1alpha1.RecordType(strings.ToUpper(string(s.Type)))
		if s.Values != nil {
			s.Values = slices.Compact(slices.Sorted(slices.Values(s.Values)))
		}
		return
	}
	set := v1alpha1.RecordSet{Name: s.Name, Type: s.Type, TTL: s.TTL, Values: s.Values}
	out, _ := records.CanonicalizeSet(string(zone.Spec.ZoneName), set, 0, field.NewPath("spec"))
	s.Name, s.Type, s.TTL, s.Values = out.Name, out.Type, out.TTL, out.Values
	r.SetDefaults(zone)
}

// ValidateCreate validates a new record.
func (w *DNSRecordWebhook) ValidateCreate(ctx context.Context, r *v1alpha1.DNSRecord) (admission.Warnings, error) {
	return w.validate(ctx, r)
}

// ValidateUpdate validates a change.
func (w *DNSRecordWebhook) ValidateUpdate(ctx context.Context, _, newR *v1alpha1.DNSRecord) (admission.Warnings, error) {
	return w.validate(ctx, newR)
}

// ValidateDelete allows every deletion.
func (w *DNSRecordWebhook) ValidateDelete(context.Context, *v1alpha1.DNSRecord) (admission.Warnings, error) {
	return nil, nil
}

func (w *DNSRecordWebhook) validate(ctx context.Context, r *v1alpha1.DNSRecord) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	var warns admission.Warnings
	zone := w.zoneOf(ctx, r)
	zoneName := ""
	if zone != nil {
		zoneName = string(zone.Spec.ZoneName)
	} else if w.Reader != nil {
		warns = append(warns, missing("spec.zoneRef", "BindZone", r.Spec.ZoneRef.Name, zoneKey(ctx, r).Namespace)+"; the record's name and data were checked without the zone")
	}
	errs := ValidateDNSRecordSpec(&r.Spec, zoneName, spec)
	if zone != nil {
		errs = append(errs, validateAgainstZone(r, zone, spec, &warns)...)
		errs = append(errs, w.validateAdmitted(ctx, r, zone, spec)...)
	}
	if len(errs) == 0 {
		errs = append(errs, w.validateCNAMEAcrossRecords(ctx, r, zone, spec, &warns)...)
	}
	return warns, invalid("DNSRecord", r.Name, errs)
}

// ValidateDNSRecordSpec checks the record set. zoneName "" (zone unknown)
// still checks the data's syntax, reading relative names as if the zone
// were the root, but cannot tell whether an absolute owner is in the zone.
func ValidateDNSRecordSpec(s *v1alpha1.DNSRecordSpec, zoneName string, fldPath *field.Path) field.ErrorList {
	zone := zoneName
	if zone == "" {
		zone = "."
	}
	name := string(s.Name)
	if zoneName == "" && strings.HasSuffix(name, ".") {
		name = strings.TrimSuffix(name, ".")
		if name == "" {
			name = "@"
		}
	}
	set := v1alpha1.RecordSet{Name: v1alpha1.RecordName(name), Type: s.Type, TTL: s.TTL, Values: s.Values}
	_, errs := records.CanonicalizeSet(zone, set, 0, fldPath)
	return errs
}

// validateAdmitted refuses a DNSRecord of another namespace that the zone
// does not admit (admission).
func (w *DNSRecordWebhook) validateAdmitted(ctx context.Context, r *v1alpha1.DNSRecord, z *v1alpha1.BindZone, spec *field.Path) field.ErrorList {
	if _, err := records.RelativeName(string(z.Spec.ZoneName), string(r.Spec.Name)); err != nil {
		return nil // reported by ValidateDNSRecordSpec
	}
	ns := namespaceOf(ctx, r.Namespace)
	no, err := w.admission(ctx, z, ns, r.Spec.Name, r.Spec.Type)
	if err != nil {
		return field.ErrorList{field.InternalError(spec.Child("zoneRef", "namespace"), err)}
	}
	if no == nil {
		return nil
	}
	switch no.Field {
	case "name":
		return field.ErrorList{field.Invalid(spec.Child("name"), r.Spec.Name, no.Reason)}
	case "type":
		return field.ErrorList{field.Invalid(spec.Child("type"), r.Spec.Type, no.Reason)}
	}
	return field.ErrorList{field.Invalid(spec.Child("zoneRef", "namespace"), zoneKey(ctx, r).Namespace, no.Reason)}
}

// admission is zone z's verdict on a DNSRecord of namespace ns holding
// name and typ: records.Admits (spec.allowedRecords), the rule the
// DNSRecord controller applies too (NotAdmitted, claims, owned sets). nil
// when admitted; the zone's own namespace always is. A name outside the
// zone is not admitted.
func (w *DNSRecordWebhook) admission(ctx context.Context, z *v1alpha1.BindZone, ns string, name v1alpha1.RecordName, typ v1alpha1.RecordType) (*records.Refusal, error) {
	if ns == z.Namespace {
		return nil, nil
	}
	var namespace corev1.Namespace
	if err := w.Reader.Get(ctx, types.NamespacedName{Name: ns}, &namespace); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading namespace %q to check BindZone %s/%s's allowedRecords: %w", ns, z.Namespace, z.Name, err)
	}
	rel, err := records.RelativeName(string(z.Spec.ZoneName), string(name))
	if err != nil {
		return &records.Refusal{Field: "name", Reason: err.Error()}, nil
	}
	return records.Admits(z, ns, namespace.Labels, rel, typ), nil
}

// validateAgainstZone checks what needs the zone: it must be a Primary
// zone, the record must not collide with the zone's inline records (two
// owners of one RRset would overwrite each other on every reconcile), and
// CNAME exclusivity holds across both.
func validateAgainstZone(r *v1alpha1.DNSRecord, z *v1alpha1.BindZone, spec *field.Path, warns *admission.Warnings) field.ErrorList {
	var errs field.ErrorList
	if !z.Spec.IsPrimary() {
		return field.ErrorList{field.Invalid(spec.Child("zoneRef", "name"), r.Spec.ZoneRef.Name, fmt.Sprintf("BindZone %q is a %s zone; DNSRecords can only update Primary zones", z.Name, z.Spec.Type))}
	}
	// The zone's records are stored canonical; the record's name is too,
	// unless its zone appeared only after it was defaulted.
	name, err := records.RelativeName(string(z.Spec.ZoneName), string(r.Spec.Name))
	if err != nil {
		return nil // reported by ValidateDNSRecordSpec
	}
	typ := r.Spec.Type
	for _, s := range z.Spec.Records {
		if string(s.Name) != name {
			continue
		}
		st := s.Type
		switch {
		case st == typ:
			errs = append(errs, field.Duplicate(spec.Child("name"), fmt.Sprintf("%s %s is already declared in BindZone %q spec.records; manage it in one place", name, typ, z.Name)))
		case st == "CNAME" || typ == "CNAME":
			errs = append(errs, field.Invalid(spec.Child("type"), typ, fmt.Sprintf("BindZone %q declares %s at %s, and a CNAME cannot coexist with other records at a name; remove one of them", z.Name, st, name)))
		}
	}
	return errs
}
