// Package records parses, canonicalises and validates the record sets of
// BindZones and DNSRecords. It is pure (no API server, no webhooks) so that
// the admission webhooks, which normalise user input, and the controllers,
// which turn the stored sets into dns.RR for RFC 2136 UPDATEs, agree byte
// for byte on what a record is.
//
// Canonical form, produced by Canonicalize and idempotent:
//
//   - zone names are lowercase without the trailing dot ("example.com"); the
//     root zone is ".".
//   - owner names are lowercase and relative to the zone: "@" for the apex,
//     "www", "*.apps". An absolute owner inside the zone ("WWW.Example.COM.")
//     becomes relative ("www"). A name without a trailing dot is always
//     relative, as in a zone file: "www.example.com" in zone example.com means
//     www.example.com.example.com.
//   - types are uppercase.
//   - values are the rdata re-printed by github.com/miekg/dns: IPv6
//     compressed, domain names fully qualified and lowercased (relative names
//     in rdata are relative to the zone, as in a zone file), TXT quoted and
//     split into 255-byte strings. A TXT value that does not start with a
//     quote is taken literally as one string, so "v=spf1 -all" stays one
//     string instead of becoming two.
//   - duplicate values are dropped and values sorted bytewise; record sets
//     with the same name and type are merged (the first explicit TTL wins)
//     and sorted by (name, type); a missing TTL is filled with the default.
package records
