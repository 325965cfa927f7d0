package render

import (
	"fmt"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// writeDNSSECPolicies writes a dnssec-policy block for every policy a zone
// of the cluster uses (sorted by name). Only the primary signs: secondaries
// serve the signed zone they transfer, so the blocks go into the primary
// variant only.
func writeDNSSECPolicies(c *conf, m *model) {
	for _, p := range m.dnssecPolicies {
		writeDNSSECPolicy(c, p)
	}
}

func writeDNSSECPolicy(c *conf, p *bindv1alpha1.BindDNSSECPolicy) {
	what := "BindDNSSECPolicy " + p.Name
	s := p.Spec
	c.open("dnssec-policy %s {", c.q("BindDNSSECPolicy name", p.Name))
	// Keys keep the spec's order: it is one object's list, not an API
	// listing, and order within keys {} has no meaning to BIND.
	c.open("keys {")
	for i, k := range s.Keys {
		kw := fmt.Sprintf("%s spec.keys[%d]", what, i)
		role := strings.ToLower(string(k.Role))
		if role != "ksk" && role != "zsk" && role != "csk" {
			c.fail(fmt.Errorf("%s has unknown role %q", kw, k.Role))
		}
		life := k.Lifetime
		if life == "" {
			life = bindv1alpha1.DNSSECLifetimeUnlimited
		}
		c.fail(checkDuration(kw+" lifetime", life))
		alg := string(k.Algorithm)
		c.fail(safeName(kw+" algorithm", alg))
		line := fmt.Sprintf("%s lifetime %s algorithm %s", role, life, alg)
		if k.KeySize != nil {
			line += fmt.Sprintf(" %d", *k.KeySize)
		}
		c.line("%s;", line)
	}
	c.close()
	for _, d := range DNSSECPolicyDurations(&s) {
		if *d.Value == "" {
			continue
		}
		c.fail(checkDuration(what+" "+d.Option, string(*d.Value)))
		c.line("%s %s;", d.Option, *d.Value)
	}
	if n := s.NSEC3; n != nil {
		line := "nsec3param"
		if n.Iterations != nil {
			line += fmt.Sprintf(" iterations %d", *n.Iterations)
		}
		if n.OptOut {
			line += " optout yes"
		} else {
			line += " optout no"
		}
		if n.SaltLength != nil {
			line += fmt.Sprintf(" salt-length %d", *n.SaltLength)
		}
		c.line("%s;", line)
	}
	c.close()
}

// PolicyDuration is one duration of a dnssec-policy: BIND's option and
// the spec's field.
type PolicyDuration struct {
	Option string
	Value  *bindv1alpha1.BINDDuration
}

// DNSSECPolicyDurations are s's durations in the order they are written,
// each with its dnssec-policy option (the importer reads them back).
func DNSSECPolicyDurations(s *bindv1alpha1.BindDNSSECPolicySpec) []PolicyDuration {
	return []PolicyDuration{
		{"dnskey-ttl", &s.DNSKEYTTL},
		{"max-zone-ttl", &s.MaxZoneTTL},
		{"publish-safety", &s.PublishSafety},
		{"retire-safety", &s.RetireSafety},
		{"purge-keys", &s.PurgeKeys},
		{"signatures-refresh", &s.SignaturesRefresh},
		{"signatures-validity", &s.SignaturesValidity},
		{"signatures-validity-dnskey", &s.SignaturesValidityDNSKEY},
		{"signatures-jitter", &s.SignaturesJitter},
		{"zone-propagation-delay", &s.ZonePropagationDelay},
		{"parent-ds-ttl", &s.ParentDSTTL},
		{"parent-propagation-delay", &s.ParentPropagationDelay},
	}
}

// checkDuration keeps durations to the characters the CRD pattern allows,
// so a value that slipped past admission cannot inject a statement.
func checkDuration(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if s == bindv1alpha1.DNSSECLifetimeUnlimited {
		return nil
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || strings.ContainsRune("PYMWDTHSymwdhs", r)) {
			return fmt.Errorf("%s %q is not a duration such as P90D or 1h", what, s)
		}
	}
	return nil
}
