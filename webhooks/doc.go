// Package webhooks holds the admission webhooks of the nine bind.unkin.net
// kinds: one struct per kind implementing controller-runtime's typed
// admission.Defaulter and admission.Validator, pure validation functions
// returning field.ErrorList, and the CEL policy engine that judges the
// option statements a user may add to named.conf.
//
// Order of the checks: the mutating webhook runs before the CRD's schema
// and CEL rules, so defaulting must cope with any input (it never fails on
// bad data: it leaves it for validation). The validating webhook runs after
// the CRD rules and adds what they cannot express: parsing (record data,
// option statements, addresses, durations), rules across list items, rules
// whose error must name a map key or list index the CRD cannot put in the
// path, and rules that need other objects (references, the cluster's mode,
// pod IPs). No rule is checked in both places: shape rules (immutability,
// ranges, fields that go together) are the CRD's alone.
//
// Missing references are warnings, not errors: GitOps tools apply objects
// in any order, and the controllers report the missing object in status.
// A reference to an object that exists but cannot work (a view of another
// cluster, a Forward zone on an Authoritative cluster) is an error.
//
// An UPDATE that leaves spec alone (a finalizer, a label, an annotation) is
// not sent to the webhooks at all (matchConditions in the markers). There
// is nothing new to default or validate, and judging it against other
// objects could refuse a controller the removal of its finalizer, holding a
// deleted object forever, because something it references changed since.
// It also spares the admission calls on the update that strips the
// finalizer of an earlier release from a DNSRecord (DNSRecords are created
// without one now). So the pure rules run again over what is stored:
// Rechecker (recheck.go), which the manager hands to the controllers.
package webhooks
