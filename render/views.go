package render

// writeView writes one view. Views come sorted by (order, name): BIND uses
// the first view that matches, so the order is part of the meaning.
func writeView(c *conf, m *model, v *viewDef, r role) {
	s := v.obj.Spec
	what := "BindView " + v.name
	c.open("view %s {", c.q("BindView name", v.name))
	// A message signed with one of the view's keys selects the view; one
	// signed with another view's key never does; everything else is
	// matched as the user wrote it. So the operator's UPDATEs and checks,
	// the secondaries' transfers and the primary's NOTIFYs reach the
	// zone's own view whatever address they come from (pod IPs change).
	var others []string
	if len(m.views) > 1 {
		// One ACL of every view's keys keeps this linear in the views:
		// the view's own keys matched already, so it refuses the others.
		others = []string{"!" + c.q("ACL name", viewKeysACL)}
	}
	clients := []string{"any"}
	if len(s.MatchClients) > 0 {
		els, err := m.matchList(what+" spec.matchClients", s.MatchClients)
		c.fail(err)
		clients = els
	}
	c.keyList("match-clients", v.keys, others, clients)
	if len(s.MatchDestinations) > 0 {
		els, err := m.matchList(what+" spec.matchDestinations", s.MatchDestinations)
		c.fail(err)
		c.keyList("match-destinations", v.keys, els)
	}
	if s.MatchRecursiveOnly {
		c.line("match-recursive-only yes;")
	}
	// Without recursion set the view inherits the cluster's mode from
	// options.
	if s.Recursion != nil {
		if *s.Recursion {
			c.line("recursion yes;")
		} else {
			c.line("recursion no;")
		}
	}
	if len(s.AllowRecursion) > 0 {
		els, err := m.matchList(what+" spec.allowRecursion", s.AllowRecursion)
		c.fail(err)
		c.list("allow-recursion", els)
	}
	if len(s.Forwarders) > 0 {
		fw, err := m.forwarders(what+" spec.forwarders", s.Forwarders)
		c.fail(err)
		c.list("forwarders", fw)
	}
	// Runtime zones are added per view, so every view accepts them.
	writeNewZones(c, m)
	writeResponsePolicy(c, v.policies)
	writeScopeZones(c, m, v, r)
	c.close()
}

// viewKeysACL names the ACL of every view's keys. A "/" cannot occur in a
// BindACL's name, so it never clashes with one.
const viewKeysACL = "bind-operator/view-keys"

// addViewKeysACL declares viewKeysACL when there are views to tell apart.
func (m *model) addViewKeysACL() {
	if len(m.views) < 2 {
		return
	}
	c := newConf()
	var entries []string
	for _, v := range m.views {
		for _, k := range v.keys {
			entries = append(entries, c.keyElement(k))
		}
	}
	m.acls = append(m.acls, aclDef{name: viewKeysACL, entries: entries})
}
