package importer

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
)

// Response policy zones (RPZ) become BindPolicies: the response-policy
// statement of the options or of a view names the policy zones, in the
// order named consults them; each zone's CNAME records are its rules
// (RPZ's encoding of triggers and actions, the inverse of
// render.PolicyRecords), a secondary policy zone is a feed (primaries).
// A policy zone is never also imported as a BindZone.

// maxPolicyRules is BindPolicy spec.rules' MaxItems.
const maxPolicyRules = 2000

// rpzZone is one zone of a response-policy statement.
type rpzZone struct {
	stmt  *Statement // the response-policy statement
	entry *Statement // zone "name" [options];
	order int32
}

// collectPolicies reads the response-policy statements of the options and
// of each view: which zones are policy zones, where.
func (c *converter) collectPolicies(stmts []*Statement) {
	c.policyZones = map[*Statement]map[string]rpzZone{}
	add := func(scope *Statement, rp *Statement) {
		m := map[string]rpzZone{}
		for i, e := range rp.Block {
			if e.Keyword() != "zone" {
				continue
			}
			m[dns.CanonicalName(e.Arg(0))] = rpzZone{stmt: rp, entry: e, order: int32(10 * (i + 1))}
		}
		c.policyZones[scope] = m
	}
	if c.options != nil {
		if rp := c.options.Find("response-policy"); rp != nil {
			add(nil, rp)
		}
	}
	for _, s := range stmts {
		if s.Keyword() != "view" {
			continue
		}
		if rp := s.Find("response-policy"); rp != nil {
			add(s, rp)
		}
	}
}

// policyZone is the response-policy entry that makes zone name, in view
// (nil: the top level), a policy zone: the view's own statement, else the
// options' (which named applies to views without one).
func (c *converter) policyZone(view *Statement, name string) (rpzZone, bool) {
	if m, ok := c.policyZones[view]; ok {
		z, ok := m[dns.CanonicalName(name)]
		return z, ok
	}
	z, ok := c.policyZones[nil][dns.CanonicalName(name)]
	return z, ok
}

// policy converts the policy zone s (in view viewObj) into a BindPolicy.
func (c *converter) policy(s *Statement, viewObj string, rp rpzZone) {
	name := strings.TrimSuffix(s.Arg(0), ".")
	what := "zone " + s.Arg(0) + " (response policy)"
	p := &v1.BindPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BindPolicy"},
		Spec: v1.BindPolicySpec{
			ClusterRef: v1.LocalObjectReference{Name: c.opts.Cluster},
			ZoneName:   v1.DomainName(name),
			Order:      ptr.To(rp.order),
		},
	}
	prefix := ""
	if viewObj != "" {
		p.Spec.ViewRef = &v1.LocalObjectReference{Name: viewObj}
		prefix = viewObj + "-"
	}
	p.ObjectMeta = c.meta("BindPolicy", prefix+name)
	c.policyOptions(p, rp)
	typ := ""
	if t := s.Find("type"); t != nil {
		typ = strings.ToLower(t.Arg(0))
	}
	for _, o := range s.Block {
		kw, ow := o.Keyword(), what+": "+o.Text()
		switch kw {
		case "type":
		case "file":
			if typ == "primary" || typ == "master" {
				if !c.policyRules(p, o) {
					return
				}
			} else {
				c.res.Report.replace(o.Pos, ow, "the operator keeps the transferred copy on the pods")
			}
		case "primaries", "masters":
			if l, why := c.remoteServers(o); why != "" {
				c.res.Report.omit(o.Pos, ow, "%s: the feed is not imported", why)
				return
			} else {
				p.Spec.Primaries = l
			}
		case "allow-query", "allow-transfer", "notify", "also-notify":
			c.res.Report.replace(o.Pos, ow, "only named itself reads a policy zone: the operator allows no queries or transfers of it")
		default:
			if why, owned := operatorOwned(kw); owned {
				c.res.Report.replace(o.Pos, ow, "%s", why)
			} else {
				c.res.Report.omit(o.Pos, ow, "a policy zone's %s has no counterpart in BindPolicy", kw)
			}
		}
	}
	switch typ {
	case "primary", "master", "secondary", "slave":
	default:
		c.res.Report.omit(s.Pos, what, "type %q: a policy zone is a primary (rules) or a secondary (a feed)", typ)
		return
	}
	if (typ == "secondary" || typ == "slave") && len(p.Spec.Primaries) == 0 {
		c.res.Report.omit(s.Pos, what, "a secondary policy zone without primaries has no counterpart")
		return
	}
	c.res.Objects = append(c.res.Objects, p)
}

// policyOptions carries the options of p's response-policy entry, and of
// the whole statement, into p.
func (c *converter) policyOptions(p *v1.BindPolicy, rp rpzZone) {
	words := rp.entry.Words[2:]
	what := "response-policy zone " + rp.entry.Arg(0)
	for i := 0; i < len(words); i++ {
		kw := strings.ToLower(words[i].Text)
		arg := ""
		if i+1 < len(words) {
			arg = words[i+1].Text
		}
		switch kw {
		case "policy":
			i++
			if o, ok := rpzOverrideOf[strings.ToLower(arg)]; ok {
				p.Spec.PolicyOverride = o
			} else {
				c.res.Report.omit(rp.entry.Pos, what+": policy "+arg, "BindPolicy's policyOverride has no counterpart (Given, Disabled, Passthru, NXDOMAIN, NODATA, DROP, TCPOnly)")
				if strings.EqualFold(arg, "cname") {
					i++
				}
			}
		case "max-policy-ttl":
			i++
			if n, err := strconv.ParseUint(arg, 10, 31); err == nil && n <= 86400 {
				p.Spec.MaxPolicyTTL = ptr.To(int32(n))
			} else {
				c.res.Report.omit(rp.entry.Pos, what+": max-policy-ttl "+arg, "maxPolicyTTL takes 0 to 86400 seconds")
			}
		case "log":
			i++
			p.Spec.Log = ptr.To(yes(arg))
		case "min-update-interval":
			i++
			c.res.Report.replace(rp.entry.Pos, what+": min-update-interval "+arg, "the operator applies rule changes at once (0)")
		default:
			c.res.Report.omit(rp.entry.Pos, what+": "+kw, "BindPolicy has no counterpart")
		}
	}
	// What follows the list applies to every policy zone of the statement.
	for _, t := range rp.stmt.Tail {
		ws := t.Words
		for i := 0; i+1 < len(ws); i += 2 {
			kw, arg := strings.ToLower(ws[i].Text), ws[i+1].Text
			switch kw {
			case "break-dnssec":
				p.Spec.BreakDNSSEC = yes(arg)
			case "qname-wait-recurse":
				p.Spec.QNameWaitRecurse = ptr.To(yes(arg))
			case "max-policy-ttl":
				if p.Spec.MaxPolicyTTL == nil {
					if n, err := strconv.ParseUint(arg, 10, 31); err == nil && n <= 86400 {
						p.Spec.MaxPolicyTTL = ptr.To(int32(n))
					}
				}
			case "min-update-interval":
			default:
				c.res.Report.omit(t.Pos, "response-policy: "+kw+" "+arg, "BindPolicy has no counterpart")
			}
		}
	}
}

// rpzOverrideOf, rpzActionOf and rpzTriggerOf read back what render
// writes: a clause's policy override, a rule's CNAME target, a rule's
// owner suffix.
var (
	rpzOverrideOf = invert(render.RPZOverrideNames)
	rpzActionOf   = invert(render.RPZActionTargets)
	rpzTriggerOf  = invert(render.RPZTriggerSuffixes)
)

func invert[K, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// policyRules reads a policy zone's file into p's rules; false when the
// file cannot be read (named would not load the policy either).
func (c *converter) policyRules(p *v1.BindPolicy, o *Statement) bool {
	origin := string(p.Spec.ZoneName)
	data, err := ReadZoneFile(c.opts.Root, c.directory, o.Arg(0), origin)
	if err != nil {
		c.res.Report.omit(o.Pos, "zone "+origin, "its zone file cannot be read, so named does not enforce it either: %v", err)
		return false
	}
	apex := dns.CanonicalName(origin)
	for _, r := range data.Records {
		h := r.RR.Header()
		owner := dns.CanonicalName(h.Name)
		what := fmt.Sprintf("%s %s", owner, dns.TypeToString[h.Rrtype])
		if owner == apex && (h.Rrtype == dns.TypeNS || h.Rrtype == dns.TypeSOA) {
			continue // the operator writes the policy zone's own
		}
		cname, ok := r.RR.(*dns.CNAME)
		if !ok || !dns.IsSubDomain(apex, owner) || owner == apex {
			c.res.Report.omit(r.Pos, what, "a policy rule is a CNAME below the zone's name; local data (answers of other types) has no counterpart in BindPolicy rules")
			continue
		}
		rule, why := rpzRule(strings.TrimSuffix(owner, "."+apex), dns.CanonicalName(cname.Target))
		if why != "" {
			c.res.Report.omit(r.Pos, what, "%s", why)
			continue
		}
		p.Spec.Rules = append(p.Spec.Rules, rule)
	}
	if len(p.Spec.Rules) > maxPolicyRules {
		c.res.Report.omit(o.Pos, "zone "+origin, "its %d rules are more than one BindPolicy holds (%d): serve it from a server of your own and make the BindPolicy a feed (spec.primaries)", len(p.Spec.Rules), maxPolicyRules)
		return false
	}
	return true
}

// rpzRule reads one rule: owner relative to the policy zone, and the
// CNAME's target.
func rpzRule(owner, target string) (v1.RPZRule, string) {
	rule := v1.RPZRule{Trigger: v1.TriggerQName, Match: owner}
	for suffix, trigger := range rpzTriggerOf {
		if m, ok := strings.CutSuffix(owner, suffix); ok {
			rule.Trigger, rule.Match = trigger, m
			if trigger != v1.TriggerNSDName {
				ip, why := rpzAddress(m)
				if why != "" {
					return rule, why
				}
				rule.Match = ip
			}
			break
		}
	}
	if a, ok := rpzActionOf[target]; ok {
		rule.Action = a
		return rule, ""
	}
	if strings.HasPrefix(target, "*.") || strings.HasPrefix(target, "rpz-") {
		return rule, fmt.Sprintf("the action %s has no counterpart in BindPolicy (NXDOMAIN, NODATA, PASSTHRU, DROP, TCPOnly, Redirect to a name)", target)
	}
	rule.Action, rule.RedirectTo = v1.ActionRedirect, v1.DomainName(strings.TrimSuffix(target, "."))
	return rule, ""
}

// rpzAddress decodes RPZ's spelling of an address or prefix ("24.0.2.0.192"
// is 192.0.2.0/24; "128.1.zz.db8.2001" is 2001:db8::1/128): the address
// alone when the prefix is all of it.
func rpzAddress(s string) (string, string) {
	labels := strings.Split(s, ".")
	bad := fmt.Sprintf("%q is not an RPZ address (prefix length, then the address's labels in reverse)", s)
	if len(labels) < 2 {
		return "", bad
	}
	bits, err := strconv.Atoi(labels[0])
	if err != nil {
		return "", bad
	}
	rev := make([]string, 0, len(labels)-1)
	for i := len(labels) - 1; i >= 1; i-- {
		rev = append(rev, labels[i])
	}
	var text string
	if len(rev) == 4 && !strings.Contains(s, "zz") {
		text = strings.Join(rev, ".")
	} else {
		text = strings.Join(rev, ":")
		text = strings.Replace(text, "zz", "", 1)
		if strings.HasPrefix(text, ":") {
			text = ":" + text
		}
		if strings.HasSuffix(text, ":") {
			text += ":"
		}
	}
	a, err := netip.ParseAddr(text)
	if err != nil {
		return "", bad
	}
	pfx, err := a.Prefix(bits)
	if err != nil || pfx.Addr() != a {
		return "", bad
	}
	if bits == a.BitLen() {
		return a.String(), ""
	}
	return pfx.String(), ""
}
