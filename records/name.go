package records

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// Apex is the owner name of the zone's apex in canonical form.
const Apex = "@"

// FoldName is a name with surrounding space removed and its case folded:
// DNS names compare case-insensitively, so lowercase is their one spelling.
// It keeps a trailing dot (absolute and relative names differ).
func FoldName(name string) string {
	return strings.ToLower(strings.TrimSpace(name))
}

// CanonicalZone returns a zone name in canonical form: lowercase, without
// the trailing dot, "." for the root.
func CanonicalZone(zone string) string {
	z := FoldName(zone)
	if z == "." || z == "" {
		return z
	}
	return strings.TrimSuffix(z, ".")
}

// ZoneFQDN returns the zone as a fully qualified name with the trailing dot.
func ZoneFQDN(zone string) string {
	z := CanonicalZone(zone)
	if z == "." || z == "" {
		return "."
	}
	return z + "."
}

// RelativeName turns an owner name into canonical form: lowercase and
// relative to zone ("@" for the apex). Absolute names (trailing dot) must lie
// inside the zone.
func RelativeName(zone, name string) (string, error) {
	n := FoldName(name)
	if n == "" {
		return "", fmt.Errorf("name must not be empty; use @ for the zone apex")
	}
	if n == Apex {
		return Apex, nil
	}
	if !strings.HasSuffix(n, ".") {
		return n, nil
	}
	origin := ZoneFQDN(zone)
	if n == origin {
		return Apex, nil
	}
	if !dns.IsSubDomain(origin, n) {
		return "", fmt.Errorf("name %q is outside the zone %q; use a name relative to the zone or an absolute name ending in .%s", name, CanonicalZone(zone), origin)
	}
	if origin == "." {
		return strings.TrimSuffix(n, "."), nil
	}
	return strings.TrimSuffix(n, "."+origin), nil
}

// FQDN returns the absolute owner name (with trailing dot) of a relative or
// absolute name in zone.
func FQDN(zone, name string) string {
	n := FoldName(name)
	origin := ZoneFQDN(zone)
	switch {
	case n == Apex || n == "":
		return origin
	case strings.HasSuffix(n, "."):
		return n
	case origin == ".":
		return n + "."
	default:
		return n + "." + origin
	}
}
