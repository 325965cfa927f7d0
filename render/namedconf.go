package render

import "strings"

// renderNamedConf writes one named.conf variant. Both variants share
// everything but the replication settings, so a pod's role decides only
// who signs, who notifies and who consumes catalogs.
func renderNamedConf(m *model, r role) (string, error) {
	c := newConf()
	// The variants differ by a few lines: size the second by the first,
	// rather than growing it by doubling from nothing.
	c.b.Grow(m.confSize + m.confSize/8)
	defer func() { m.confSize = max(m.confSize, c.b.Len()) }()
	variant := "primary (ordinal 0)"
	if r == roleSecondary {
		variant = "secondaries (ordinals 1 and up)"
	}
	c.comment("named.conf for the " + variant + " of BindCluster " + m.cluster.Name + ".")
	c.comment("Rendered by bind-operator from the cluster's objects; do not edit, changes are overwritten.")
	c.comment("Primary zones are not declared here: the operator adds them at runtime with rndc addzone.")
	c.blank()
	c.line("include %s;", c.q("path", m.paths.KeysDir+"/"+FileControl))
	c.line("include %s;", c.q("path", m.paths.KeysDir+"/"+FileKeys))
	c.blank()
	// The control channel and statistics stay on loopback: the agent in
	// the same pod is their only client, and 9.18's channel has no TLS.
	c.open("controls {")
	c.line("inet 127.0.0.1 port %d allow { 127.0.0.1; } keys { %s; };", ControlPort, c.q("control key name", m.in.ControlKey.Name))
	c.close()
	c.open("statistics-channels {")
	c.line("inet 127.0.0.1 port %d allow { 127.0.0.1; };", StatisticsPort)
	c.close()
	if len(m.acls) > 0 {
		c.blank()
		writeACLs(c, m)
	}
	if r == rolePrimary && len(m.dnssecPolicies) > 0 {
		c.blank()
		writeDNSSECPolicies(c, m)
	}
	c.blank()
	writeOptions(c, m, r)
	writeTrustAnchors(c, m, m.trustAnchors)
	if len(m.views) == 0 {
		writeScopeZones(c, m, m.global, r)
	} else {
		for _, v := range m.views {
			c.blank()
			writeView(c, m, v, r)
		}
	}
	return c.String()
}

// writeScopeZones declares the zones that live in config, for one scope
// (a view, or the top level): catalogs, policy zones, then Forward, Stub and
// Secondary zones, each group sorted by zone name.
func writeScopeZones(c *conf, m *model, v *viewDef, r role) {
	if v == m.global {
		writeCatalogZones(c, m, r)
	}
	writeRPZZones(c, v)
	text, err := v.configZonesText(m, c.depth)
	c.fail(err)
	c.b.WriteString(text)
}

// configZonesText renders the scope's Forward, Stub and Secondary zones
// once: they are the same in both named.conf variants, and with thousands
// of zones they are most of the text.
func (v *viewDef) configZonesText(m *model, depth int) (string, error) {
	if v.zonesText == nil {
		zc := newConf()
		zc.depth = depth
		for _, z := range v.zones {
			writeConfigZone(zc, m, v, z)
		}
		s, err := zc.String()
		v.zonesText = &renderedText{s, err}
	}
	return v.zonesText.text, v.zonesText.err
}

// renderedText is a piece of named.conf rendered once, or why it could
// not be.
type renderedText struct {
	text string
	err  error
}

func joinOrNone(elems []string) string {
	if len(elems) == 0 {
		return "none"
	}
	return strings.Join(elems, "; ")
}
