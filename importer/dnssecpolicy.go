package importer

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
)

// A dnssec-policy statement becomes a BindDNSSECPolicy of the same
// settings (render's writeDNSSECPolicy read back, with its table of
// durations). The zones that use
// it are not signed by the import: their keys live on the old server and
// must move with them, or the parent's DS stops matching (docs/migrating.md).

// dnssecAlgorithms are BIND's names and numbers of each algorithm.
var dnssecAlgorithms = map[string]v1.DNSSECAlgorithm{
	"8": v1.DNSSECRSASHA256, "rsasha256": v1.DNSSECRSASHA256,
	"10": v1.DNSSECRSASHA512, "rsasha512": v1.DNSSECRSASHA512,
	"13": v1.DNSSECECDSAP256SHA256, "ecdsap256sha256": v1.DNSSECECDSAP256SHA256, "ecdsa256": v1.DNSSECECDSAP256SHA256,
	"14": v1.DNSSECECDSAP384SHA384, "ecdsap384sha384": v1.DNSSECECDSAP384SHA384, "ecdsa384": v1.DNSSECECDSAP384SHA384,
	"15": v1.DNSSECED25519, "ed25519": v1.DNSSECED25519,
	"16": v1.DNSSECED448, "ed448": v1.DNSSECED448,
}

// dnssecPolicy converts dnssec-policy "name" { ... };
func (c *converter) dnssecPolicy(s *Statement) {
	name := s.Arg(0)
	what := "dnssec-policy " + name
	p := &v1.BindDNSSECPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BindDNSSECPolicy"},
		ObjectMeta: c.meta("BindDNSSECPolicy", name),
	}
	// The options render writes, read back into the same fields.
	durations := map[string]*v1.BINDDuration{}
	for _, d := range render.DNSSECPolicyDurations(&p.Spec) {
		durations[d.Option] = d.Value
	}
	for _, o := range s.Block {
		kw, ow := o.Keyword(), what+": "+o.Text()
		if d, ok := durations[kw]; ok {
			*d = v1.BINDDuration(duration(o.Arg(0)))
			continue
		}
		switch kw {
		case "keys":
			for _, k := range o.Block {
				key, why := dnssecKey(k)
				if why != "" {
					c.res.Report.omit(k.Pos, what+": "+k.Text(), "%s: the policy is not imported", why)
					return
				}
				p.Spec.Keys = append(p.Spec.Keys, key)
			}
		case "nsec3param":
			n, why := nsec3(o)
			if why != "" {
				c.res.Report.omit(o.Pos, ow, "%s: the policy is not imported", why)
				return
			}
			p.Spec.NSEC3 = n
		default:
			c.res.Report.omit(o.Pos, ow, "BindDNSSECPolicy has no counterpart")
		}
	}
	if len(p.Spec.Keys) == 0 {
		c.res.Report.omit(s.Pos, what, "it names no keys (BIND's default then is one CSK): the policy is not imported; use BindDNSSECPolicy with a CSK")
		return
	}
	c.dnssecPolicies[name] = p.Name
	c.res.Objects = append(c.res.Objects, p)
}

// dnssecKey reads ( ksk | zsk | csk ) [ key-directory ] lifetime L
// algorithm A [ size ].
func dnssecKey(k *Statement) (v1.DNSSECKey, string) {
	var key v1.DNSSECKey
	switch k.Keyword() {
	case "ksk":
		key.Role = v1.RoleKSK
	case "zsk":
		key.Role = v1.RoleZSK
	case "csk":
		key.Role = v1.RoleCSK
	default:
		return key, "a key's role is ksk, zsk or csk"
	}
	ws := k.Words[1:]
	for i := 0; i < len(ws); i++ {
		arg := ""
		if i+1 < len(ws) {
			arg = ws[i+1].Text
		}
		switch w := strings.ToLower(ws[i].Text); w {
		case "key-directory":
		case "lifetime":
			key.Lifetime, i = duration(arg), i+1
		case "algorithm":
			a, ok := dnssecAlgorithms[strings.ToLower(arg)]
			if !ok {
				return key, "algorithm " + arg + " is not one a BindDNSSECPolicy signs with"
			}
			key.Algorithm, i = a, i+1
		default:
			n, err := strconv.ParseInt(w, 10, 32)
			if err != nil {
				return key, w + " has no counterpart in a BindDNSSECPolicy key"
			}
			key.KeySize = ptr.To(int32(n))
		}
	}
	if key.Algorithm == "" {
		return key, "a key needs an algorithm"
	}
	return key, ""
}

// nsec3 reads nsec3param [ iterations N ] [ optout B ] [ salt-length N ].
func nsec3(o *Statement) (*v1.NSEC3Spec, string) {
	n := &v1.NSEC3Spec{}
	ws := o.Words[1:]
	for i := 0; i+1 < len(ws); i += 2 {
		kw, arg := strings.ToLower(ws[i].Text), ws[i+1].Text
		switch kw {
		case "iterations", "salt-length":
			v, err := strconv.ParseInt(arg, 10, 32)
			if err != nil {
				return nil, kw + " " + arg + " is not a number"
			}
			if kw == "iterations" {
				n.Iterations = ptr.To(int32(v))
			} else {
				n.SaltLength = ptr.To(int32(v))
			}
		case "optout":
			n.OptOut = yes(arg)
		default:
			return nil, kw + " has no counterpart in nsec3"
		}
	}
	return n, ""
}

// duration is a BIND duration as this API spells it: ISO 8601 in
// capitals (BIND reads "p90d" too), "unlimited" in lowercase, BIND's TTL
// style as written.
func duration(s string) string {
	switch {
	case strings.EqualFold(s, "unlimited"):
		return "unlimited"
	case strings.HasPrefix(s, "p"), strings.HasPrefix(s, "P"):
		return strings.ToUpper(s)
	}
	return s
}
