// Package quota bounds what one namespace and one zone may hold, so that
// one tenant cannot stop everyone (issue 44, item 4).
//
// Every limit of the API is per object: a DNSRecord may hold 100 values of
// 4,096 bytes, a BindZone 10,000 inline record sets. Nothing bounded how
// many objects, or how many bytes, one namespace puts into the manager's
// cache, or into one zone. The manager runs with a 256 MiB memory limit,
// and every webhook fails closed (failurePolicy: Fail): a manager killed
// for its memory refuses every bind.unkin.net write in every namespace.
//
// So the webhooks refuse a create, or an update that grows an object,
// that would take past its limit:
//
//   - a namespace: the number of bind.unkin.net objects of the nine kinds
//     it holds, and the bytes of their specs;
//   - a zone (a BindZone, by its namespace and name): the record sets it
//     holds, its inline spec.records plus the DNSRecords it admits, and
//     their bytes.
//
// The use is kept by a Tracker, fed by the manager's informers (which
// cache every object of the nine kinds in every namespace anyway): each
// event adds or takes away what one object contributes (Of). A webhook
// call reads a few counters; it never walks the objects.
//
// Sizes are the length of the spec encoded as JSON, as the API server
// stores it (near enough: the same Go types and field order, no
// whitespace), computed the same way by the tracker and the webhook (Of).
// Labels and annotations are not counted: an update that changes only
// them never reaches the webhooks (so that a finalizer can always be
// removed), so a quota on them could not be held; the API server bounds
// them at 256 KiB per object.
package quota

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// The defaults, set from what was measured (docs/behaviours.md, "Scale"
// and "Quotas"). The manager held 92–98 MiB resident at its peak with
// 10,000 DNSRecords in one namespace and one zone (the in-cluster bench,
// GOMEMLIMIT=64MiB, limits.memory 256Mi), about 28 MiB of it live heap
// for the records, roughly 2.8 KiB per cached DNSRecord with its indexes.
//
//   - DefaultNamespaceObjects is twice that scale. The benches put just
//     over 10,000 objects into one namespace (10,001 DNSRecords, a
//     cluster, its key and zones; 10,000 BindZones and their cluster), so
//     a quota of 10,000 would refuse the project's own scale tests; at
//     20,000 the records' share of the live heap is about 56 MiB, and one
//     namespace at its quota stays under the 256 MiB limit by the same
//     arithmetic (the bench TestInClusterQuotaBench measures it).
//   - DefaultNamespaceBytes bounds the specs' bytes, which the cache
//     holds about once more as Go strings: 16 MiB is some sixteen times
//     what the bench's 10,000 DNSRecords hold (about 90 bytes of spec
//     each), enough for 20,000 records of 800 bytes, and only forty
//     DNSRecords of the largest kind (100 values of 4,096 bytes).
//   - DefaultZoneRecords matches the namespace's: one namespace may put
//     all its records into one zone, as the bench does.
//   - DefaultZoneBytes is half of agent.MaxOwnersBytes (16 MiB), the
//     largest list of a zone's owned record sets the operator sends its
//     agents: their values are the records' (in canonical form, which for
//     ASCII data is no longer than the spec's), so a zone within its
//     quota always fits.
const (
	DefaultNamespaceObjects int64 = 20000
	DefaultNamespaceBytes   int64 = 16 << 20
	DefaultZoneRecords      int64 = 20000
	DefaultZoneBytes        int64 = 8 << 20
)

// The manager flags that set each limit, named in every refusal.
const (
	FlagNamespaceObjects = "quota-namespace-objects"
	FlagNamespaceBytes   = "quota-namespace-bytes"
	FlagZoneRecords      = "quota-zone-records"
	FlagZoneBytes        = "quota-zone-bytes"
)

// Limits are the quotas. A limit of 0 turns that quota off.
type Limits struct {
	// NamespaceObjects bounds the bind.unkin.net objects of one namespace.
	NamespaceObjects int64
	// NamespaceBytes bounds the bytes of their specs.
	NamespaceBytes int64
	// ZoneRecords bounds the record sets of one zone: its inline records
	// and the DNSRecords it admits.
	ZoneRecords int64
	// ZoneBytes bounds their bytes.
	ZoneBytes int64
}

// DefaultLimits are the limits the manager runs with unless its flags say
// otherwise.
func DefaultLimits() Limits {
	return Limits{NamespaceObjects: DefaultNamespaceObjects, NamespaceBytes: DefaultNamespaceBytes, ZoneRecords: DefaultZoneRecords, ZoneBytes: DefaultZoneBytes}
}

// Off tells whether every quota is turned off.
func (l Limits) Off() bool { return l == Limits{} }

// Use is what a namespace or zone holds: a number of objects or record
// sets, and their bytes.
type Use struct {
	Count int64
	Bytes int64
}

// Plus is u and o together.
func (u Use) Plus(o Use) Use { return Use{Count: u.Count + o.Count, Bytes: u.Bytes + o.Bytes} }

// Minus is u less o.
func (u Use) Minus(o Use) Use { return Use{Count: u.Count - o.Count, Bytes: u.Bytes - o.Bytes} }

// Contribution is what one object adds to the use of its namespace and,
// for a DNSRecord or a BindZone, of a zone.
type Contribution struct {
	// Namespace is the object's namespace.
	Namespace string
	// Object is one object and the bytes of its spec.
	Object Use
	// Zone is the BindZone whose use InZone adds to: a DNSRecord's zone
	// (spec.zoneRef, possibly of another namespace), a BindZone itself.
	// Zero for the other kinds.
	Zone types.NamespacedName
	// Writer is the namespace the zone use is counted under: the
	// DNSRecord's. "" for a BindZone's inline records, which are the
	// zone's own.
	Writer string
	// InZone is one record set and the DNSRecord's spec bytes, or a
	// BindZone's inline record sets and their bytes.
	InZone Use
}

// Of is what obj contributes, reading it as an object of namespace when
// it names none (a create whose namespace is the request's). ok is false
// for an object that is not of the nine kinds.
func Of(obj client.Object, namespace string) (c Contribution, ok bool) {
	ns := obj.GetNamespace()
	if ns == "" {
		ns = namespace
	}
	c.Namespace = ns
	var spec any
	switch o := obj.(type) {
	case *v1alpha1.DNSRecord:
		spec = &o.Spec
		if o.Spec.ZoneRef.Name != "" {
			zns := o.Spec.ZoneRef.Namespace
			if zns == "" {
				zns = ns
			}
			c.Zone = types.NamespacedName{Namespace: zns, Name: o.Spec.ZoneRef.Name}
			c.Writer = ns
		}
	case *v1alpha1.BindZone:
		spec = &o.Spec
		c.Zone = types.NamespacedName{Namespace: ns, Name: o.Name}
		if len(o.Spec.Records) > 0 {
			c.InZone = Use{Count: int64(len(o.Spec.Records)), Bytes: jsonSize(o.Spec.Records)}
		}
	case *v1alpha1.BindCluster:
		spec = &o.Spec
	case *v1alpha1.BindView:
		spec = &o.Spec
	case *v1alpha1.BindTSIGKey:
		spec = &o.Spec
	case *v1alpha1.BindACL:
		spec = &o.Spec
	case *v1alpha1.BindCatalogZone:
		spec = &o.Spec
	case *v1alpha1.BindPolicy:
		spec = &o.Spec
	case *v1alpha1.BindDNSSECPolicy:
		spec = &o.Spec
	default:
		return Contribution{}, false
	}
	c.Object = Use{Count: 1, Bytes: jsonSize(spec)}
	if _, ok := obj.(*v1alpha1.DNSRecord); ok && c.Zone.Name != "" {
		c.InZone = c.Object
	}
	return c, true
}

// jsonSize is the length of v encoded as JSON; 0 if it cannot be (the
// API types always can).
func jsonSize(v any) int64 {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return int64(len(b))
}

// Quota names one of the four quotas.
type Quota int

// The four quotas.
const (
	NamespaceObjects Quota = iota
	NamespaceBytes
	ZoneRecords
	ZoneBytes
)

// Flag is the manager flag that sets q.
func (q Quota) Flag() string {
	return [...]string{FlagNamespaceObjects, FlagNamespaceBytes, FlagZoneRecords, FlagZoneBytes}[q]
}

// Exceeded is a quota an admission would take use past.
type Exceeded struct {
	Quota Quota
	// Use is what the namespace or zone holds now, Add what the request
	// adds to it, Limit the quota.
	Use, Add, Limit int64
	// Message says so: the namespace or zone, its use, the limit, the
	// flag that sets it, and what to do. It names no object of any
	// namespace.
	Message string
}

// over tells whether adding add to use passes limit. Adding nothing, or
// taking away, never does: a deletion or a shrinking update is never
// refused, even where use is already over a limit lowered since.
func over(use, add, limit int64) bool { return limit > 0 && add > 0 && use+add > limit }

// Namespace is what adding add to use, the use of namespace ns, exceeds.
func (l Limits) Namespace(ns string, use, add Use) []Exceeded {
	var out []Exceeded
	if over(use.Count, add.Count, l.NamespaceObjects) {
		out = append(out, Exceeded{Quota: NamespaceObjects, Use: use.Count, Add: add.Count, Limit: l.NamespaceObjects,
			Message: fmt.Sprintf("namespace %q holds %s bind.unkin.net objects and may hold at most %s (the manager's --%s); delete some, or ask the operator's administrator to raise the limit",
				ns, Count(use.Count), Count(l.NamespaceObjects), FlagNamespaceObjects)})
	}
	if over(use.Bytes, add.Bytes, l.NamespaceBytes) {
		out = append(out, Exceeded{Quota: NamespaceBytes, Use: use.Bytes, Add: add.Bytes, Limit: l.NamespaceBytes,
			Message: fmt.Sprintf("namespace %q holds %s of bind.unkin.net specs and may hold at most %s (the manager's --%s); this would add %s: make it smaller, delete other objects, or ask the operator's administrator to raise the limit",
				ns, Bytes(use.Bytes), Bytes(l.NamespaceBytes), FlagNamespaceBytes, Bytes(add.Bytes))})
	}
	return out
}

// Zone is what adding add to use, the use of BindZone zone, exceeds.
func (l Limits) Zone(zone types.NamespacedName, use, add Use) []Exceeded {
	var out []Exceeded
	if over(use.Count, add.Count, l.ZoneRecords) {
		more := ""
		if add.Count > 1 {
			more = fmt.Sprintf("; this would add %s", Count(add.Count))
		}
		out = append(out, Exceeded{Quota: ZoneRecords, Use: use.Count, Add: add.Count, Limit: l.ZoneRecords,
			Message: fmt.Sprintf("BindZone %s holds %s record sets (its spec.records and the DNSRecords it admits) and may hold at most %s (the manager's --%s)%s; delete some, or ask the operator's administrator to raise the limit",
				zone, Count(use.Count), Count(l.ZoneRecords), FlagZoneRecords, more)})
	}
	if over(use.Bytes, add.Bytes, l.ZoneBytes) {
		out = append(out, Exceeded{Quota: ZoneBytes, Use: use.Bytes, Add: add.Bytes, Limit: l.ZoneBytes,
			Message: fmt.Sprintf("BindZone %s holds %s of records (its spec.records and the DNSRecords it admits) and may hold at most %s (the manager's --%s); this would add %s: make it smaller, delete other records, or ask the operator's administrator to raise the limit",
				zone, Bytes(use.Bytes), Bytes(l.ZoneBytes), FlagZoneBytes, Bytes(add.Bytes))})
	}
	return out
}

// Count writes n with thousands separators: 20,000.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Bytes writes n for a person: 512 bytes, 1.5 KiB, 16 MiB.
func Bytes(n int64) string {
	unit := func(v float64, u string) string {
		return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + " " + u
	}
	switch a := max(n, -n); {
	case a < 1<<10:
		return Count(n) + " bytes"
	case a < 1<<20:
		return unit(float64(n)/(1<<10), "KiB")
	default:
		return unit(float64(n)/(1<<20), "MiB")
	}
}
