package render

import (
	"fmt"
	"strconv"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// loadACLs renders every BindACL, sorted by name. Entries keep their order:
// BIND stops at the first element that matches, so it is meaningful.
func (m *model) loadACLs() error {
	acls := byName(m.in.ACLs, func(a *bindv1alpha1.BindACL) (string, string) { return a.Name, a.Namespace })
	known := make(map[string]bool, len(acls))
	for _, a := range acls {
		known[a.Name] = true
	}
	m.aclNames = known
	m.acls = make([]aclDef, 0, len(acls)+1)
	for _, a := range acls {
		entries, err := namedOnError(func() string { return "BindACL " + a.Name },
			func(what string) ([]string, error) { return m.loadACL(what, a, known) })
		if err != nil {
			return err
		}
		m.acls = append(m.acls, aclDef{name: a.Name, entries: entries})
	}
	return m.checkACLCycles(acls)
}

// loadACL checks one BindACL and renders its entries.
func (m *model) loadACL(what string, a *bindv1alpha1.BindACL, known map[string]bool) ([]string, error) {
	if err := safeName(what+" name", a.Name); err != nil {
		return nil, err
	}
	if len(a.Spec.Entries) == 0 {
		return nil, fmt.Errorf("%s has no entries; add at least one", what)
	}
	return m.matchListWith(what+" spec.entries", a.Spec.Entries, known)
}

// checkACLCycles refuses ACLs that include each other: named would reject
// the whole config with a message that names none of our objects.
func (m *model) checkACLCycles(acls []*bindv1alpha1.BindACL) error {
	refs := map[string][]string{}
	for _, a := range acls {
		for _, e := range a.Spec.Entries {
			if e.ACLRef != "" {
				refs[a.Name] = append(refs[a.Name], e.ACLRef)
			}
		}
	}
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var visit func(n string, trail []string) error
	visit = func(n string, trail []string) error {
		switch state[n] {
		case visiting:
			return fmt.Errorf("BindACLs refer to each other in a loop (%s -> %s); break the loop", strings.Join(trail, " -> "), n)
		case done:
			return nil
		}
		state[n] = visiting
		for _, r := range refs[n] {
			if err := visit(r, append(trail, n)); err != nil {
				return err
			}
		}
		state[n] = done
		return nil
	}
	for _, a := range acls {
		if len(refs[a.Name]) == 0 {
			continue // names no ACL, so it closes no loop
		}
		if err := visit(a.Name, nil); err != nil {
			return err
		}
	}
	return nil
}

// matchList renders an address_match_list's elements (without the ";").
func (m *model) matchList(what string, els []bindv1alpha1.AddressMatchElement) ([]string, error) {
	return m.matchListWith(what, els, m.aclNames)
}

func (m *model) matchListWith(what string, els []bindv1alpha1.AddressMatchElement, acls map[string]bool) ([]string, error) {
	out := make([]string, 0, len(els))
	for i, e := range els {
		s, err := m.matchElement(what, i, e, acls)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// matchElement renders element i of the list what. The element's own name
// ("what[i]") is built only for an error (subject.go): a large config has
// tens of thousands of elements.
func (m *model) matchElement(list string, i int, e bindv1alpha1.AddressMatchElement, acls map[string]bool) (string, error) {
	what := func() string { return list + "[" + strconv.Itoa(i) + "]" }
	set := 0
	for _, s := range []string{e.Address, e.ACLRef, e.KeyRef, string(e.Builtin)} {
		if s != "" {
			set++
		}
	}
	if set != 1 {
		return "", fmt.Errorf("%s must set exactly one of address, aclRef, keyRef or builtin", what())
	}
	var s string
	switch {
	case e.Address != "":
		a, err := namedOnError(func() string { return what() + " address" },
			func(subject string) (string, error) { return checkAddress(subject, e.Address) })
		if err != nil {
			return "", err
		}
		s = a
	case e.ACLRef != "":
		if !acls[e.ACLRef] {
			return "", fmt.Errorf("%s references BindACL %q, which does not exist; create it or fix aclRef", what(), e.ACLRef)
		}
		if !nameOK(e.ACLRef) {
			return "", safeName("BindACL name", e.ACLRef)
		}
		s = `"` + e.ACLRef + `"`
	case e.KeyRef != "":
		k, err := namedOnError(what, func(subject string) (string, error) { return m.keyRef(subject, e.KeyRef) })
		if err != nil {
			return "", err
		}
		s = `key "` + k + `"`
	default:
		switch e.Builtin {
		case bindv1alpha1.BuiltinAny, bindv1alpha1.BuiltinNone, bindv1alpha1.BuiltinLocalhost, bindv1alpha1.BuiltinLocalnets:
			s = string(e.Builtin)
		default:
			return "", fmt.Errorf("%s: builtin %q is not one of any, none, localhost or localnets", what(), e.Builtin)
		}
	}
	if e.Negate {
		s = "! " + s
	}
	return s, nil
}

func writeACLs(c *conf, m *model) {
	for _, a := range m.acls {
		c.words("acl \"", c.name("BindACL name", a.name), "\" {")
		c.depth++
		for _, e := range a.entries {
			c.words(e, ";")
		}
		c.close()
	}
}
