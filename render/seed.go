package render

import (
	"fmt"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// SOA timers of a seed zone. NOTIFY is the fast path; these only bound how
// stale a secondary can get when a NOTIFY is lost (DESIGN §3.6).
const (
	SeedRefresh = 300
	SeedRetry   = 60
	SeedExpire  = 1209600
	SeedMinimum = 60
	// DefaultTTL is a zone's $TTL when spec.defaultTTL is unset.
	DefaultTTL = 3600
)

// SeedZone is the initial file of a primary zone: an SOA (serial 1) and an
// NS record for the SOA MNAME. defaultTTL <= 0 means DefaultTTL.
//
// BIND refuses to load a zone whose NS target lies inside the zone without
// an address ("NS 'ns1.example.com' has no address records"), and the
// default MNAME ns1.<zone>. does. When the MNAME is in the zone, use
// SeedZoneWithGlue with the addresses it should resolve to.
func SeedZone(zoneName string, soa *bindv1alpha1.SOASpec, defaultTTL int32) string {
	return SeedZoneWithGlue(zoneName, soa, defaultTTL, nil)
}

// SeedZoneWithGlue is SeedZone plus A/AAAA records for the MNAME when it
// lies inside the zone. Invalid addresses are skipped. Addresses are sorted,
// so the seed does not depend on their order.
func SeedZoneWithGlue(zoneName string, soa *bindv1alpha1.SOASpec, defaultTTL int32, glue []string) string {
	origin := fqdn(zoneName)
	if soa == nil {
		soa = &bindv1alpha1.SOASpec{}
	}
	sub := func(s string) string {
		if origin == "." {
			return s + "."
		}
		return s + "." + origin
	}
	mname := sub("ns1")
	if soa.PrimaryNameServer != "" {
		mname = fqdn(string(soa.PrimaryNameServer))
	}
	rname := sub("hostmaster")
	if soa.ResponsiblePerson != "" {
		rname = fqdn(string(soa.ResponsiblePerson))
	}
	if defaultTTL <= 0 {
		defaultTTL = DefaultTTL
	}
	var b strings.Builder
	fmt.Fprintf(&b, "; Seed of zone %s, rendered by bind-operator. Records arrive as dynamic updates.\n", origin)
	fmt.Fprintf(&b, "$ORIGIN %s\n", origin)
	fmt.Fprintf(&b, "$TTL %d\n", defaultTTL)
	fmt.Fprintf(&b, "@\tIN\tSOA\t%s %s 1 %d %d %d %d\n", mname, rname,
		orDefault(soa.Refresh, SeedRefresh), orDefault(soa.Retry, SeedRetry),
		orDefault(soa.Expire, SeedExpire), orDefault(soa.Minimum, SeedMinimum))
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
