package render

import (
	"fmt"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// SeedRefresh is the SOA refresh of a seed whose zone sets none: the API's
// default (v1alpha1.DefaultSOARefresh), named here for the tests that
// measure against it.
const SeedRefresh = bindv1alpha1.DefaultSOARefresh

// SeedZone is the initial file of a primary zone: an SOA (serial 1) and an
// NS record for the SOA MNAME. SOA fields left unset and defaultTTL <= 0
// take the API's defaults (v1alpha1.DefaultSOARefresh ..., DefaultTTL).
// An unset MNAME is ns1.<zone>, for callers without a cluster: the
// controller always names one, the query Service's name when the zone sets
// none (see SOASpec.PrimaryNameServer).
//
// BIND refuses to load a zone whose NS target lies inside the zone without
// an address ("NS 'ns1.example.com' has no address records"), and
// ns1.<zone>. does. When the MNAME is in the zone, use SeedZoneWithGlue
// with the addresses it should resolve to.
func SeedZone(zoneName string, soa *bindv1alpha1.SOASpec, defaultTTL int32) string {
	return SeedZoneWithGlue(zoneName, soa, defaultTTL, nil)
}

// SeedZoneWithGlue is SeedZone plus A/AAAA records for the MNAME when it
// lies inside the zone. Invalid addresses are skipped. Addresses are sorted,
// so the seed does not depend on their order.
func SeedZoneWithGlue(zoneName string, soa *bindv1alpha1.SOASpec, defaultTTL int32, glue []string) string {
	origin := records.ZoneFQDN(zoneName)
	z := ZoneSOA(zoneName, soa)
	mname := z.MName
	if defaultTTL <= 0 {
		defaultTTL = bindv1alpha1.DefaultTTL
	}
	var b strings.Builder
	fmt.Fprintf(&b, "; Seed of zone %s, rendered by bind-operator. Records arrive as dynamic updates.\n", origin)
	fmt.Fprintf(&b, "$ORIGIN %s\n", origin)
	fmt.Fprintf(&b, "$TTL %d\n", defaultTTL)
	fmt.Fprintf(&b, "@\tIN\tSOA\t%s %s 1 %d %d %d %d\n", z.MName, z.RName, z.Refresh, z.Retry, z.Expire, z.Minimum)
	fmt.Fprintf(&b, "@\tIN\tNS\t%s\n", mname)
	if inZone(mname, origin) {
		var v4, v6 []string
		for _, g := range glue {
			a, err := checkIP("glue", g)
			if err != nil {
				continue
			}
			if strings.Contains(a, ":") {
				v6 = append(v6, a)
			} else {
				v4 = append(v4, a)
			}
		}
		for _, set := range []struct {
			t   string
			ips []string
		}{{"A", sortUnique(v4)}, {"AAAA", sortUnique(v6)}} {
			for _, a := range set.ips {
				fmt.Fprintf(&b, "%s\tIN\t%s\t%s\n", mname, set.t, a)
			}
		}
	}
	return b.String()
}

func inZone(name, origin string) bool {
	return origin == "." || name == origin || strings.HasSuffix(name, "."+origin)
}

// SOA is what a zone's SOA record says besides its serial: the spec's
// fields with the API's defaults filled in, names absolute.
type SOA struct {
	MName, RName                    string
	Refresh, Retry, Expire, Minimum int32
}

// ZoneSOA is the SOA that spec.soa asks for: the seed's, and what the
// controller keeps served when spec.soa changes later. An unset MNAME is
// ns1.<zone> (see SeedZone), an unset RNAME hostmaster.<zone>.
func ZoneSOA(zoneName string, soa *bindv1alpha1.SOASpec) SOA {
	origin := records.ZoneFQDN(zoneName)
	if soa == nil {
		soa = &bindv1alpha1.SOASpec{}
	}
	sub := func(s string) string {
		if origin == "." {
			return s + "."
		}
		return s + "." + origin
	}
	// Defaults that would be longer than a domain name may be (a zone
	// name near 253 octets) fall back to the zone's own name.
	fits := func(n string) string {
		if len(n) > 254 {
			return origin
		}
		return n
	}
	z := SOA{
		MName:   fits(sub("ns1")),
		RName:   fits(sub(bindv1alpha1.DefaultSOAResponsiblePerson)),
		Refresh: orDefault(soa.Refresh, bindv1alpha1.DefaultSOARefresh),
		Retry:   orDefault(soa.Retry, bindv1alpha1.DefaultSOARetry),
		Expire:  orDefault(soa.Expire, bindv1alpha1.DefaultSOAExpire),
		Minimum: orDefault(soa.Minimum, bindv1alpha1.DefaultSOAMinimum),
	}
	if soa.PrimaryNameServer != "" {
		z.MName = records.ZoneFQDN(string(soa.PrimaryNameServer))
	}
	if soa.ResponsiblePerson != "" {
		z.RName = records.ZoneFQDN(string(soa.ResponsiblePerson))
	}
	return z
}
