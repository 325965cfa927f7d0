package webhooks

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-bindpolicy,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindpolicies,verbs=create;update,versions=v1alpha1,name=mbindpolicy.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-bind-unkin-net-v1alpha1-bindpolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindpolicies,verbs=create;update,versions=v1alpha1,name=vbindpolicy.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// BindPolicyWebhook defaults and validates BindPolicies.
type BindPolicyWebhook struct {
	Reader client.Reader
}

var (
	_ admission.Defaulter[*v1alpha1.BindPolicy] = &BindPolicyWebhook{}
	_ admission.Validator[*v1alpha1.BindPolicy] = &BindPolicyWebhook{}
)

// Default canonicalises the zone name, rule matches (names lowercase
// without trailing dot, addresses in standard form) and redirect targets,
// and fills the defaults (BindPolicy.SetDefaults). Rule order is kept.
func (w *BindPolicyWebhook) Default(_ context.Context, p *v1alpha1.BindPolicy) error {
	p.SetDefaults()
	s := &p.Spec
	s.ZoneName = v1alpha1.DomainName(records.CanonicalZone(string(s.ZoneName)))
	defaultRemoteServers(s.Primaries)
	for i := range s.Rules {
		r := &s.Rules[i]
		r.Match = canonicalMatch(r.Trigger, r.Match)
		if r.RedirectTo != "" {
			r.RedirectTo = v1alpha1.DomainName(records.CanonicalZone(string(r.RedirectTo)))
		}
	}
	return nil
}

func canonicalMatch(t v1alpha1.RPZTrigger, m string) string {
	switch t {
	case v1alpha1.TriggerClientIP, v1alpha1.TriggerResponseIP, v1alpha1.TriggerNSIP:
		return canonicalAddress(m)
	default:
		return records.CanonicalZone(m)
	}
}

// ValidateCreate validates a new policy.
func (w *BindPolicyWebhook) ValidateCreate(ctx context.Context, p *v1alpha1.BindPolicy) (admission.Warnings, error) {
	return w.validate(ctx, p)
}

// ValidateUpdate validates a change.
func (w *BindPolicyWebhook) ValidateUpdate(ctx context.Context, _, newP *v1alpha1.BindPolicy) (admission.Warnings, error) {
	return w.validate(ctx, newP)
}

// ValidateDelete allows every deletion.
func (w *BindPolicyWebhook) ValidateDelete(context.Context, *v1alpha1.BindPolicy) (admission.Warnings, error) {
	return nil, nil
}

func (w *BindPolicyWebhook) validate(ctx context.Context, p *v1alpha1.BindPolicy) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	errs := ValidateBindPolicySpec(&p.Spec, spec)
	var warns admission.Warnings
	f := refs{r: w.Reader, ns: namespaceOf(ctx, p.Namespace)}
	var cluster v1alpha1.BindCluster
	// BIND applies response policy to recursive queries only, unless the
	// policy says recursive-only no; so a policy on an Authoritative
	// cluster is probably a mistake, but not certainly: a warning.
	if f.expect(ctx, "spec.clusterRef", "BindCluster", p.Spec.ClusterRef.Name, &cluster, &warns) && cluster.Spec.Mode == v1alpha1.ModeAuthoritative {
		warns = append(warns, fmt.Sprintf("spec.clusterRef: BindCluster %q is Authoritative; BIND applies response policy to recursive queries, so this policy may never match", cluster.Name))
	}
	if p.Spec.ViewRef != nil {
		var view v1alpha1.BindView
		if f.expect(ctx, "spec.viewRef", "BindView", p.Spec.ViewRef.Name, &view, &warns) && view.Spec.ClusterRef.Name != p.Spec.ClusterRef.Name {
			errs = append(errs, field.Invalid(spec.Child("viewRef", "name"), p.Spec.ViewRef.Name, fmt.Sprintf("BindView %q belongs to cluster %q, not %q; name a view of the policy's cluster", view.Name, view.Spec.ClusterRef.Name, p.Spec.ClusterRef.Name)))
		}
	}
	f.remoteServerRefs(ctx, "spec.primaries", p.Spec.Primaries, &warns)
	errs = append(errs, zoneNameTaken(ctx, f, p.Spec.ClusterRef.Name, "", string(p.Spec.ZoneName), "BindPolicy", p.Name, spec.Child("zoneName"), &warns)...)
	return warns, invalid("BindPolicy", p.Name, errs)
}

// ValidateBindPolicySpec checks a policy spec without other objects, where
// the CRD cannot: prefixes without host bits and the length of name
// matches. Two rules for one match and trigger are the CRD's list-map
// rule, which sees the matches canonical (the mutating webhook runs first).
func ValidateBindPolicySpec(s *v1alpha1.BindPolicySpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range s.Rules {
		rp := fldPath.Child("rules").Index(i)
		switch r.Trigger {
		case v1alpha1.TriggerClientIP, v1alpha1.TriggerResponseIP, v1alpha1.TriggerNSIP:
			if pf, err := netip.ParsePrefix(r.Match); err == nil && pf.Masked() != pf {
				errs = append(errs, field.Invalid(rp.Child("match"), r.Match, fmt.Sprintf("the prefix has host bits set; write %s", pf.Masked())))
			}
		default:
			errs = append(errs, ValidateDomainName(strings.TrimPrefix(r.Match, "*."), rp.Child("match"))...)
		}
	}
	errs = append(errs, ValidateServers(s.Primaries, fldPath.Child("primaries"))...)
	return errs
}
