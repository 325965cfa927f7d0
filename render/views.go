package render

// writeView writes one view. Views come sorted by (order, name): BIND uses
// the first view that matches, so the order is part of the meaning.
func writeView(c *conf, m *model, v *viewDef, r role) {
	s := v.obj.Spec
	what := "BindView " + v.name
	c.open("view %s {", c.q("BindView name", v.name))
	if len(s.MatchClients) > 0 {
		els, err := m.matchList(what+" spec.matchClients", s.MatchClients)
		c.fail(err)
		c.list("match-clients", els)
	}
	if len(s.MatchDestinations) > 0 {
		els, err := m.matchList(what+" spec.matchDestinations", s.MatchDestinations)
		c.fail(err)
		c.list("match-destinations", els)
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
