package render

import (
	"fmt"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// writeCatalogZones declares the catalog zones. On the primary a catalog is
// a primary zone the operator edits with UPDATEs signed with the catalog's
// transfer key; its file lives in DataDir (seeded by the entrypoint when
// missing) because those updates must survive restarts. On the secondaries
// it is a secondary zone transferred, keyed, from the primary Service.
func writeCatalogZones(c *conf, m *model, r role) {
	for _, cat := range m.catalogs {
		c.blank()
		key := c.q("key name", cat.key)
		c.open("zone %s {", c.q("catalog zone name", cat.name))
		if r == rolePrimary {
			c.line("type primary;")
			c.line("file %s;", c.q("path", cat.file))
			c.line("allow-update { key %s; };", key)
			c.line("allow-transfer { key %s; };", key)
			// Not unixtime like the member zones: a primary that
			// re-seeds the catalog rebuilds it one member per UPDATE,
			// and each partial catalog must stay below the serial the
			// secondaries hold, or they would transfer it and drop the
			// members it lacks (docs/behaviours.md, "Serials never go
			// back").
			c.line("serial-update-method increment;")
		} else {
			c.line("type secondary;")
			c.line("file %s;", c.q("path", cat.file))
			c.line("primaries { %s; };", m.primaryServer(cat.key))
			// Whole copies only: a re-seeded primary may reach a
			// serial a secondary holds with other members, and its
			// differences from there do not apply to the old copy.
			c.line("request-ixfr no;")
		}
		c.close()
	}
}

// writeCatalogConsumer writes the secondaries' catalog-zones statement:
// member zones are transferred from default-primaries (the primary Service,
// keyed) and their files kept in DataDir/catz across restarts.
func writeCatalogConsumer(c *conf, m *model) {
	if len(m.catalogs) == 0 {
		return
	}
	interval := orDefault(m.cluster.Spec.Tuning.CatalogMinUpdateInterval, bindv1alpha1.DefaultCatalogMinUpdateInterval)
	c.open("catalog-zones {")
	for _, cat := range m.catalogs {
		c.line("zone %s default-primaries { %s; } min-update-interval %d zone-directory %s in-memory no;",
			c.q("catalog zone name", cat.name), strings.Join(cat.defaultPrimaries, "; "), interval, c.q("path", m.paths.catzDir()))
	}
	c.close()
}

// catalogSeed is the initial content of a catalog zone (RFC 9432 version 2):
// no members yet; the operator adds them with UPDATEs. The NS points at
// "invalid." as the RFC suggests, since a catalog is never resolved.
func catalogSeed(zone string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "; Seed of catalog zone %s. Copied into the data volume only when missing; rendered by bind-operator.\n", zone)
	b.WriteString("$TTL 0\n")
	fmt.Fprintf(&b, "$ORIGIN %s\n", records.ZoneFQDN(zone))
	b.WriteString("@\tIN\tSOA\tinvalid. hostmaster.invalid. 1 300 60 1209600 60\n")
	b.WriteString("@\tIN\tNS\tinvalid.\n")
	b.WriteString("version\tIN\tTXT\t\"2\"\n")
	return b.String()
}
