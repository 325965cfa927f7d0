package render

import (
	"cmp"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// policyDef is a BindPolicy rendered into an RPZ zone. The zone is a
// primary on every pod, loaded from a file in the ConfigMap: rules change
// only with the objects, so they ride the same hashed roll as the config and
// need no transfer between pods.
type policyDef struct {
	obj       *bindv1alpha1.BindPolicy
	zone      string // canonical zone name
	configKey string // ConfigData key of the zone file
	path      string // the file, in ConfigDir
	file      string // zone file contents
	clause    string // the response-policy element: zone "x" policy ... log yes
}

func (m *model) loadPolicies() error {
	pols := byName(m.in.Policies, func(p *bindv1alpha1.BindPolicy) (string, string) { return p.Name, p.Namespace })
	slices.SortStableFunc(pols, func(a, b *bindv1alpha1.BindPolicy) int { return cmp.Compare(a.Spec.Order, b.Spec.Order) })
	for _, p := range pols {
		what := "BindPolicy " + p.Name
		zone := string(p.Spec.ZoneName)
		if zone == "." {
			return fmt.Errorf("%s: the root zone cannot be a response policy zone; use a name such as rpz.example.internal", what)
		}
		if err := safeName(what+" zone name", zone); err != nil {
			return err
		}
		file, err := rpzZoneFile(what, zone, p)
		if err != nil {
			return err
		}
		d := &policyDef{
			obj:       p,
			zone:      zone,
			configKey: "rpz." + zoneStem(zone) + ".db",
			file:      file,
		}
		d.path = path.Join(m.paths.ConfigDir, d.configKey)
		d.clause = rpzClause(zone, p)
		// A policy without viewRef applies in every view: each view
		// declares the zone from the same read-only file.
		var scopes []*viewDef
		if p.Spec.ViewRef == nil {
			scopes = m.scopes()
		} else {
			v, err := m.placement(what, p.Spec.ViewRef)
			if err != nil {
				return err
			}
			scopes = []*viewDef{v}
		}
		for _, v := range scopes {
			if err := v.claim(zone, what); err != nil {
				return err
			}
			v.policies = append(v.policies, d)
		}
		m.policies = append(m.policies, d)
	}
	return nil
}

var rpzOverrides = map[bindv1alpha1.RPZPolicyOverride]string{
	bindv1alpha1.RPZOverrideGiven:    "given",
	bindv1alpha1.RPZOverrideDisabled: "disabled",
	bindv1alpha1.RPZOverridePassthru: "passthru",
	bindv1alpha1.RPZOverrideNXDOMAIN: "nxdomain",
	bindv1alpha1.RPZOverrideNODATA:   "nodata",
	bindv1alpha1.RPZOverrideDrop:     "drop",
	bindv1alpha1.RPZOverrideTCPOnly:  "tcp-only",
}

func rpzClause(zone string, p *bindv1alpha1.BindPolicy) string {
	s := `zone "` + zone + `"`
	if o := rpzOverrides[p.Spec.PolicyOverride]; o != "" && o != "given" {
		s += " policy " + o
	}
	if p.Spec.MaxPolicyTTL != nil {
		s += " max-policy-ttl " + strconv.Itoa(int(*p.Spec.MaxPolicyTTL))
	}
	if p.Spec.Log == nil || *p.Spec.Log {
		s += " log yes"
	} else {
		s += " log no"
	}
	return s
}

// writeResponsePolicy writes the response-policy statement of a scope.
// break-dnssec and qname-wait-recurse belong to the whole statement in
// BIND, not to one zone: break-dnssec is on if any policy asks for it, and
// qname-wait-recurse is off if any policy turns it off.
func writeResponsePolicy(c *conf, pols []*policyDef) {
	if len(pols) == 0 {
		return
	}
	breakDNSSEC, noWait := false, false
	c.open("response-policy {")
	for _, p := range pols {
		c.line("%s;", p.clause)
		breakDNSSEC = breakDNSSEC || p.obj.Spec.BreakDNSSEC
		if w := p.obj.Spec.QNameWaitRecurse; w != nil && !*w {
			noWait = true
		}
	}
	tail := "}"
	if breakDNSSEC {
		tail += " break-dnssec yes"
	}
	if noWait {
		tail += " qname-wait-recurse no"
	}
	c.depth--
	c.line("%s;", tail)
}

// writeRPZZones declares the policy zones of a scope.
func writeRPZZones(c *conf, pols []*policyDef) {
	for _, p := range pols {
		c.blank()
		c.open("zone %s {", c.q("BindPolicy zone name", p.zone))
		c.line("type primary;")
		c.line("file %s;", c.q("file", p.path))
		// Policy zones are for named itself; nobody needs to query or
		// transfer them.
		c.line("allow-query { localhost; };")
		c.line("allow-transfer { none; };")
		c.close()
	}
}

var rpzActions = map[bindv1alpha1.RPZAction]string{
	bindv1alpha1.ActionNXDOMAIN: ".",
	bindv1alpha1.ActionNODATA:   "*.",
	bindv1alpha1.ActionPassthru: "rpz-passthru.",
	bindv1alpha1.ActionDrop:     "rpz-drop.",
	bindv1alpha1.ActionTCPOnly:  "rpz-tcp-only.",
}

// rpzZoneFile renders the rules of a policy as zone data. Owners are
// relative to the policy zone; records are sorted by owner so the file does
// not depend on the order of spec.rules.
func rpzZoneFile(what, zone string, p *bindv1alpha1.BindPolicy) (string, error) {
	type rr struct{ owner, target string }
	rrs := make([]rr, 0, len(p.Spec.Rules))
	seen := map[string]string{}
	for i, r := range p.Spec.Rules {
		rw := fmt.Sprintf("%s spec.rules[%d]", what, i)
		owner, err := rpzOwner(rw, r)
		if err != nil {
			return "", err
		}
		var target string
		if r.Action == bindv1alpha1.ActionRedirect {
			if r.RedirectTo == "" {
				return "", fmt.Errorf("%s: a Redirect rule needs redirectTo", rw)
			}
			target = records.ZoneFQDN(string(r.RedirectTo))
			if err := safeName(rw+" redirectTo", target); err != nil {
				return "", err
			}
		} else if target = rpzActions[r.Action]; target == "" {
			return "", fmt.Errorf("%s has unknown action %q", rw, r.Action)
		}
		// Two spellings of one match (192.0.2.1 and 192.0.2.1/32, or a
		// different case) land on the same owner. Identical rules merge;
		// contradicting ones would be two CNAMEs at one name.
		if prev, ok := seen[owner]; ok {
			if prev != target {
				return "", fmt.Errorf("%s matches the same thing as an earlier rule with another action; keep one of them", rw)
			}
			continue
		}
		seen[owner] = target
		rrs = append(rrs, rr{owner, target})
	}
	slices.SortFunc(rrs, func(a, b rr) int { return cmp.Compare(a.owner, b.owner) })

	var b strings.Builder
	fmt.Fprintf(&b, "; Response policy zone %s of BindPolicy %s. Rendered by bind-operator; do not edit.\n", zone, p.Name)
	b.WriteString("$TTL 60\n")
	// The serial never changes: the file only changes through a hashed roll,
	// and every pod loads it from the ConfigMap, so no transfer depends on it.
	b.WriteString("@\tIN\tSOA\tlocalhost. hostmaster.localhost. 1 300 60 1209600 60\n")
	b.WriteString("@\tIN\tNS\tlocalhost.\n")
	for _, r := range rrs {
		fmt.Fprintf(&b, "%s\tIN\tCNAME\t%s\n", r.owner, r.target)
	}
	return b.String(), nil
}

// rpzOwner is the owner name of a rule, relative to the policy zone.
func rpzOwner(what string, r bindv1alpha1.RPZRule) (string, error) {
	switch r.Trigger {
	case bindv1alpha1.TriggerQName, "":
		return rpzName(what, r.Match)
	case bindv1alpha1.TriggerNSDName:
		n, err := rpzName(what, r.Match)
		return n + ".rpz-nsdname", err
	case bindv1alpha1.TriggerClientIP:
		n, err := rpzIP(what, r.Match)
		return n + ".rpz-client-ip", err
	case bindv1alpha1.TriggerResponseIP:
		n, err := rpzIP(what, r.Match)
		return n + ".rpz-ip", err
	case bindv1alpha1.TriggerNSIP:
		n, err := rpzIP(what, r.Match)
		return n + ".rpz-nsip", err
	}
	return "", fmt.Errorf("%s has unknown trigger %q", what, r.Trigger)
}

func rpzName(what, s string) (string, error) {
	n := s
	if n == "." {
		return "", fmt.Errorf("%s cannot match the root name", what)
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" {
			return "", fmt.Errorf("%s: %q has an empty label", what, s)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '*') {
				return "", fmt.Errorf("%s: %q is not a domain name", what, s)
			}
		}
	}
	return n, nil
}

// rpzIP encodes an address or prefix the way RPZ spells IP triggers:
// prefix length, then the address's labels in reverse order; for IPv6 the
// longest run of zero groups becomes "zz" (draft-vixie-dnsop-dns-rpz §6.1).
func rpzIP(what, s string) (string, error) {
	var pfx netip.Prefix
	if a, err := netip.ParseAddr(s); err == nil {
		pfx = netip.PrefixFrom(a, a.BitLen())
	} else if p, err := netip.ParsePrefix(s); err == nil {
		pfx = p.Masked()
	} else {
		return "", fmt.Errorf("%s: %q is neither an IP address nor a CIDR prefix", what, s)
	}
	a := pfx.Addr()
	if a.Zone() != "" {
		return "", fmt.Errorf("%s: %q has an interface zone", what, s)
	}
	bits := strconv.Itoa(pfx.Bits())
	if a.Is4() {
		o := a.As4()
		return fmt.Sprintf("%s.%d.%d.%d.%d", bits, o[3], o[2], o[1], o[0]), nil
	}
	b := a.As16()
	groups := make([]string, 8)
	for i := range 8 {
		groups[i] = strconv.FormatUint(uint64(b[2*i])<<8|uint64(b[2*i+1]), 16)
	}
	// Longest run of zero groups (at least two, first on ties).
	best, bestLen := -1, 1
	for i := 0; i < 8; {
		if groups[i] != "0" {
			i++
			continue
		}
		j := i
		for j < 8 && groups[j] == "0" {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	var out []string
	for i := 7; i >= 0; i-- {
		if best >= 0 && i >= best && i < best+bestLen {
			if i == best {
				out = append(out, "zz")
			}
			continue
		}
		out = append(out, groups[i])
	}
	return bits + "." + strings.Join(out, "."), nil
}
