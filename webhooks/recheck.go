package webhooks

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Rechecker runs the current admission rules over objects already stored:
// rules tighten with upgrades, stored objects do not change, and an update
// that leaves the spec alone never reaches the webhook (matchConditions).
// The controllers ask it before they act on an object, and leave out of
// every render an object it refuses (docs/behaviours.md, "Stored objects
// are re-checked").
//
// It runs, per kind, the rules the validating webhook applies that need
// nothing but the object and the operator's own settings, with the same
// field paths and sentences:
//
//   - BindCluster: ValidateBindClusterSpec, ValidateForwarderTargets,
//     ValidateExtraOptions and the policy engine's rules over the
//     statements, against the configured pod CIDRs (PodCIDRs);
//   - BindZone: ValidateBindZoneSpec;
//   - DNSRecord: ValidateDNSRecordSpec with the zone unknown, as the
//     webhook checks a record whose zone does not exist: the name, the type
//     and the data's syntax;
//   - BindView, BindTSIGKey, BindACL, BindCatalogZone, BindPolicy,
//     BindDNSSECPolicy: their Validate<Kind>Spec.
//
// Left out are the rules that read other objects or the requester, whose
// verdict can change while the object does not: references and the
// cluster's mode, uniqueness of zone names and Secrets, the CNAME rule
// across DNSRecords, a zone's allowedRecords (the DNSRecord controller
// applies it: NotAdmitted), ACL loops, the right to import a Secret
// (SubjectAccessReview), the pod IPs of running BIND pods and the pod
// CIDRs derived from Nodes (only configured ones are checked), the image
// allow-list (the BindCluster controller applies it: ImageNotAllowed) and
// named-checkconf (the BindCluster controller runs it on every render
// that would change what runs). Warnings are not errors here either.
type Rechecker struct {
	// Engine holds the compiled policy rules for option statements; nil
	// skips them.
	Engine *PolicyEngine
	// PodCIDRs are the configured pod address ranges the policy rules
	// compare statements against (--pod-cidrs).
	PodCIDRs []netip.Prefix
}

// NewRechecker builds the Rechecker of the webhooks opts configures: the
// same policy rules (opts.Rules, else PodIPRules) and pod CIDRs.
func NewRechecker(opts Options) (*Rechecker, error) {
	rules := opts.Rules
	if rules == nil {
		rules = PodIPRules
	}
	engine, err := NewPolicyEngine(rules)
	if err != nil {
		return nil, fmt.Errorf("compiling webhook policy rules: %w", err)
	}
	return &Rechecker{Engine: engine, PodCIDRs: append([]netip.Prefix(nil), opts.PodCIDRs...)}, nil
}

// Recheck returns what the validating webhook's pure rules refuse in obj,
// nil when it passes them or is not one of the nine kinds. It never reads
// anything but obj, so its answer for one generation of an object stays
// the same while the operator runs.
func (r *Rechecker) Recheck(obj client.Object) field.ErrorList {
	spec := field.NewPath("spec")
	switch o := obj.(type) {
	case *v1alpha1.BindCluster:
		return r.recheckCluster(o, spec)
	case *v1alpha1.BindZone:
		return ValidateBindZoneSpec(&o.Spec, spec)
	case *v1alpha1.DNSRecord:
		return ValidateDNSRecordSpec(&o.Spec, "", spec)
	case *v1alpha1.BindView:
		return ValidateBindViewSpec(&o.Spec, spec)
	case *v1alpha1.BindTSIGKey:
		return ValidateBindTSIGKeySpec(&o.Spec, spec)
	case *v1alpha1.BindACL:
		return ValidateBindACLSpec(o.Name, &o.Spec, spec)
	case *v1alpha1.BindCatalogZone:
		return ValidateBindCatalogZoneSpec(&o.Spec, spec)
	case *v1alpha1.BindPolicy:
		return ValidateBindPolicySpec(&o.Spec, spec)
	case *v1alpha1.BindDNSSECPolicy:
		return ValidateBindDNSSECPolicySpec(&o.Spec, spec)
	}
	return nil
}

// recheckCluster is BindClusterWebhook.validate without what needs the
// request, other objects or named-checkconf, in the same order.
func (r *Rechecker) recheckCluster(c *v1alpha1.BindCluster, spec *field.Path) field.ErrorList {
	errs := ValidateBindClusterSpec(&c.Spec, spec)
	if rec := c.Spec.Recursion; rec != nil {
		errs = append(errs, ValidateForwarderTargets(rec.Forwarders, c.Name, spec.Child("recursion", "forwarders"))...)
	}
	sts, optErrs := ValidateExtraOptions(c.Spec.ExtraOptions, spec.Child("extraOptions"))
	errs = append(errs, optErrs...)
	if len(sts) > 0 && r != nil && r.Engine != nil {
		errs = append(errs, r.Engine.Evaluate(sts, PodNetwork{CIDRs: r.PodCIDRs}, spec.Child("extraOptions"))...)
	}
	return errs
}
