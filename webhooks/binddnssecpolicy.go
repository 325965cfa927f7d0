package webhooks

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-binddnssecpolicy,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=binddnssecpolicies,verbs=create;update,versions=v1alpha1,name=mbinddnssecpolicy.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-bind-unkin-net-v1alpha1-binddnssecpolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=binddnssecpolicies,verbs=create;update,versions=v1alpha1,name=vbinddnssecpolicy.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// BindDNSSECPolicyWebhook defaults and validates BindDNSSECPolicies.
type BindDNSSECPolicyWebhook struct {
	// Checker runs named-checkconf on the policy; nil skips it.
	Checker *ConfigChecker
}

var (
	_ admission.Defaulter[*v1alpha1.BindDNSSECPolicy] = &BindDNSSECPolicyWebhook{}
	_ admission.Validator[*v1alpha1.BindDNSSECPolicy] = &BindDNSSECPolicyWebhook{}
)

// Default fills each key's lifetime and RSA key size
// (BindDNSSECPolicy.SetDefaults).
func (w *BindDNSSECPolicyWebhook) Default(_ context.Context, p *v1alpha1.BindDNSSECPolicy) error {
	p.SetDefaults()
	return nil
}

// ValidateCreate validates a new policy.
func (w *BindDNSSECPolicyWebhook) ValidateCreate(ctx context.Context, p *v1alpha1.BindDNSSECPolicy) (admission.Warnings, error) {
	return w.validate(ctx, p)
}

// ValidateUpdate validates a change.
func (w *BindDNSSECPolicyWebhook) ValidateUpdate(ctx context.Context, _, p *v1alpha1.BindDNSSECPolicy) (admission.Warnings, error) {
	return w.validate(ctx, p)
}

// ValidateDelete allows every deletion.
func (w *BindDNSSECPolicyWebhook) ValidateDelete(context.Context, *v1alpha1.BindDNSSECPolicy) (admission.Warnings, error) {
	return nil, nil
}

func (w *BindDNSSECPolicyWebhook) validate(ctx context.Context, p *v1alpha1.BindDNSSECPolicy) (admission.Warnings, error) {
	var warns admission.Warnings
	if n := p.Spec.NSEC3; n != nil {
		if n.Iterations != nil && *n.Iterations > 0 {
			warns = append(warns, "spec.nsec3.iterations: RFC 9276 recommends 0 iterations; more cost resolvers CPU and add no security")
		}
		if n.SaltLength != nil && *n.SaltLength > 0 {
			warns = append(warns, "spec.nsec3.saltLength: RFC 9276 recommends no salt")
		}
	}
	for i, k := range p.Spec.Keys {
		if d, err := ParseBINDDuration(k.Lifetime); err == nil && k.Lifetime != v1alpha1.DNSSECLifetimeUnlimited && d < 30*24*time.Hour {
			warns = append(warns, fmt.Sprintf("spec.keys[%d].lifetime: %s is shorter than 30 days; the key rolls that often, each rollover publishing new keys (BIND warns the same)", i, k.Lifetime))
		}
	}
	errs := ValidateBindDNSSECPolicySpec(&p.Spec, field.NewPath("spec"))
	if len(errs) == 0 {
		errs = w.Checker.CheckDNSSECPolicy(ctx, p, &warns)
	}
	return warns, invalid("BindDNSSECPolicy", p.Name, errs)
}

// ValidateBindDNSSECPolicySpec checks what named-checkconf would refuse:
// signatures must be refreshed before they expire, and durations must
// parse.
func ValidateBindDNSSECPolicySpec(s *v1alpha1.BindDNSSECPolicySpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	dur := func(name string, v v1alpha1.BINDDuration) (time.Duration, bool) {
		if v == "" {
			return 0, false
		}
		d, err := ParseBINDDuration(string(v))
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child(name), v, err.Error()))
			return 0, false
		}
		return d, true
	}
	refresh, hasRefresh := dur("signaturesRefresh", s.SignaturesRefresh)
	validity, hasValidity := dur("signaturesValidity", s.SignaturesValidity)
	validityDNSKEY, hasValidityDNSKEY := dur("signaturesValidityDNSKEY", s.SignaturesValidityDNSKEY)
	for _, o := range []struct {
		n string
		v v1alpha1.BINDDuration
	}{{"dnskeyTTL", s.DNSKEYTTL}, {"maxZoneTTL", s.MaxZoneTTL}, {"signaturesJitter", s.SignaturesJitter}, {"publishSafety", s.PublishSafety}, {"retireSafety", s.RetireSafety}, {"purgeKeys", s.PurgeKeys}, {"zonePropagationDelay", s.ZonePropagationDelay}, {"parentDSTTL", s.ParentDSTTL}, {"parentPropagationDelay", s.ParentPropagationDelay}} {
		dur(o.n, o.v)
	}
	if hasRefresh && hasValidity && refresh >= validity {
		errs = append(errs, field.Invalid(fldPath.Child("signaturesRefresh"), s.SignaturesRefresh, fmt.Sprintf("must be shorter than signaturesValidity (%s), or signatures expire before they are refreshed", s.SignaturesValidity)))
	}
	if hasRefresh && hasValidityDNSKEY && refresh >= validityDNSKEY {
		errs = append(errs, field.Invalid(fldPath.Child("signaturesRefresh"), s.SignaturesRefresh, fmt.Sprintf("must be shorter than signaturesValidityDNSKEY (%s), or DNSKEY signatures expire before they are refreshed", s.SignaturesValidityDNSKEY)))
	}
	for i, k := range s.Keys {
		if k.Lifetime == "" || k.Lifetime == v1alpha1.DNSSECLifetimeUnlimited {
			continue
		}
		// A lifetime too short for one rollover under the policy's TTLs
		// and margins is BIND's to judge (CheckDNSSECPolicy runs
		// named-checkconf); short ones that fit are allowed, with a warning.
		if _, err := ParseBINDDuration(k.Lifetime); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("keys").Index(i).Child("lifetime"), k.Lifetime, err.Error()))
		}
	}
	return errs
}

var (
	isoDuration = regexp.MustCompile(`^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$`)
	ttlPart     = regexp.MustCompile(`(\d+)([wdhmsWDHMS]?)`)
	ttlDuration = regexp.MustCompile(`^(\d+[wdhmsWDHMS]?)+$`)
)

// ParseBINDDuration parses BIND's durations: ISO 8601 (P90D, PT1H; a year
// is 365 days and a month 30, as in BIND) or TTL style (90d, 1h30m, 3600).
func ParseBINDDuration(s string) (time.Duration, error) {
	const day = 24 * time.Hour
	units := []time.Duration{365 * day, 30 * day, 7 * day, day, time.Hour, time.Minute, time.Second}
	if m := isoDuration.FindStringSubmatch(s); m != nil && s != "P" && !strings.HasSuffix(s, "T") {
		var d time.Duration
		for i, u := range units {
			if m[i+1] != "" {
				n, err := strconv.ParseInt(m[i+1], 10, 32)
				if err != nil {
					return 0, fmt.Errorf("number too large in duration; use at most 10 digits")
				}
				d += time.Duration(n) * u
			}
		}
		return d, nil
	}
	if ttlDuration.MatchString(s) {
		var d time.Duration
		for _, m := range ttlPart.FindAllStringSubmatch(s, -1) {
			n, err := strconv.ParseInt(m[1], 10, 32)
			if err != nil {
				return 0, fmt.Errorf("number too large in duration; use at most 10 digits")
			}
			u := map[string]time.Duration{"w": 7 * day, "d": day, "h": time.Hour, "m": time.Minute, "s": time.Second, "": time.Second}[strings.ToLower(m[2])]
			d += time.Duration(n) * u
		}
		return d, nil
	}
	return 0, fmt.Errorf("not a duration; write ISO 8601 such as P90D or PT1H, or BIND's style such as 90d or 3600")
}
