package records

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// ValidateSets checks the rules between record sets of one zone that a
// single value cannot break on its own. sets must be canonical (the output
// of Canonicalize); paths index sets. Rules of one set alone (one value in
// a CNAME or DNAME, no CNAME or DS at the apex) are the CRD's.
//
//   - a CNAME owns its name: no other type may sit beside it (RFC 1034 §3.6.2);
//   - a DS below the apex needs an NS beside it;
//   - data at or below an NS delegation (glue A/AAAA below it excepted) or
//     below a DNAME is occluded: BIND would never serve it, so declaring it
//     is a mistake;
//   - the fully qualified owner name fits in 255 octets.
func ValidateSets(zone string, sets []v1alpha1.RecordSet, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	types := make(map[string][]string, len(sets))
	for _, s := range sets {
		types[string(s.Name)] = append(types[string(s.Name)], string(s.Type))
	}
	var delegations, dnames []string
	for _, s := range sets {
		if s.Name == Apex {
			continue
		}
		switch s.Type {
		case "NS":
			delegations = append(delegations, FQDN(zone, string(s.Name)))
		case "DNAME":
			dnames = append(dnames, FQDN(zone, string(s.Name)))
		}
	}
	seen := make(map[string]int, len(sets))
	for i, s := range sets {
		p := fldPath.Index(i)
		name := string(s.Name)
		fqdn := FQDN(zone, name)
		key := name + "/" + string(s.Type)
		if _, dup := seen[key]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s %s", name, s.Type)))
			continue
		}
		seen[key] = i
		if _, ok := dns.IsDomainName(fqdn); !ok || len(fqdn) > 254 {
			errs = append(errs, field.Invalid(p.Child("name"), name, "the absolute name is longer than 255 octets or has a label over 63; shorten it"))
		}
		switch {
		case s.Type == "CNAME" && name != Apex && len(types[name]) > 1:
			errs = append(errs, field.Invalid(p.Child("name"), name, fmt.Sprintf("a CNAME cannot coexist with other records at the same name (found %s); remove the CNAME or the other record sets", others(types[name], "CNAME"))))
		case s.Type == "DS" && name != Apex && !hasType(types[name], "NS"):
			errs = append(errs, field.Invalid(p.Child("type"), s.Type, "a DS record must sit at a delegation point; add an NS record set at the same name"))
		}
		for _, d := range delegations {
			if fqdn != d && dns.IsSubDomain(d, fqdn) && !isGlue(s.Type) {
				errs = append(errs, field.Invalid(p.Child("name"), name, fmt.Sprintf("name is below the delegation %s (NS record set) and would never be served; only glue A/AAAA records may sit there", d)))
				break
			}
			if fqdn == d && s.Type != "NS" && s.Type != "DS" {
				errs = append(errs, field.Invalid(p.Child("type"), s.Type, fmt.Sprintf("only NS and DS records may sit at the delegation point %s; other data there would never be served", d)))
				break
			}
		}
		for _, d := range dnames {
			if fqdn != d && dns.IsSubDomain(d, fqdn) {
				errs = append(errs, field.Invalid(p.Child("name"), name, fmt.Sprintf("name is below the DNAME at %s and would never be served; remove it or the DNAME", d)))
				break
			}
		}
	}
	return errs
}

func isGlue(t v1alpha1.RecordType) bool { return t == "A" || t == "AAAA" }

func hasType(ts []string, t string) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func others(ts []string, not string) string {
	var o []string
	for _, t := range ts {
		if t != not {
			o = append(o, t)
		}
	}
	return strings.Join(o, ", ")
}
