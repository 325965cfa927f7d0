package render

import (
	"fmt"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/namedconf"
)

// orDefault is *p, or the API's default d when the object skipped
// defaulting (nil pointer) so that it renders the same. BIND's own defaults
// (notify-delay 5, rates of 20/s, min-update-interval 5) turn milliseconds
// into seconds (docs/bind-facts.md, "Measured limits"); the API's do not.
func orDefault(p *int32, d int32) int32 {
	if p == nil {
		return d
	}
	return *p
}

func writeOptions(c *conf, m *model, r role) {
	s := m.cluster.Spec
	c.open("options {")
	c.line("directory %s;", c.q("path", m.paths.DataDir))
	c.line("pid-file %s;", c.q("path", m.paths.pidFile()))
	c.line("session-keyfile %s;", c.q("path", m.paths.sessionKeyFile()))
	c.line("key-directory %s;", c.q("path", m.paths.DNSSECKeysDir()))
	c.line("listen-on port %d { any; };", m.dnsPort)
	c.line("listen-on-v6 port %d { any; };", m.dnsPort)
	if len(m.views) == 0 {
		writeNewZones(c, m)
	}
	if len(s.AllowQuery) > 0 {
		els, err := m.matchList("BindCluster spec.allowQuery", s.AllowQuery)
		c.fail(err)
		c.list("allow-query", els)
	}
	// Nothing may transfer unless a zone says so: member zones allow the
	// transfer key, config zones their allowTransfer.
	c.line("allow-transfer { none; };")
	writeModeOptions(c, m)
	if s.QueryLog {
		c.line("querylog yes;")
	} else {
		c.line("querylog no;")
	}

	t := s.Tuning
	if r == rolePrimary {
		// NOTIFYs go only where the operator points them at runtime
		// (also-notify { <pod-ip> key "K"; }), keyed because they leave
		// from the pod IP rather than the Service address
		// (docs/behaviours.md, "Keyed NOTIFY").
		c.line("notify explicit;")
		c.line("notify-delay %d;", orDefault(t.NotifyDelay, bindv1alpha1.DefaultNotifyDelay))
		c.line("notify-rate %d;", orDefault(t.NotifyRate, bindv1alpha1.DefaultNotifyRate))
		c.line("startup-notify-rate %d;", orDefault(t.StartupNotifyRate, bindv1alpha1.DefaultStartupNotifyRate))
	} else {
		c.line("notify no;")
		c.line("serial-query-rate %d;", orDefault(t.SerialQueryRate, bindv1alpha1.DefaultSerialQueryRate))
		if len(m.notifyKeys) > 0 {
			c.keyList("allow-notify", m.notifyKeys)
		}
		if len(m.forwardKeys) > 0 {
			// Clients that reach a secondary (the query Service picks
			// any pod) may still update: the secondary forwards the
			// signed UPDATE verbatim to the primary, which checks the
			// signature against the zone's allow-update. A key of one
			// zone gains nothing on another zone.
			c.keyList("allow-update-forwarding", m.forwardKeys)
		}
		writeCatalogConsumer(c, m)
	}
	if len(m.views) == 0 {
		writeResponsePolicy(c, m.global.policies)
	}
	if !extraOptionsSet(s.ExtraOptions, "serial-update-method") {
		// A primary that comes back with an empty volume re-seeds its
		// catalogs and zones at serial 1. With unixtime its first UPDATE
		// (the operator re-adding members and records) jumps the serial
		// past every copy the secondaries hold, so they transfer the new
		// content in full instead of staying on an old serial or
		// applying the new primary's diffs to different data
		// (docs/behaviours.md, "Serials never go back").
		c.line("serial-update-method unixtime;")
	}
	if len(s.ExtraOptions) > 0 {
		c.comment("spec.extraOptions, verbatim (validated by the admission webhook):")
		for _, o := range s.ExtraOptions {
			o = strings.TrimSpace(o)
			if strings.ContainsAny(o, "\n\r") {
				c.fail(fmt.Errorf("BindCluster spec.extraOptions holds a statement spanning several lines; write one statement per item"))
			}
			c.line("%s", o)
		}
	}
	c.close()
}

// writeNewZones lets the operator add primary zones at runtime; named keeps
// them in <view>.nzd in the data volume.
func writeNewZones(c *conf, m *model) {
	c.line("allow-new-zones yes;")
	c.line("new-zones-directory %s;", c.q("path", m.paths.nzdDir()))
}

func writeModeOptions(c *conf, m *model) {
	s := m.cluster.Spec
	if s.Mode != bindv1alpha1.ModeResolver {
		c.line("recursion no;")
		// An authoritative server validates nothing; leaving validation on
		// only makes named fetch the root trust anchors, which it cannot
		// use and, off a pod network without a default route, cannot reach.
		c.line("dnssec-validation no;")
		return
	}
	rec := s.Recursion
	if rec == nil {
		rec = &bindv1alpha1.RecursionSpec{}
	}
	c.line("recursion yes;")
	if len(rec.AllowRecursion) > 0 {
		els, err := m.matchList("BindCluster spec.recursion.allowRecursion", rec.AllowRecursion)
		c.fail(err)
		c.list("allow-recursion", els)
	} else {
		// Never an open resolver by default.
		c.line("allow-recursion { localnets; localhost; };")
	}
	if len(rec.Forwarders) > 0 {
		fw, err := m.forwarders("BindCluster spec.recursion.forwarders", rec.Forwarders)
		c.fail(err)
		c.list("forwarders", fw)
		c.line("forward %s;", forwardPolicy(rec.ForwardPolicy, bindv1alpha1.ForwardFirst))
	}
	switch rec.DNSSECValidation {
	case "", bindv1alpha1.DNSSECValidationAuto:
		c.line("dnssec-validation auto;")
	case bindv1alpha1.DNSSECValidationYes:
		c.line("dnssec-validation yes;")
	case bindv1alpha1.DNSSECValidationNo:
		c.line("dnssec-validation no;")
	default:
		c.fail(fmt.Errorf("BindCluster spec.recursion.dnssecValidation %q is not Auto, Yes or No", rec.DNSSECValidation))
	}
	writeValidateExcept(c, m, m.validateExcept)
}

func forwardPolicy(p, def bindv1alpha1.ForwardPolicy) string {
	if p == "" {
		p = def
	}
	if p == bindv1alpha1.ForwardOnly {
		return "only"
	}
	return "first"
}

// extraOptionsSet reports whether spec.extraOptions holds a statement
// with this keyword (its first token, read by the project's one named.conf
// lexer), where it replaces the operator's default.
func extraOptionsSet(opts []string, keyword string) bool {
	for _, o := range opts {
		if toks, err := namedconf.Lex(o); err == nil && len(toks) > 0 && toks[0].Text == keyword {
			return true
		}
	}
	return false
}
