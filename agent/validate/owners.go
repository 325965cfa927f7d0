package validate

import (
	"strings"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// MaxUpdateKeys bounds an owners request's update keys.
const MaxUpdateKeys = 16

// Replies are the checks the operator's client applies to the owners it
// reads back from an agent (agent.Client.StoredOwners): the agent's own.
// The client cannot import this package, which imports agent for the
// API's types, so callers pass these.
var Replies = agent.ReplyChecks{Owners: Owners, Ref: Ref, Keys: Keys}

// Ref checks a zone reference and returns it canonical: the view as
// ViewName allows it, the zone as ZoneName gives it (what Owners does with
// a request's view and zone).
func Ref(ref agent.ZoneRef) (agent.ZoneRef, error) {
	if err := ViewName(ref.View); err != nil {
		return ref, err
	}
	zone, err := ZoneName(ref.Zone)
	if err != nil {
		return ref, err
	}
	return agent.ZoneRef{View: ref.View, Zone: zone}, nil
}

// Owners checks an owners request and returns it canonical: the zone as
// ZoneName gives it, names lowercase without the trailing dot, types
// uppercase, values as given. Its names and types are only ever compared
// with what named asks about (never written into a command or a zone
// file), and its values are only stored and given back, so the checks
// bound them rather than restrict their alphabet: printable ASCII, DNS
// lengths, names inside the zone; values without control characters.
func Owners(req agent.OwnersRequest) (agent.OwnersRequest, error) {
	ref, err := Ref(agent.ZoneRef{View: req.View, Zone: req.Zone})
	if err != nil {
		return req, err
	}
	zone := ref.Zone
	out := agent.OwnersRequest{View: req.View, Zone: zone, UpdateKeys: make([]string, 0, len(req.UpdateKeys)), Sets: make([]agent.OwnedSet, 0, len(req.Sets))}
	// No update key is allowed: the request is then a record of the
	// zone's sets for the operator, and the agent grants no UPDATE in
	// the zone (it refuses those of the other zones' keys of its view).
	if len(req.UpdateKeys) > MaxUpdateKeys {
		return req, fail("updateKeys", "must list at most %d keys, got %d", MaxUpdateKeys, len(req.UpdateKeys))
	}
	for _, k := range req.UpdateKeys {
		k = strings.ToLower(strings.TrimSuffix(k, "."))
		if k == "" || len(k) > v1alpha1.MaxDomainNameLength || !printable(k) {
			return req, fail("updateKeys", "%q is not a key name: 1 to %d visible ASCII characters", clip(k), v1alpha1.MaxDomainNameLength)
		}
		out.UpdateKeys = append(out.UpdateKeys, k)
	}
	if len(req.Sets) > agent.MaxOwnedSets {
		return req, fail("sets", "%d record sets, the limit is %d", len(req.Sets), agent.MaxOwnedSets)
	}
	for _, s := range req.Sets {
		name := strings.ToLower(strings.TrimSuffix(s.Name, "."))
		if name == "" || len(name) > v1alpha1.MaxDomainNameLength || !printable(name) {
			return req, fail("sets.name", "%q is not an absolute name: 1 to %d visible ASCII characters", clip(s.Name), v1alpha1.MaxDomainNameLength)
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
		if err := ownedValues(name, typ, s.Values); err != nil {
			return req, err
		}
		set := agent.OwnedSet{Name: name, Type: typ}
		if len(s.Values) > 0 {
			// A copy: the caller's slice stays the caller's.
			set.Values = append(make([]string, 0, len(s.Values)), s.Values...)
		}
		out.Sets = append(out.Sets, set)
	}
	return out, nil
}

// ownedValues bounds one set's values. They are presentation format, which
// has spaces and quotes (TXT) but never a raw control character: miekg/dns
// and named print those as \DDD. So one here is not a value the operator
// wrote, and refusing it keeps the stored file and its echoes in logs to
// one line each.
func ownedValues(name, typ string, values []string) error {
	if len(values) > agent.MaxOwnedValues {
		return fail("sets.values", "%s %s has %d values, the limit is %d", clip(name), typ, len(values), agent.MaxOwnedValues)
	}
	for i, v := range values {
		if v == "" || len(v) > agent.MaxOwnedValueBytes {
			return fail("sets.values", "%s %s: value %d is %d bytes long, it must be 1 to %d", clip(name), typ, i, len(v), agent.MaxOwnedValueBytes)
		}
		for j := 0; j < len(v); j++ {
			if c := v[j]; c < 0x20 || c == 0x7f {
				return fail("sets.values", "%s %s: value %d has the control character 0x%02x at byte %d", clip(name), typ, i, c, j)
			}
		}
	}
	return nil
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
