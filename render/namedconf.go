package render

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// renderNamedConf writes one named.conf variant. Both variants share
// everything but the replication settings, so a pod's role decides only
// who signs, who notifies and who consumes catalogs.
func renderNamedConf(m *model, r role) (string, error) {
	c := newConf()
	c.b.Grow(m.confSizeHint())
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
	text, err := v.configZonesText(m)
	c.fail(err)
	c.b.WriteString(text)
}

// configZonesText is the scope's Forward, Stub and Secondary zones: the
// same in both named.conf variants, and with thousands of zones most of
// the text, so renderConfigZones renders them once for every scope.
func (v *viewDef) configZonesText(m *model) (string, error) {
	if v.zonesText == nil {
		m.renderConfigZones()
	}
	return v.zonesText.text, v.zonesText.err
}

// renderConfigZones renders the config zones of every scope (most of a
// large named.conf) on every CPU, in pieces of configZonePiece zones, and
// joins each scope's pieces in order: the text is the one configZonesText
// writes zone by zone, and the first error in scope order stays the one
// reported. Rendering a zone only reads the model.
func (m *model) renderConfigZones() {
	// Every scope, even one without zones, so that no text is left for
	// configZonesText to render (and store) while the files are written
	// side by side. The global scope's zones sit at the top level; a
	// view's inside its block.
	scopes := append([]*viewDef{m.global}, m.views...)
	type piece struct {
		v      *viewDef
		depth  int
		lo, hi int
		text   string
		err    error
	}
	var pieces []*piece
	for i, v := range scopes {
		depth := min(i, 1)
		pieces = append(pieces, &piece{v: v, depth: depth, hi: min(configZonePiece, len(v.zones))})
		for lo := configZonePiece; lo < len(v.zones); lo += configZonePiece {
			pieces = append(pieces, &piece{v: v, depth: depth, lo: lo, hi: min(lo+configZonePiece, len(v.zones))})
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(pieces)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(pieces) {
					return
				}
				p := pieces[i]
				zc := newConf()
				zc.b.Grow(200 * (p.hi - p.lo))
				zc.depth = p.depth
				for _, z := range p.v.zones[p.lo:p.hi] {
					writeConfigZone(zc, m, p.v, z)
				}
				p.text, p.err = zc.String()
			}
		})
	}
	wg.Wait()
	// A scope of one piece (every view of up to configZonePiece zones)
	// keeps that piece's text as it is: strings.Join copies nothing then.
	var texts []string
	for i := 0; i < len(pieces); {
		v := pieces[i].v
		texts = texts[:0]
		var err error
		for ; i < len(pieces) && pieces[i].v == v; i++ {
			texts = append(texts, pieces[i].text)
			if err == nil {
				err = pieces[i].err
			}
		}
		if err != nil {
			v.zonesText = &renderedText{"", err}
		} else {
			v.zonesText = &renderedText{strings.Join(texts, ""), nil}
		}
	}
}

// confSizeHint is a little over the length of a named.conf: its config
// zones (when rendered already), its ACLs, and 512 bytes per view, so the
// text is neither grown by doubling from nothing nor a megabyte too large
// (10,000 ACLs, zones and keys: 2.1 MB for 1.8 and 1.9).
func (m *model) confSizeHint() int {
	n := 16 << 10
	for _, v := range append([]*viewDef{m.global}, m.views...) {
		if v.zonesText != nil {
			n += len(v.zonesText.text)
		}
	}
	for _, a := range m.acls {
		n += 16 + len(a.name) // acl "name" {\n};\n
		for _, e := range a.entries {
			n += 3 + len(e) // \te;\n
		}
	}
	return n + 512*len(m.views)
}

// configZonePiece is how many config zones one worker renders at a time.
const configZonePiece = 256

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
