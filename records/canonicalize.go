package records

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Canonicalize returns sets in canonical form (see the package comment) and
// the problems found on the way, with paths under fldPath indexed like the
// input. A value or name that cannot be parsed is kept verbatim, so that
// defaulting can pass the object on and validation, which calls Canonicalize
// again, reports the error; keeping it verbatim also keeps Canonicalize
// idempotent for bad input.
func Canonicalize(zone string, sets []v1alpha1.RecordSet, defaultTTL int32, fldPath *field.Path) ([]v1alpha1.RecordSet, field.ErrorList) {
	if sets == nil {
		return nil, nil
	}
	var errs field.ErrorList
	type key struct{ name, typ string }
	type first struct {
		set   *v1alpha1.RecordSet
		index int
	}
	merged := make(map[key]first, len(sets))
	list := make([]*v1alpha1.RecordSet, 0, len(sets))
	for i := range sets {
		cs, e := CanonicalizeSet(zone, sets[i], 0, fldPath.Index(i))
		errs = append(errs, e...)
		k := key{string(cs.Name), string(cs.Type)}
		if prev, ok := merged[k]; ok {
			// One RRset has one TTL: two items for it with different TTLs
			// stay apart (merging would drop one TTL silently) and are an
			// error.
			if prev.set.TTL != nil && cs.TTL != nil && *prev.set.TTL != *cs.TTL {
				errs = append(errs, field.Invalid(fldPath.Index(i).Child("ttl"), *cs.TTL, fmt.Sprintf(
					"record set %s %s is also declared by %s with TTL %d, and a record set has one TTL; give both the same TTL or merge them into one item",
					cs.Name, cs.Type, fldPath.Index(prev.index), *prev.set.TTL)))
				// Kept under its absolute spelling, so that the list stays a
				// valid list-map (name, type) for the CRD and the validating
				// webhook, which canonicalises again, reports this error.
				c := cs
				c.Name = v1alpha1.RecordName(FQDN(zone, string(cs.Name)))
				list = append(list, &c)
				continue
			}
			prev.set.Values = append(prev.set.Values, cs.Values...)
			if prev.set.TTL == nil {
				prev.set.TTL = cs.TTL
			}
			continue
		}
		c := cs
		merged[k] = first{&c, i}
		list = append(list, &c)
	}
	out := make([]v1alpha1.RecordSet, 0, len(list))
	for _, s := range list {
		s.Values = sortUnique(s.Values)
		fillTTL(s, defaultTTL)
		out = append(out, *s)
	}
	sort.SliceStable(out, func(i, j int) bool { return lessSet(out[i], out[j]) })
	return out, errs
}

// CanonicalizeSet canonicalises one record set (a DNSRecord's). defaultTTL
// 0 leaves a missing TTL unset.
func CanonicalizeSet(zone string, set v1alpha1.RecordSet, defaultTTL int32, fldPath *field.Path) (v1alpha1.RecordSet, field.ErrorList) {
	var errs field.ErrorList
	out := v1alpha1.RecordSet{Type: v1alpha1.RecordType(strings.ToUpper(string(set.Type)))}
	if set.TTL != nil {
		t := *set.TTL
		out.TTL = &t
	}
	name, err := RelativeName(zone, string(set.Name))
	if err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("name"), string(set.Name), err.Error()))
		name = string(set.Name)
	}
	out.Name = v1alpha1.RecordName(name)
	if set.Values != nil {
		out.Values = make([]string, 0, len(set.Values))
	}
	for j, v := range set.Values {
		cv := v
		if err == nil {
			c, verr := CanonicalValue(zone, name, string(out.Type), v)
			if verr != nil {
				errs = append(errs, field.Invalid(fldPath.Child("values").Index(j), v, fmt.Sprintf("%s (record %s %s)", verr.Error(), name, out.Type)))
			} else {
				cv = c
			}
		}
		out.Values = append(out.Values, cv)
	}
	out.Values = sortUnique(out.Values)
	if defaultTTL > 0 {
		fillTTL(&out, defaultTTL)
	}
	return out, errs
}

func fillTTL(s *v1alpha1.RecordSet, defaultTTL int32) {
	if s.TTL != nil {
		return
	}
	if defaultTTL <= 0 {
		defaultTTL = v1alpha1.DefaultTTL
	}
	t := v1alpha1.TTL(defaultTTL)
	s.TTL = &t
}

func sortUnique(vs []string) []string {
	if vs == nil {
		return nil
	}
	sort.Strings(vs)
	out := vs[:0]
	for i, v := range vs {
		if i > 0 && v == vs[i-1] {
			continue
		}
		out = append(out, v)
	}
	return out
}

// lessSet orders sets bytewise by owner name, then type. The order has no
// DNS meaning; it only has to be total so the stored object, and so the
// rendered zone, never depends on the order the user wrote.
func lessSet(a, b v1alpha1.RecordSet) bool {
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Type < b.Type
}
