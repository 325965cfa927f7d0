package agent

// Paths of the API, version 1.
const (
	PathEnsure      = "/v1/zones/ensure"
	PathEnsureBatch = "/v1/zones/ensure-batch"
	PathDelete      = "/v1/zones/delete"
	PathStatus      = "/v1/zones/status"
	PathSync        = "/v1/sync"
	PathPolicy      = "/v1/policies/apply"
	PathProbe       = "/v1/transfers/probe"
	PathOwners      = "/v1/zones/owners"
	// PathOwnersList and PathOwnersGet read back what PathOwners stored,
	// so that an operator that starts again can find the DNSRecords
	// deleted while none ran (their sets are stored but no longer
	// wanted). An agent older than them answers 404 (unknown path).
	PathOwnersList = "/v1/zones/owners/list"
	PathOwnersGet  = "/v1/zones/owners/get"
	// PathKeysGet reads a signed zone's DNSSEC key files from named's
	// key-directory; PathKeysRestore writes them back onto a volume that
	// has lost them, before the zone is added (docs/behaviours.md,
	// "DNSSEC keys outlive volumes"). An agent older than them answers
	// 404.
	PathKeysGet     = "/v1/zones/keys/get"
	PathKeysRestore = "/v1/zones/keys/restore"
	// PathSeedNeeded asks whether a primary zone's file is missing, so
	// that the operator reads a large seed (BindZone spec.seedFrom) only
	// then; PathSeed streams that file to the agent, which writes it
	// only while the file is missing. The zone file is the request's
	// body (SeedContentType), its zone, view and digest are the query's
	// SeedQuery* parameters. An agent older than them answers 404.
	PathSeedNeeded = "/v1/zones/seed/needed"
	PathSeed       = "/v1/zones/seed"
)

// The seed request's query parameters and body type ("text/dns" is the
// media type of zone files, RFC 4027).
const (
	SeedQueryView   = "view"
	SeedQueryZone   = "zone"
	SeedQuerySHA256 = "sha256"
	SeedContentType = "text/dns"
)

// Request size limits. Both sides apply them: the agent refuses larger
// bodies with 413, the client refuses to send them.
const (
	MaxRequestBytes = 64 << 10 // one zone: clause ≤ 16 KiB, seed ≤ 32 KiB
	MaxBatchBytes   = 16 << 20 // a batch
	MaxBatchZones   = 5000
	MaxSeedBytes    = 32 << 10
	// MaxSeedFileBytes bounds a zone file sent by PathSeed: the 16
	// ConfigMap parts of spec.seedFrom (v1alpha1.MaxSeedBytes).
	MaxSeedFileBytes = 16 * 900 << 10
	// MaxPolicyRecords is a BindPolicy's rule limit (the CRD's MaxItems);
	// MaxPolicyBytes bounds such a request.
	MaxPolicyRecords = 2000
	MaxPolicyBytes   = 2 << 20
	// MaxResultErrorBytes bounds the error of one batch entry: named's
	// reasons fit on a line; the agent cuts longer ones (BoundTo).
	MaxResultErrorBytes = 256
	// MaxReplyBytes bounds what the client reads from an agent. The
	// largest reply is a full batch: MaxBatchZones results, each under
	// 2 KiB once JSON-encoded with the longest view and zone names and an
	// error of MaxResultErrorBytes made of characters JSON escapes
	// (TestLargestBatchReplyFits).
	MaxReplyBytes = 12 << 20
	// MaxOwnedSets bounds the record sets one OwnersRequest protects
	// (DNSRecords, inline sets, SOA and NS of one zone); MaxOwnersBytes
	// bounds such a request: 50,000 sets of the longest names.
	MaxOwnedSets   = 50000
	MaxOwnersBytes = 16 << 20
	// MaxOwnedValues and MaxOwnedValueBytes bound an OwnedSet's values. A
	// DNSRecord has at most 100 values of at most 4096 characters (the
	// CRD), but Values hold their canonical presentation (what
	// status.appliedValues hold, records.CanonicalValue): miekg/dns
	// prints every byte of a TXT or CAA string that is not printable
	// ASCII as \DDD and quotes each 255-byte string, so a value of 4096
	// four-byte characters takes 65,698 bytes. A bound of 4096 bytes would
	// refuse the whole push of a zone holding one long TXT record
	// (TestLargestCanonicalValueFits in agent/validate).
	MaxOwnedValues     = 100
	MaxOwnedValueBytes = 72 << 10
	// MaxStoredZones bounds the zones a PathOwnersList reply may name,
	// MaxStoredListBytes that reply: MaxStoredZones refs with the longest
	// view and zone names (TestLargestStoredListFits). The client refuses
	// longer lists: an operator cannot sweep an agent storing more zones.
	MaxStoredZones     = 100000
	MaxStoredListBytes = 36 << 20
	// MaxKeyFiles bounds the key files of one zone (ZoneKeys): a .key,
	// .private and .state per key, for a KSK and a ZSK each mid-rollover
	// with room to spare. MaxKeyFileBytes bounds one file: an RSA 4096
	// .private is about 3.3 KiB. MaxKeysBytes bounds a ZoneKeys request
	// or reply.
	MaxKeyFiles     = 48
	MaxKeyFileBytes = 16 << 10
	MaxKeysBytes    = 1 << 20
)

// Actions reported by ensure and delete.
const (
	ActionAdded     = "added"     // addzone
	ActionModified  = "modified"  // modzone: the zone existed with another clause
	ActionUnchanged = "unchanged" // the zone existed with this clause
	ActionDeleted   = "deleted"   // delzone
	ActionAbsent    = "absent"    // delete of a zone named does not have
	ActionReloaded  = "reloaded"  // a policy zone rewritten and reloaded
)

// ZoneRef names a zone: View "" is the default view (no views configured).
type ZoneRef struct {
	View string `json:"view,omitempty"`
	Zone string `json:"zone"`
}

// EnsureZoneRequest makes named serve Zone with exactly Clause.
//
// Clause is the `{ ... };` block rndc addzone takes (render.ZoneClauses
// builds it). Seed, when set, is the initial zone file of a primary zone:
// the agent writes it to render.Paths.PrimaryZoneFile(View, Zone) only if
// that file does not exist (dynamic updates live there and are never
// overwritten), and the clause's file statement must name exactly that
// path.
type EnsureZoneRequest struct {
	View   string `json:"view,omitempty"`
	Zone   string `json:"zone"`
	Clause string `json:"clause"`
	Seed   string `json:"seed,omitempty"`
}

// SeedNeeded says whether the primary zone file of a zone is missing.
type SeedNeeded struct {
	Needed bool `json:"needed"`
}

// SeedResult says what a PathSeed request did: Written is false when the
// zone file existed (Reason says so), which is not an error.
type SeedResult struct {
	Written bool   `json:"written"`
	Records int    `json:"records,omitempty"`
	Serial  uint32 `json:"serial,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// EnsureZoneResult says what the agent did.
type EnsureZoneResult struct {
	View   string `json:"view,omitempty"`
	Zone   string `json:"zone"`
	Action string `json:"action,omitempty"` // ActionAdded, ActionModified, ActionUnchanged
	// SeedWritten is true when this request created the zone file.
	SeedWritten bool `json:"seedWritten,omitempty"`
	// Error is set (and Action empty) when named refused the zone; only in
	// batch results, a single ensure returns an ErrorResponse instead.
	Error string `json:"error,omitempty"`
}

// EnsureZonesRequest is many ensures over one control session. Every entry
// is validated before any is applied: one invalid entry refuses the batch
// (422, nothing done). named's per-zone failures come back per entry.
type EnsureZonesRequest struct {
	Zones []EnsureZoneRequest `json:"zones"`
}

// EnsureZonesResponse holds one result per request entry, in order.
type EnsureZonesResponse struct {
	Results []EnsureZoneResult `json:"results"`
}

// DeleteZoneResult says what the agent did.
type DeleteZoneResult struct {
	Action string `json:"action"` // ActionDeleted or ActionAbsent
}

// ZoneStatus is named's view of a zone (rndc zonestatus).
type ZoneStatus struct {
	View   string `json:"view,omitempty"`
	Zone   string `json:"zone"`
	Exists bool   `json:"exists"`
	Loaded bool   `json:"loaded"`
	Type   string `json:"type,omitempty"`
	Serial uint32 `json:"serial"`
	// Expected is true when the zone is in the agent's expected list
	// (ensured and not deleted): readiness waits for it.
	Expected bool `json:"expected"`
}

// PolicyRequest makes the response policy zone Zone in View enforce exactly
// Records. The agent rewrites the zone's file (render.Paths.PolicyZoneFile)
// and has named reload it, unless the file already holds these records.
// Policy is the BindPolicy's name, for the file's header.
type PolicyRequest struct {
	View    string         `json:"view,omitempty"`
	Zone    string         `json:"zone"`
	Policy  string         `json:"policy"`
	Records []PolicyRecord `json:"records"`
}

// PolicyRecord is one rule: an owner relative to the policy zone and the
// CNAME target that says the action (render.PolicyRecord).
type PolicyRecord struct {
	Owner  string `json:"owner"`
	Target string `json:"target"`
}

// PolicyResult says what the pod enforces after the request.
type PolicyResult struct {
	View   string `json:"view,omitempty"`
	Zone   string `json:"zone"`
	Action string `json:"action"` // ActionReloaded or ActionUnchanged
	// Digest identifies the records named loaded (render.PolicyDigest).
	Digest string `json:"digest"`
	// Serial is the serial named serves for the zone after the request.
	Serial uint32 `json:"serial"`
}

// SyncResult is the outcome of POST /v1/sync (rndc sync -clean).
type SyncResult struct {
	Synced bool `json:"synced"`
}

// ErrorResponse is the body of every non-2xx reply.
type ErrorResponse struct {
	Error string `json:"error"`
	// Field names the offending input for validation errors (422).
	Field string `json:"field,omitempty"`
}

// MaxProbePrimaries bounds a transfer probe (the CRD's MaxItems of
// spec.primaries).
const MaxProbePrimaries = 16

// TransferProbeRequest asks the agent to try, from its pod's address, what
// named does to transfer a Secondary zone from its primaries: ask each for
// the zone's SOA, then start an AXFR, signed with the key named uses. A
// transfer named could not make then shows its reason (REFUSED, NOTAUTH, a
// timeout...), which named itself only logs.
//
// With SOAOnly the agent only asks each server for the zone's SOA: what a
// hidden primary's external secondaries serve, asked from the primary pod
// that notifies them. An agent of an earlier release refuses the request
// (it decodes strictly), which the operator reports as "not asked".
type TransferProbeRequest struct {
	Zone      string         `json:"zone"`
	Primaries []ProbePrimary `json:"primaries"`
	SOAOnly   bool           `json:"soaOnly,omitempty"`
}

// ProbePrimary is one primary as named.conf names it. Key is the BIND name
// of a key in the pod's keys.conf, "" for an unsigned transfer.
type ProbePrimary struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
	Key     string `json:"key,omitempty"`
}

// TransferProbeResult has one outcome per primary, in request order.
type TransferProbeResult struct {
	Outcomes []ProbeOutcome `json:"outcomes"`
}

// ProbeOutcome is what one primary answered: Serial when it offered the
// transfer, else Error (bounded by MaxResultErrorBytes).
type ProbeOutcome struct {
	Server string `json:"server"`
	Serial uint32 `json:"serial,omitempty"`
	Error  string `json:"error,omitempty"`
}

// OwnersRequest tells the primary's agent which record sets of a zone the
// operator owns, and which keys sign the zone's external UPDATEs. The
// zone's update-policy asks the agent about every record an UPDATE signed
// with any key but the operator's touches (render's "external" rule); the
// agent grants it when the signer is one of UpdateKeys and the record's
// name and type are none of Sets. A later request replaces the earlier
// one whole.
//
// The agent keeps the request on its volume and gives it back, canonical
// (PathOwnersGet), which is how the operator finds, when it starts, the
// sets of DNSRecords deleted while it did not run.
type OwnersRequest struct {
	View string `json:"view,omitempty"`
	Zone string `json:"zone"`
	// UpdateKeys are the BIND names of the keys whose UPDATEs the agent
	// grants in the zone (the zone's spec.updateKeyRef), 0 to 16. The
	// zone decides about its names for every signer of its view: a key
	// it does not list is refused there, a parent zone's key too. With
	// none, the request is a record kept for the operator, and the zone
	// grants no key anything.
	UpdateKeys []string `json:"updateKeys"`
	// Sets are the record sets no UPDATE signed with UpdateKeys may
	// change: absolute names (trailing dot optional) and type mnemonics.
	Sets []OwnedSet `json:"sets"`
}

// OwnedSet is one record set the operator owns.
//
// Values are the values the operator last wrote to the set (a DNSRecord's
// status.appliedValues, canonical presentation format: `192.0.2.1`,
// `"some text"`), in order. The agent never judges by them: it only
// stores them and gives them back (PathOwnersGet), so that an operator
// that starts again knows what it had written to a set whose DNSRecord is
// gone.
type OwnedSet struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Values []string `json:"values,omitempty"`
}

// StoredOwners is the reply of PathOwnersList: every zone (and view) whose
// owners the agent stores, sorted by zone, then view ("" first), each
// once, canonical.
type StoredOwners struct {
	Zones []ZoneRef `json:"zones"`
}

// ZoneKeys are the DNSSEC key files named keeps for a zone in its
// key-directory (K<zone>+<algorithm>+<tag>.key, .private and .state), the
// zone's signing identity: the DS its parent publishes follows from them.
// They are shared by every view that serves the zone (one key-directory).
// Files are sorted by algorithm, tag, then kind.
type ZoneKeys struct {
	Zone  string    `json:"zone"`
	Files []KeyFile `json:"files"`
}

// Kinds of key file.
const (
	KeyFilePublic  = "key"
	KeyFilePrivate = "private"
	KeyFileState   = "state"
)

// KeyFile is one of named's key files. Data is its content as named wrote
// it; a .private file holds the private key.
type KeyFile struct {
	Algorithm uint8  `json:"algorithm"`
	Tag       uint16 `json:"tag"`
	Kind      string `json:"kind"` // KeyFilePublic, KeyFilePrivate or KeyFileState
	Data      string `json:"data"`
}

// KeysRestoreResult says whether PathKeysRestore wrote the files: it
// writes them only while named does not serve the zone and the
// key-directory holds no key file of it, so keys named made or uses are
// never replaced. Reason says why it did not.
type KeysRestoreResult struct {
	Restored bool   `json:"restored"`
	Reason   string `json:"reason,omitempty"`
}

// OwnersResult says what the agent now protects in the zone.
type OwnersResult struct {
	View string `json:"view,omitempty"`
	Zone string `json:"zone"`
	Sets int    `json:"sets"`
}
