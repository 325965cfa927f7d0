package validate

import (
	"strings"

	"git.unkin.net/unkin/bind-operator/agent"
)

// MaxKeyNameLength bounds a TSIG key name (a DNS name).
const MaxKeyNameLength = 253

// Owners checks an owners request and returns it canonical: the zone as
// ZoneName gives it, names lowercase without the trailing dot, types
// uppercase. Its names and types are only ever compared with what named
// asks about (never written into a command or a zone file), so the checks
// bound them rather than restrict their alphabet: printable ASCII, DNS
// lengths, names inside the zone.
func Owners(req agent.OwnersRequest) (agent.OwnersRequest, error) {
	if err := ViewName(req.View); err != nil {
		return req, err
	}
	zone, err := ZoneName(req.Zone)
	if err != nil {
		return req, err
	}
	out := agent.OwnersRequest{View: req.View, Zone: zone, UpdateKeys: make([]string, 0, len(req.UpdateKeys)), Sets: make([]agent.OwnedSet, 0, len(req.Sets))}
	if len(req.UpdateKeys) == 0 || len(req.UpdateKeys) > 16 {
		return req, fail("updateKeys", "must list 1 to 16 keys, got %d", len(req.UpdateKeys))
	}
	for _, k := range req.UpdateKeys {
		k = strings.ToLower(strings.TrimSuffix(k, "."))
		if k == "" || len(k) > MaxKeyNameLength || !printable(k) {
			return req, fail("updateKeys", "%q is not a key name: 1 to %d visible ASCII characters", clip(k), MaxKeyNameLength)
		}
		out.UpdateKeys = append(out.UpdateKeys, k)
	}
	if len(req.Sets) > agent.MaxOwnedSets {
		return req, fail("sets", "%d record sets, the limit is %d", len(req.Sets), agent.MaxOwnedSets)
	}
	for _, s := range req.Sets {
		name := strings.ToLower(strings.TrimSuffix(s.Name, "."))
		if name == "" || len(name) > MaxZoneNameLength || !printable(name) {
			return req, fail("sets.name", "%q is not an absolute name: 1 to %d visible ASCII characters", clip(s.Name), MaxZoneNameLength)
		}
		if name != zone && !strings.HasSuffix(name, "."+zone) {
			return req, fail("sets.name", "%q is outside the zone %q", clip(s.Name), zone)
		}
		typ := strings.ToUpper(s.Type)
		if typ == "" || len(typ) > 16 {
			return req, fail("sets.type", "%q is not a record type mnemonic", clip(s.Type))
		}
		for i := 0; i < len(typ); i++ {
			if c := typ[i]; !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') && c != '-' {
				return req, fail("sets.type", "%q is not a record type mnemonic", clip(s.Type))
			}
		}
		out.Sets = append(out.Sets, agent.OwnedSet{Name: name, Type: typ})
	}
	return out, nil
}

// printable reports whether s is visible ASCII.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}
