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
	if zone != nil && !blames(errs, spec.Child("name"), spec.Child("type")) {
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
//
// The name and the type come first, each at its own field: the values
// are parsed as records of that type at that name, so a bad name or type
// would otherwise be reported at spec.values[0] as bad data. When either
// is wrong the values are not checked.
func ValidateDNSRecordSpec(s *v1alpha1.DNSRecordSpec, zoneName string, fldPath *field.Path) field.ErrorList {
	if errs := validateOwnerAndType(s.Name, s.Type, zoneName, fldPath); len(errs) > 0 {
		return errs
	}
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

// blames tells whether errs holds an error at one of paths.
func blames(errs field.ErrorList, paths ...*field.Path) bool {
	for _, e := range errs {
		for _, p := range paths {
			if e.Field == p.String() {
				return true
			}
		}
	}
	return false
}

// validateOwnerAndType checks a record set's owner name and type on their
// own, before its data: the same rules as the CRD's pattern on
// spec.name and enum on spec.type, which the API server applies only
// after this webhook, with a sentence for each way to get them wrong.
func validateOwnerAndType(name v1alpha1.RecordName, typ v1alpha1.RecordType, zoneName string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if msg := recordNameProblem(string(name), zoneName); msg != "" {
		if strings.TrimSpace(string(name)) == "" {
			errs = append(errs, field.Required(fldPath.Child("name"), msg))
		} else {
			errs = append(errs, field.Invalid(fldPath.Child("name"), name, msg))
		}
	}
	if msg := recordTypeProblem(string(typ)); msg != "" {
		if typ == "" {
			errs = append(errs, field.Required(fldPath.Child("type"), msg))
		} else {
			errs = append(errs, field.Invalid(fldPath.Child("type"), typ, msg))
		}
	}
	return errs
}

// recordTypes lists the managed types for messages.
var recordTypes = func() string {
	names := make([]string, len(v1alpha1.RecordTypes))
	for i, t := range v1alpha1.RecordTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}()

// recordTypeProblem says what is wrong with a record type, "" when it is
// one the operator manages.
func recordTypeProblem(typ string) string {
	t := strings.ToUpper(strings.TrimSpace(typ))
	switch t {
	case "":
		return "name the record type, one of " + recordTypes
	case "SOA":
		return "the SOA record belongs to the zone: set it in the BindZone's spec.soa, not in a DNSRecord"
	case "ANY", "*":
		return "ANY is a query type, not a record type; create one DNSRecord per record type"
	case "AXFR", "IXFR", "MAILA", "MAILB", "OPT", "TSIG", "TKEY":
		return fmt.Sprintf("%s is not a record type a zone holds; use one of %s", t, recordTypes)
	case "DNSKEY", "RRSIG", "NSEC", "NSEC3", "NSEC3PARAM", "CDS", "CDNSKEY":
		return fmt.Sprintf("%s records are made by BIND when the zone is signed; give the BindZone a spec.dnssecPolicyRef instead", t)
	}
	if records.IsSupported(t) {
		return ""
	}
	return fmt.Sprintf("record type %q is not supported; use one of %s", typ, recordTypes)
}

// recordNameProblem says what is wrong with a record's owner name, "" when
// it is a name the CRD's pattern takes: "@", "*", or dot-separated labels
// of letters, digits, underscores and inner hyphens, at most 63 octets
// each, the leftmost possibly "*", with an optional final dot; and the
// absolute name fits in 255 octets. zoneName "" is an unknown zone.
func recordNameProblem(name, zoneName string) string {
	n := strings.TrimSpace(name)
	switch n {
	case "":
		return "name the record's owner, relative to the zone (www, _sip._tcp, *.apps), or @ for the zone apex"
	case "@", "*":
		return ""
	case ".":
		return `"." is the root; use @ for the zone apex, or a name relative to the zone`
	}
	labels := strings.Split(strings.TrimSuffix(n, "."), ".")
	for i, l := range labels {
		switch {
		case l == "":
			return fmt.Sprintf("%q has an empty label (a leading dot or two dots in a row); write the labels separated by single dots", name)
		case l == "*" && i == 0:
			continue
		case l == "*" || strings.Contains(l, "*"):
			return fmt.Sprintf("%q has a * that is not the whole leftmost label; a wildcard is written *.name", name)
		case len(l) > v1alpha1.MaxLabelLength:
			return fmt.Sprintf("label %q is %d octets long; a DNS label holds at most %d", l, len(l), v1alpha1.MaxLabelLength)
		case l[0] == '-' || l[len(l)-1] == '-':
			return fmt.Sprintf("label %q starts or ends with a hyphen; a hyphen may only sit inside a label", l)
		}
		for j := 0; j < len(l); j++ {
			if c := l[j]; !isLabelByte(c) {
				what := fmt.Sprintf("%q", string(rune(c)))
				switch {
				case c == ' ' || c == '\t':
					what = "a space"
				case c >= 0x80:
					what = "a non-ASCII character"
				}
				return fmt.Sprintf("%q holds %s, which a record name cannot; use letters, digits, hyphens and underscores, with dots between labels (an internationalised name in its xn-- form)", name, what)
			}
		}
	}
	fqdn := records.FQDN(zoneName, n)
	if zoneName == "" {
		fqdn = strings.TrimSuffix(n, ".") + "."
	}
	if len(fqdn) > v1alpha1.MaxDomainNameLength+1 {
		return fmt.Sprintf("the absolute name %s is %d octets long without the final dot, more than the %d a domain name may hold; shorten it", fqdn, len(fqdn)-1, v1alpha1.MaxDomainNameLength)
	}
	return ""
}

// isLabelByte tells the bytes the CRD's pattern takes in a label.
func isLabelByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
