package render

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// policyDef is a BindPolicy rendered into an RPZ zone. The zone is a
// primary on every pod, in each view the policy applies to, loaded from a
// file in the data volume: the entrypoint seeds it from the ConfigMap (not
// hashed, Result.SeedData) and the agent rewrites it when the rules change,
// so a rule edit reaches running pods without a roll.
type policyDef struct {
	obj    *bindv1alpha1.BindPolicy
	zone   string // canonical zone name
	file   string // zone file contents
	clause string // the response-policy element: zone "x" policy ... log yes
	scopes []policyScope
	// primaries of a feed (spec.primaries), rendered; a feed has no file
	// contents of its own: every pod transfers the zone.
	primaries []string
}

// policyScope is where one view keeps the policy zone.
type policyScope struct {
	view    string // "" outside views
	seedKey string // ConfigMap key of the seed
	path    string // the zone file, in DataDir
}

func (m *model) loadPolicies() error {
	pols := byName(m.in.Policies, func(p *bindv1alpha1.BindPolicy) (string, string) { return p.Name, p.Namespace })
	slices.SortStableFunc(pols, func(a, b *bindv1alpha1.BindPolicy) int {
		return cmp.Compare(a.Spec.EffectiveOrder(), b.Spec.EffectiveOrder())
	})
	for _, p := range pols {
		what := "BindPolicy " + p.Name
		zone := string(p.Spec.ZoneName)
		if zone == "." {
			return fmt.Errorf("%s: the root zone cannot be a response policy zone; use a name such as rpz.example.internal", what)
		}
		if err := safeName(what+" zone name", zone); err != nil {
			return err
		}
		d := &policyDef{obj: p, zone: zone, clause: rpzClause(zone, p)}
		if len(p.Spec.Primaries) > 0 {
			// A feed: every pod transfers the zone from these servers.
			for i, srv := range p.Spec.Primaries {
				s, err := m.remoteServer(fmt.Sprintf("%s spec.primaries[%d]", what, i), srv)
				if err != nil {
					return err
				}
				d.primaries = append(d.primaries, s)
			}
		} else {
			recs, err := PolicyRecords(p)
			if err != nil {
				return err
			}
			d.file = PolicyZoneFile(zone, p.Name, 1, recs)
		}
		// A policy without viewRef applies in every view, each with its
		// own copy of the zone.
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
			if err := v.claim(zone, owner{"BindPolicy", p.Name}); err != nil {
				return err
			}
			v.policies = append(v.policies, d)
			d.scopes = append(d.scopes, policyScope{
				view:    v.name,
				seedKey: "rpz." + viewDir(v.name) + "." + zoneStem(zone) + ".db",
				path:    m.paths.PolicyZoneFile(v.name, zone),
			})
		}
		m.policies = append(m.policies, d)
	}
	return nil
}

// scope is the policy's copy in view v.
func (d *policyDef) scope(v *viewDef) policyScope {
	for _, s := range d.scopes {
		if s.view == v.name {
			return s
		}
	}
	panic("render: policy " + d.zone + " has no copy in view " + v.name)
}

// RPZOverrideNames are the policy overrides as a response-policy zone
// clause spells them (the importer reads them back).
var RPZOverrideNames = map[bindv1alpha1.RPZPolicyOverride]string{
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
	if o := RPZOverrideNames[p.Spec.PolicyOverride]; o != "" && o != "given" {
		s += " policy " + o
	}
	if p.Spec.MaxPolicyTTL != nil {
		s += " max-policy-ttl " + strconv.Itoa(int(*p.Spec.MaxPolicyTTL))
	}
	// Rule edits reach named as a reload of the zone: apply them at once
	// (BIND otherwise spaces policy zone updates by its default interval).
	s += " min-update-interval 0"
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

// writeRPZZones declares the policy zones of a scope: static primaries,
// reloaded from their file by the agent when the rules change, or
// secondaries of a feed's primaries. Nobody needs to query or transfer
// them but named itself.
func writeRPZZones(c *conf, v *viewDef) {
	for _, p := range v.policies {
		c.blank()
		c.open("zone %s {", c.q("BindPolicy zone name", p.zone))
		if len(p.primaries) > 0 {
			c.line("type secondary;")
			c.line("file %s;", c.q("file", p.scope(v).path))
			c.list("primaries", p.primaries)
		} else {
			c.line("type primary;")
			c.line("file %s;", c.q("file", p.scope(v).path))
		}
		c.line("allow-query { localhost; };")
		c.line("allow-transfer { none; };")
		c.close()
	}
}

// RPZActionTargets are the CNAME targets that say each action but
// Redirect (the importer reads them back).
var RPZActionTargets = map[bindv1alpha1.RPZAction]string{
	bindv1alpha1.ActionNXDOMAIN: ".",
	bindv1alpha1.ActionNODATA:   "*.",
	bindv1alpha1.ActionPassthru: "rpz-passthru.",
	bindv1alpha1.ActionDrop:     "rpz-drop.",
	bindv1alpha1.ActionTCPOnly:  "rpz-tcp-only.",
}

// PolicyRecord is one rule of a response policy zone: an owner relative to
// the zone (the trigger, encoded as RPZ spells it) and the CNAME target
// that says the action ("." NXDOMAIN, "*." NODATA, "rpz-passthru." ..., or
// a name to redirect to).
type PolicyRecord struct {
	Owner  string `json:"owner"`
	Target string `json:"target"`
}

// PolicyRecords turns a policy's rules into its records, sorted by owner
// so they do not depend on the order of spec.rules. The render seeds the
// zone with them and the operator sends the same to every pod's agent.
func PolicyRecords(p *bindv1alpha1.BindPolicy) ([]PolicyRecord, error) {
	what := "BindPolicy " + p.Name
	rrs := make([]PolicyRecord, 0, len(p.Spec.Rules))
	seen := map[string]string{}
	for i, r := range p.Spec.Rules {
		rw := fmt.Sprintf("%s spec.rules[%d]", what, i)
		owner, err := rpzOwner(rw, r)
		if err != nil {
			return nil, err
		}
		var target string
		if r.Action == bindv1alpha1.ActionRedirect {
			if r.RedirectTo == "" {
				return nil, fmt.Errorf("%s: a Redirect rule needs redirectTo", rw)
			}
			target = records.ZoneFQDN(string(r.RedirectTo))
			if err := safeName(rw+" redirectTo", target); err != nil {
				return nil, err
			}
		} else if target = RPZActionTargets[r.Action]; target == "" {
			return nil, fmt.Errorf("%s has unknown action %q", rw, r.Action)
		}
		// Two spellings of one match (192.0.2.1 and 192.0.2.1/32, or a
		// different case) land on the same owner. Identical rules merge;
		// contradicting ones would be two CNAMEs at one name.
		if prev, ok := seen[owner]; ok {
			if prev != target {
				return nil, fmt.Errorf("%s matches the same thing as an earlier rule with another action; keep one of them", rw)
			}
			continue
		}
		seen[owner] = target
		rrs = append(rrs, PolicyRecord{owner, target})
	}
	slices.SortFunc(rrs, func(a, b PolicyRecord) int { return cmp.Compare(a.Owner, b.Owner) })
	return rrs, nil
}

// PolicyDigest identifies a set of policy records: the agent and the
// operator compare it to tell whether a pod enforces the current rules.
func PolicyDigest(recs []PolicyRecord) string {
	h := sha256.New()
	for _, r := range recs {
		writeField(h, []byte(r.Owner))
		writeField(h, []byte(r.Target))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// policyDigestPrefix starts the zone file line that carries the digest.
const policyDigestPrefix = "; rules "

// PolicyZoneFile renders policy records as the zone file of zone, for the
// BindPolicy named policy. serial is the SOA serial: 1 for the seed, then
// whatever the agent picks so each rewrite is newer. The second line holds
// PolicyDigest, so the agent can tell what a file enforces without parsing
// it (FilePolicyDigest).
func PolicyZoneFile(zone, policy string, serial uint32, recs []PolicyRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "; Response policy zone %s of BindPolicy %s. Written by bind-operator; do not edit.\n", zone, policy)
	fmt.Fprintf(&b, "%s%s\n", policyDigestPrefix, PolicyDigest(recs))
	b.WriteString("$TTL 60\n")
	fmt.Fprintf(&b, "@\tIN\tSOA\tlocalhost. hostmaster.localhost. %d 300 60 1209600 60\n", serial)
	b.WriteString("@\tIN\tNS\tlocalhost.\n")
	for _, r := range recs {
		fmt.Fprintf(&b, "%s\tIN\tCNAME\t%s\n", r.Owner, r.Target)
	}
	return b.String()
}

// FilePolicyDigest reads the digest PolicyZoneFile wrote into content; ""
// when there is none.
func FilePolicyDigest(content string) string {
	_, rest, ok := strings.Cut(content, "\n")
	if !ok {
		return ""
	}
	line, _, _ := strings.Cut(rest, "\n")
	d, ok := strings.CutPrefix(line, policyDigestPrefix)
	if !ok {
		return ""
	}
	return d
}

// RPZTriggerSuffixes end the owner of a rule of each trigger but QName
// (the importer reads them back).
var RPZTriggerSuffixes = map[bindv1alpha1.RPZTrigger]string{
	bindv1alpha1.TriggerNSDName:    ".rpz-nsdname",
	bindv1alpha1.TriggerClientIP:   ".rpz-client-ip",
	bindv1alpha1.TriggerResponseIP: ".rpz-ip",
	bindv1alpha1.TriggerNSIP:       ".rpz-nsip",
}

// rpzOwner is the owner name of a rule, relative to the policy zone.
func rpzOwner(what string, r bindv1alpha1.RPZRule) (string, error) {
	switch r.Trigger {
	case bindv1alpha1.TriggerQName, "":
		return rpzName(what, r.Match)
	case bindv1alpha1.TriggerNSDName:
		n, err := rpzName(what, r.Match)
		return n + RPZTriggerSuffixes[r.Trigger], err
	case bindv1alpha1.TriggerClientIP, bindv1alpha1.TriggerResponseIP, bindv1alpha1.TriggerNSIP:
		n, err := rpzIP(what, r.Match)
		return n + RPZTriggerSuffixes[r.Trigger], err
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

// FilePolicySerial reads the SOA serial of a zone file PolicyZoneFile
// wrote; 0 when there is none.
func FilePolicySerial(content string) uint32 {
	for line := range strings.SplitSeq(content, "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[0] == "@" && f[1] == "IN" && f[2] == "SOA" {
			if n, err := strconv.ParseUint(f[5], 10, 32); err == nil {
				return uint32(n)
			}
		}
	}
	return 0
}
