// Package recordindex holds the two indexes of DNSRecords in a manager's
// cache, each added once and shared by whoever reads it:
//
//   - ByZoneName, the DNSRecords of a zone at one name, in every
//     namespace: the webhooks' CNAME rule across DNSRecords, and the
//     DNSRecord controller's claim (the older of two records of one name
//     and type owns the set) and its rivals. Each rule used to keep its own
//     index, one map per DNSRecord each: at 10,000 DNSRecords the two cost
//     the manager about 8 MiB of heap, half of it duplicated;
//   - ByZone, all the DNSRecords of a zone: the owners the agent guards,
//     and the records a zone's change re-checks.
//
// They are cacheindex indexes: read without a copy of each record, and
// each value kept once (a controller-runtime field index keeps it for the
// namespace and for all namespaces).
package recordindex

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/cacheindex"
)

// Index is an index of DNSRecords; what Get returns is the cache's own,
// to be read, never changed.
type Index = cacheindex.Index[*v1alpha1.DNSRecord]

const (
	// ByZoneName indexes DNSRecords by Key (zone and owner name).
	ByZoneName = "bind.unkin.net/zone+name"
	// ByZone indexes DNSRecords by Zone (their BindZone).
	ByZone = "bind.unkin.net/zone"
)

// Key is the ByZoneName value of owner name in the BindZone zone: the
// zone's namespace and object name and the name case-folded, without a
// trailing dot. Names are stored relative to the zone whenever the zone
// existed when the record was admitted.
func Key(zone types.NamespacedName, name string) string {
	return zone.String() + "/" + strings.ToLower(strings.TrimSuffix(name, "."))
}

// Of is r's ByZoneName value.
func Of(r *v1alpha1.DNSRecord) string { return Key(r.ZoneKey(), string(r.Spec.Name)) }

// Zone is the ByZone value of the BindZone zone: "namespace/name", what
// DNSRecord.ZoneKey says.
func Zone(zone types.NamespacedName) string { return zone.String() }

// keys are each index's values of a DNSRecord.
var keys = map[string]func(*v1alpha1.DNSRecord) []string{
	ByZoneName: func(r *v1alpha1.DNSRecord) []string { return []string{Of(r)} },
	ByZone:     func(r *v1alpha1.DNSRecord) []string { return []string{Zone(r.ZoneKey())} },
}

// added remembers the indexes of each cache: the webhooks and the
// controllers ask for them, in one manager or apart, and an informer
// takes an index name once.
var added = struct {
	sync.Mutex
	of map[addedKey]*Index
}{of: map[addedKey]*Index{}}

type addedKey struct {
	cache cache.Cache
	name  string
}

// Names is c's ByZoneName index, added on first use.
func Names(ctx context.Context, c cache.Cache) (*Index, error) { return get(ctx, c, ByZoneName) }

// Zones is c's ByZone index, added on first use.
func Zones(ctx context.Context, c cache.Cache) (*Index, error) { return get(ctx, c, ByZone) }

func get(ctx context.Context, c cache.Cache, name string) (*Index, error) {
	added.Lock()
	defer added.Unlock()
	k := addedKey{cache: c, name: name}
	if idx := added.of[k]; idx != nil {
		return idx, nil
	}
	idx, err := cacheindex.Add(ctx, c, &v1alpha1.DNSRecord{}, func() client.ObjectList { return &v1alpha1.DNSRecordList{} }, name, keys[name])
	if err != nil {
		return nil, err
	}
	added.of[k] = idx
	return idx, nil
}

// OnInformer adds the index name (ByZoneName or ByZone) to an informer of
// DNSRecords that is not a manager's (a controller's tests).
func OnInformer(shared cacheindex.SharedIndexInformer, name string) (*Index, error) {
	if keys[name] == nil {
		return nil, fmt.Errorf("recordindex: no index %q; use ByZoneName or ByZone", name)
	}
	return cacheindex.OnInformer(shared, name, keys[name])
}
