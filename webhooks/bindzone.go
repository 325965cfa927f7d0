package webhooks

import (
	"context"
	"fmt"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-bindzone,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindzones,verbs=create;update,versions=v1alpha1,name=mbindzone.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-bind-unkin-net-v1alpha1-bindzone,mutating=false,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindzones,verbs=create;update,versions=v1alpha1,name=vbindzone.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// BindZoneWebhook defaults and validates BindZones.
type BindZoneWebhook struct {
	Reader client.Reader
}

var (
	_ admission.Defaulter[*v1alpha1.BindZone] = &BindZoneWebhook{}
	_ admission.Validator[*v1alpha1.BindZone] = &BindZoneWebhook{}
)

// Default canonicalises the zone's names (records package), fills the
// defaults (BindZone.SetDefaults) and canonicalises the records of a
// Primary zone. Bad records are left for validation.
func (w *BindZoneWebhook) Default(_ context.Context, z *v1alpha1.BindZone) error {
	s := &z.Spec
	s.ZoneName = v1alpha1.DomainName(records.CanonicalZone(string(s.ZoneName)))
	z.SetDefaults()
	if soa := s.SOA; soa != nil {
		if soa.PrimaryNameServer != "" {
			soa.PrimaryNameServer = v1alpha1.DomainName(records.CanonicalZone(string(soa.PrimaryNameServer)))
		}
		soa.ResponsiblePerson = v1alpha1.DomainName(records.CanonicalZone(string(soa.ResponsiblePerson)))
	}
	if s.Type == v1alpha1.ZonePrimary && len(s.Records) > 0 {
		s.Records, _ = records.Canonicalize(string(s.ZoneName), s.Records, z.EffectiveDefaultTTL(), field.NewPath("spec", "records"))
	}
	defaultAddressList(s.AllowTransfer)
	defaultAddressList(s.AllowQuery)
	defaultForwarders(s.Forwarders)
	defaultRemoteServers(s.Primaries)
	defaultRemoteServers(s.ExternalSecondaries)
	return nil
}

// ValidateCreate validates a new zone.
func (w *BindZoneWebhook) ValidateCreate(ctx context.Context, z *v1alpha1.BindZone) (admission.Warnings, error) {
	return w.validate(ctx, z)
}

// ValidateUpdate validates a change.
func (w *BindZoneWebhook) ValidateUpdate(ctx context.Context, _, newZ *v1alpha1.BindZone) (admission.Warnings, error) {
	return w.validate(ctx, newZ)
}

// ValidateDelete allows every deletion.
func (w *BindZoneWebhook) ValidateDelete(context.Context, *v1alpha1.BindZone) (admission.Warnings, error) {
	return nil, nil
}

func (w *BindZoneWebhook) validate(ctx context.Context, z *v1alpha1.BindZone) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	errs := ValidateBindZoneSpec(&z.Spec, spec)
	var warns admission.Warnings
	errs = append(errs, w.validateReferences(ctx, z, &warns)...)
	return warns, invalid("BindZone", z.Name, errs)
}

// ValidateBindZoneSpec checks a zone spec without other objects, where the
// CRD cannot: record data and the rules between record sets, the SOA
// MNAME's address, and the address and server lists.
func ValidateBindZoneSpec(s *v1alpha1.BindZoneSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	zone := string(s.ZoneName)
	if len(s.Records) > 0 {
		rp := fldPath.Child("records")
		canon, recErrs := records.Canonicalize(zone, s.Records, v1alpha1.DefaultTTL, rp)
		errs = append(errs, recErrs...)
		if len(recErrs) == 0 {
			// Paths of the set rules index the canonical list, which is the
			// stored one whenever the mutating webhook ran.
			errs = append(errs, records.ValidateSets(zone, canon, rp)...)
		}
	}
	if soa := s.SOA; soa != nil {
		sp := fldPath.Child("soa")
		// A seeded zone's file holds its own NS and glue, which named
		// checks when it loads it; spec.records need not repeat them.
		if soa.PrimaryNameServer != "" && s.SeedFrom == nil {
			errs = append(errs, validateMNAMEGlue(zone, string(soa.PrimaryNameServer), s.Records, sp.Child("primaryNameServer"))...)
		}
	}
	errs = append(errs, ValidateAddressMatchList(s.AllowTransfer, fldPath.Child("allowTransfer"))...)
	errs = append(errs, ValidateAddressMatchList(s.AllowQuery, fldPath.Child("allowQuery"))...)
	errs = append(errs, ValidateServers(s.Forwarders, fldPath.Child("forwarders"))...)
	errs = append(errs, ValidateForwarderTargets(s.Forwarders, s.ClusterRef.Name, fldPath.Child("forwarders"))...)
	errs = append(errs, ValidateServers(s.Primaries, fldPath.Child("primaries"))...)
	errs = append(errs, ValidateServers(s.ExternalSecondaries, fldPath.Child("externalSecondaries"))...)
	if a := s.AllowedRecords; a != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(&a.Namespaces, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("allowedRecords", "namespaces"))...)
	}
	return errs
}

// validateReferences checks the objects the zone names. The cluster's
// mode decides which zone types make sense: an Authoritative cluster runs
// with recursion off, and BIND consults Forward and Stub zones only while
// recursing, so such a zone would silently never be used.
func (w *BindZoneWebhook) validateReferences(ctx context.Context, z *v1alpha1.BindZone, warns *admission.Warnings) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	f := refs{r: w.Reader, ns: namespaceOf(ctx, z.Namespace)}
	var cluster v1alpha1.BindCluster
	if f.expect(ctx, "spec.clusterRef", "BindCluster", z.Spec.ClusterRef.Name, &cluster, warns) {
		if cluster.Spec.Mode == v1alpha1.ModeAuthoritative && (z.Spec.Type == v1alpha1.ZoneForward || z.Spec.Type == v1alpha1.ZoneStub) {
			errs = append(errs, field.Invalid(spec.Child("type"), z.Spec.Type, fmt.Sprintf("BindCluster %q is Authoritative (recursion off), and BIND uses %s zones only when recursing; put the zone on a Resolver cluster", cluster.Name, z.Spec.Type)))
		}
	}
	if z.Spec.ViewRef != nil {
		var view v1alpha1.BindView
		if f.expect(ctx, "spec.viewRef", "BindView", z.Spec.ViewRef.Name, &view, warns) && view.Spec.ClusterRef.Name != z.Spec.ClusterRef.Name {
			errs = append(errs, field.Invalid(spec.Child("viewRef", "name"), z.Spec.ViewRef.Name, fmt.Sprintf("BindView %q belongs to cluster %q, not %q; name a view of the zone's cluster", view.Name, view.Spec.ClusterRef.Name, z.Spec.ClusterRef.Name)))
		} else if view.Spec.MatchRecursiveOnly && z.Spec.IsPrimary() {
			errs = append(errs, field.Invalid(spec.Child("viewRef", "name"), z.Spec.ViewRef.Name, fmt.Sprintf("BindView %q matches only recursive queries, and a Primary zone's transfers, NOTIFYs and UPDATEs are not: its secondaries would never get it; put the zone in a view without matchRecursiveOnly", view.Name)))
		}
	} else {
		var views v1alpha1.BindViewList
		if f.list(ctx, &views, warns) {
			for _, v := range views.Items {
				if v.Spec.ClusterRef.Name == z.Spec.ClusterRef.Name {
					errs = append(errs, field.Required(spec.Child("viewRef"), fmt.Sprintf("cluster %q has views (e.g. %q) and BIND puts every zone of such a cluster in a view; set viewRef", z.Spec.ClusterRef.Name, v.Name)))
					break
				}
			}
		}
	}
	if z.Spec.UpdateKeyRef != nil {
		f.expect(ctx, "spec.updateKeyRef", "BindTSIGKey", z.Spec.UpdateKeyRef.Name, &v1alpha1.BindTSIGKey{}, warns)
		errs = append(errs, updateKeyInOtherView(ctx, f, z, spec.Child("updateKeyRef", "name"), warns)...)
	}
	if z.Spec.DNSSECPolicyRef != nil {
		f.expect(ctx, "spec.dnssecPolicyRef", "BindDNSSECPolicy", z.Spec.DNSSECPolicyRef.Name, &v1alpha1.BindDNSSECPolicy{}, warns)
	}
	if z.Spec.CatalogZoneRef != nil {
		var cat v1alpha1.BindCatalogZone
		if f.expect(ctx, "spec.catalogZoneRef", "BindCatalogZone", z.Spec.CatalogZoneRef.Name, &cat, warns) && cat.Spec.ClusterRef.Name != z.Spec.ClusterRef.Name {
			errs = append(errs, field.Invalid(spec.Child("catalogZoneRef", "name"), z.Spec.CatalogZoneRef.Name, fmt.Sprintf("BindCatalogZone %q belongs to cluster %q, not %q; name a catalog of the zone's cluster", cat.Name, cat.Spec.ClusterRef.Name, z.Spec.ClusterRef.Name)))
		}
	}
	f.addressListRefs(ctx, "spec.allowTransfer", z.Spec.AllowTransfer, warns)
	f.addressListRefs(ctx, "spec.allowQuery", z.Spec.AllowQuery, warns)
	f.remoteServerRefs(ctx, "spec.primaries", z.Spec.Primaries, warns)
	f.remoteServerRefs(ctx, "spec.externalSecondaries", z.Spec.ExternalSecondaries, warns)
	for i, fw := range z.Spec.Forwarders {
		if fw.ClusterRef != nil {
			f.expect(ctx, fmt.Sprintf("spec.forwarders[%d].clusterRef", i), "BindCluster", fw.ClusterRef.Name, &v1alpha1.BindCluster{}, warns)
		}
	}
	errs = append(errs, zoneNameTaken(ctx, f, z.Spec.ClusterRef.Name, viewName(z.Spec.ViewRef), string(z.Spec.ZoneName), "BindZone", z.Name, spec.Child("zoneName"), warns)...)
	return errs
}

// updateKeyInOtherView refuses an update key that zones of another view of
// the same cluster use: the view's match-clients admits its zones' update
// keys, so that a client's signed UPDATE lands in the zone's view from any
// address, and one key can select only one view.
func updateKeyInOtherView(ctx context.Context, f refs, z *v1alpha1.BindZone, p *field.Path, warns *admission.Warnings) field.ErrorList {
	if z.Spec.ViewRef == nil || !z.Spec.IsPrimary() {
		return nil
	}
	var zones v1alpha1.BindZoneList
	if !f.list(ctx, &zones, warns) {
		return nil
	}
	for _, o := range zones.Items {
		if o.Name == z.Name || o.Spec.ClusterRef.Name != z.Spec.ClusterRef.Name || o.Spec.ViewRef == nil || o.Spec.ViewRef.Name == z.Spec.ViewRef.Name ||
			o.Spec.UpdateKeyRef == nil || o.Spec.UpdateKeyRef.Name != z.Spec.UpdateKeyRef.Name || !o.Spec.IsPrimary() {
			continue
		}
		return field.ErrorList{field.Invalid(p, z.Spec.UpdateKeyRef.Name, fmt.Sprintf("BindZone %q of BindView %q already uses this key; BIND picks a zone's view by the key that signs an UPDATE, so a key can serve one view only: create another BindTSIGKey for this view's zones", o.Name, o.Spec.ViewRef.Name))}
	}
	return nil
}

func viewName(r *v1alpha1.LocalObjectReference) string {
	if r == nil {
		return ""
	}
	return r.Name
}

// zoneNameTaken rejects a zone name that another BindZone (same cluster and
// view), BindCatalogZone or BindPolicy (same cluster) already serves: BIND
// refuses a config that declares a zone twice, so the second object would
// break the whole cluster's config, not just itself.
func zoneNameTaken(ctx context.Context, f refs, cluster, view, zoneName, selfKind, selfName string, p *field.Path, warns *admission.Warnings) field.ErrorList {
	// Every object's zoneName is stored canonical, and this one's was
	// canonicalised by its mutating webhook: names compare as they are.
	taken := func(kind, name string) *field.Error {
		return field.Duplicate(p, fmt.Sprintf("%s (already served on cluster %q by %s %q); a cluster serves each zone once, choose another name", zoneName, cluster, kind, name))
	}
	// Only the zones of that name: listing every zone made each admission
	// O(zones in the namespace) on the API server.
	var zones v1alpha1.BindZoneList
	if f.list(ctx, &zones, warns, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector(v1alpha1.BindZoneZoneNameField, zoneName)}) {
		for _, o := range zones.Items {
			if (selfKind == "BindZone" && o.Name == selfName) || o.Spec.ClusterRef.Name != cluster || string(o.Spec.ZoneName) != zoneName {
				continue
			}
			if selfKind != "BindZone" || viewName(o.Spec.ViewRef) == view {
				return field.ErrorList{taken("BindZone", o.Name)}
			}
		}
	}
	var cats v1alpha1.BindCatalogZoneList
	if f.list(ctx, &cats, warns) {
		for _, o := range cats.Items {
			if (selfKind == "BindCatalogZone" && o.Name == selfName) || o.Spec.ClusterRef.Name != cluster || string(o.Spec.ZoneName) != zoneName {
				continue
			}
			return field.ErrorList{taken("BindCatalogZone", o.Name)}
		}
	}
	var pols v1alpha1.BindPolicyList
	if f.list(ctx, &pols, warns) {
		for _, o := range pols.Items {
			if (selfKind == "BindPolicy" && o.Name == selfName) || o.Spec.ClusterRef.Name != cluster || string(o.Spec.ZoneName) != zoneName {
				continue
			}
			return field.ErrorList{taken("BindPolicy", o.Name)}
		}
	}
	return nil
}

// validateMNAMEGlue: BIND 9.18 refuses to load a zone whose SOA MNAME (also
// its seed NS) lies inside the zone without an address, so such a name must
// come with an A or AAAA record set in spec.records.
func validateMNAMEGlue(zone, mname string, sets []v1alpha1.RecordSet, fldPath *field.Path) field.ErrorList {
	rel, err := records.RelativeName(zone, records.ZoneFQDN(mname))
	if err != nil {
		return nil // outside the zone: no address needed here
	}
	for _, set := range sets {
		n, err := records.RelativeName(zone, string(set.Name))
		if err == nil && n == rel && (set.Type == "A" || set.Type == "AAAA") && len(set.Values) > 0 {
			return nil
		}
	}
	return field.ErrorList{field.Invalid(fldPath, mname, fmt.Sprintf(
		"lies inside the zone, so BIND needs its address before it loads the zone: add an A or AAAA record set named %q to spec.records, name a server outside the zone, or leave it unset for the cluster's query Service", rel))}
}
