package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
)

// OwnersDir is where the agent keeps each zone's owners (one JSON file per
// zone and view), relative to the data directory: on named's volume, so a
// restarted agent keeps refusing UPDATEs to the owned record sets without
// waiting for the operator, and an emptied volume starts with none, like
// named's zones.
const OwnersDir = "agent/owners"

// owners is what the agent knows of the record sets the operator owns:
// per zone (and view), the keys whose UPDATEs it judges and the sets they
// may not touch. named asks about every record of such an UPDATE
// (ssu.go); the answer is a few map lookups per label of the record's
// name.
//
// Only what judging needs is in memory: keys and sets, not the sets'
// values. Those are stored for the operator alone, which reads them back
// rarely (once per agent when it starts: PathOwnersGet), so they are read
// back from the file then.
type owners struct {
	dir string

	// disk makes a zone's file and its entry in byName change together
	// (store, forget) and reads of the file (load) see one or the other,
	// never a file that memory has not caught up with. It is not mu:
	// judge must not wait for a disk.
	disk sync.Mutex

	mu     sync.RWMutex
	byName map[string][]*zoneOwners // zone name (canonical) → one per view
	// keyViews is, per update key, the views of the entries that list
	// it, each with the number of those entries: the signer's view is
	// where judge looks for the zone that decides. The webhook lets a
	// key serve one view only, so the inner map has one element but for
	// a moment while a key moves (then judge asks every view: see
	// there).
	keyViews map[string]map[string]int
}

// zoneOwners is one zone's (and view's) entry. A zone with no keys is a
// record kept for the operator: it grants nothing, and its sets are not
// kept in memory, but it still decides, by refusing, about the names it
// holds for a signer of its view (judge): a parent zone's key does not
// write into it.
type zoneOwners struct {
	view string
	keys map[string]bool
	sets map[ownedSet]bool
}

// maxStoredOwnersBytes bounds a zone's stored file, and so the reply that
// gives it back (writeJSON adds a newline): the client reads at most
// agent.MaxOwnersBytes of it. A request within agent.MaxOwnersBytes is
// nearly always within this once canonical: canonical names are never
// longer, but json.Marshal spells <, > and & as \u003c..., which a client
// other than agent.Client may have sent raw.
const maxStoredOwnersBytes = agent.MaxOwnersBytes - 1

type ownedSet struct{ name, typ string }

func openOwners(dataDir string) (*owners, error) {
	o := &owners{dir: filepath.Join(dataDir, OwnersDir), byName: map[string][]*zoneOwners{}, keyViews: map[string]map[string]int{}}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return nil, fmt.Errorf("owners: %w", err)
	}
	views, err := os.ReadDir(o.dir)
	if err != nil {
		return nil, fmt.Errorf("owners: %w", err)
	}
	for _, v := range views {
		if !v.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(o.dir, v.Name()))
		if err != nil {
			return nil, fmt.Errorf("owners: %w", err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f.Name(), ".json") {
				continue // a staged write a crash left behind
			}
			req, err := readOwnersFile(filepath.Join(o.dir, v.Name(), f.Name()))
			if err != nil {
				return nil, err
			}
			o.set(req)
		}
	}
	return o, nil
}

// readOwnersFile reads one zone's stored owners, validated and canonical.
// store never writes a file larger than maxStoredOwnersBytes; the read is
// bounded anyway, like every other input.
func readOwnersFile(p string) (agent.OwnersRequest, error) {
	f, err := os.Open(p)
	if err != nil {
		return agent.OwnersRequest{}, fmt.Errorf("owners: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStoredOwnersBytes+1))
	if err != nil {
		return agent.OwnersRequest{}, fmt.Errorf("owners: %w", err)
	}
	if len(b) > maxStoredOwnersBytes {
		return agent.OwnersRequest{}, fmt.Errorf("owners: %s is larger than %d bytes (remove it; the operator sends it again)", p, maxStoredOwnersBytes)
	}
	var req agent.OwnersRequest
	if err := json.Unmarshal(b, &req); err != nil {
		return agent.OwnersRequest{}, fmt.Errorf("owners: %s is not valid: %v (remove it; the operator sends it again)", p, err)
	}
	// %v, not %w: a stored file that fails validation is the agent's
	// problem (5xx), not the request's (validate.Error maps to 422).
	if req, err = validate.Owners(req); err != nil {
		return agent.OwnersRequest{}, fmt.Errorf("owners: %s: %v (remove it; the operator sends it again)", p, err)
	}
	return req, nil
}

// file is where a zone's owners are kept.
func (o *owners) file(ref agent.ZoneRef) string {
	view := ref.View
	if view == "" {
		view = "_default" // not a valid view name, so no view takes it
	}
	return filepath.Join(o.dir, view, ref.Zone+".json")
}

// set replaces a zone's owners in memory; req is validated.
func (o *owners) set(req agent.OwnersRequest) {
	z := &zoneOwners{view: req.View, keys: make(map[string]bool, len(req.UpdateKeys))}
	for _, k := range req.UpdateKeys {
		z.keys[k] = true
	}
	if len(z.keys) > 0 {
		// Without keys nothing is granted by the zone (see zoneOwners):
		// its sets would only take memory.
		z.sets = make(map[ownedSet]bool, len(req.Sets))
		for _, s := range req.Sets {
			z.sets[ownedSet{s.Name, s.Type}] = true
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	ref := agent.ZoneRef{View: req.View, Zone: req.Zone}
	others, old := o.othersLocked(ref)
	o.countKeysLocked(old, -1)
	o.countKeysLocked(z, +1)
	o.byName[req.Zone] = append(others, z)
}

// othersLocked is ref's zone name in the views other than ref's, and
// ref's own entry (nil when there is none).
func (o *owners) othersLocked(ref agent.ZoneRef) (others []*zoneOwners, own *zoneOwners) {
	for _, e := range o.byName[ref.Zone] {
		if e.view == ref.View {
			own = e
		} else {
			others = append(others, e)
		}
	}
	return others, own
}

// countKeysLocked adds d to keyViews for each key z lists (z may be nil).
func (o *owners) countKeysLocked(z *zoneOwners, d int) {
	if z == nil {
		return
	}
	for k := range z.keys {
		views := o.keyViews[k]
		if views == nil {
			views = map[string]int{}
			o.keyViews[k] = views
		}
		if views[z.view] += d; views[z.view] <= 0 {
			delete(views, z.view)
		}
		if len(views) == 0 {
			delete(o.keyViews, k)
		}
	}
}

// store keeps a zone's owners on disk, then in memory; req is validated.
func (o *owners) store(req agent.OwnersRequest) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(b) > maxStoredOwnersBytes {
		return &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("the owners of %s take %d bytes once canonical, more than the %d the agent gives back", target(agent.ZoneRef{View: req.View, Zone: req.Zone}), len(b), maxStoredOwnersBytes)}
	}
	p := o.file(agent.ZoneRef{View: req.View, Zone: req.Zone})
	o.disk.Lock()
	defer o.disk.Unlock()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("owners: %w", err)
	}
	if err := replaceFile(p, string(b)); err != nil {
		return fmt.Errorf("owners: %w", err)
	}
	o.set(req)
	return nil
}

// load reads back a zone's stored owners (canonical, values included);
// ok is false when none are stored. ref is canonical.
func (o *owners) load(ref agent.ZoneRef) (req agent.OwnersRequest, ok bool, err error) {
	p := o.file(ref)
	o.disk.Lock()
	defer o.disk.Unlock()
	if _, err := os.Stat(p); os.IsNotExist(err) {
		return req, false, nil
	}
	if req, err = readOwnersFile(p); err != nil {
		return req, false, err
	}
	if req.View != ref.View || req.Zone != ref.Zone {
		return agent.OwnersRequest{}, false, fmt.Errorf("owners: %s holds the owners of %s (remove it; the operator sends it again)", p, target(agent.ZoneRef{View: req.View, Zone: req.Zone}))
	}
	return req, true, nil
}

// list is every zone and view whose owners are stored, keys or not, in
// the order of agent.CompareZoneRefs. Memory has them all: openOwners
// loads every file, store and forget change file and memory together.
func (o *owners) list() []agent.ZoneRef {
	o.mu.RLock()
	refs := make([]agent.ZoneRef, 0, len(o.byName))
	for zone, entries := range o.byName {
		for _, z := range entries {
			refs = append(refs, agent.ZoneRef{View: z.view, Zone: zone})
		}
	}
	o.mu.RUnlock()
	slices.SortFunc(refs, agent.CompareZoneRefs)
	return refs
}

// forget drops a deleted zone's owners.
func (o *owners) forget(ref agent.ZoneRef) error {
	o.disk.Lock()
	defer o.disk.Unlock()
	o.mu.Lock()
	list, old := o.othersLocked(ref)
	o.countKeysLocked(old, -1)
	if len(list) == 0 {
		delete(o.byName, ref.Zone)
	} else {
		o.byName[ref.Zone] = list
	}
	o.mu.Unlock()
	if err := os.Remove(o.file(ref)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("owners: %w", err)
	}
	return nil
}

// verdict is the agent's answer about one record of an UPDATE.
type verdict int

const (
	grant       verdict = iota
	unknownZone         // no zone of the signer's view holds the name
	owned               // the record set is the operator's
	foreignZone         // the name is in a zone of the signer's view that does not list the signer
)

// judge decides about one record of an UPDATE signed by signer (key names
// and record names as named formats them: no trailing dot, any case) and
// says which zone decided.
//
// named does not say which zone the UPDATE is for, so the name and the
// signer must. Update keys serve one view each (the webhook refuses
// sharing), so the signer tells the view: that of the entries that list
// it. In that view, the deepest zone that holds the name decides, as it
// is the zone named serves the name from: it grants when it lists the
// signer among its update keys and the set is not one the operator owns
// (owned), and refuses otherwise (foreignZone). So a zone's key writes
// that zone only: not a child zone with keys of its own, nor one stored
// with none (a record kept for the operator; TestParentKeyStaysOutOfChildZones
// in test/agent), while a child zone in another view does not shield its
// parent's names. A signer no entry lists, or a name no zone of its view
// holds, is refused (unknownZone).
//
// Should a key be listed in several views for a moment (moved from one
// view to another), every such view is asked and any refusal wins:
// fail closed, and the same answer whatever order the map gives.
//
// It runs for every record of every such UPDATE: it allocates nothing
// for a lowercase signer, name and uppercase type (BenchmarkJudge), and
// costs a map lookup per label of the name and view of the signer.
func (o *owners) judge(signer, name, typ string) (verdict, string) {
	signer = strings.ToLower(strings.TrimSuffix(signer, "."))
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	typ = strings.ToUpper(typ)
	if signer == "" {
		return unknownZone, ""
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	v, at := unknownZone, ""
	for view := range o.keyViews[signer] {
		w, zone := o.judgeInViewLocked(view, signer, name, typ)
		if w != unknownZone && (v == unknownZone || stricter(w, zone, v, at)) {
			v, at = w, zone
		}
	}
	return v, at
}

// judgeInViewLocked is the verdict of the deepest zone of view that holds
// name, unknownZone when none does.
func (o *owners) judgeInViewLocked(view, signer, name, typ string) (verdict, string) {
	for zone := name; ; {
		for _, z := range o.byName[zone] {
			if z.view != view {
				continue
			}
			switch {
			case !z.keys[signer]:
				return foreignZone, zone
			case z.sets[ownedSet{name, typ}]:
				return owned, zone
			}
			return grant, zone
		}
		_, rest, ok := strings.Cut(zone, ".")
		if !ok {
			return unknownZone, ""
		}
		zone = rest
	}
}

// stricter reports whether verdict v (by zone) should replace w (by
// wz) when several views judge: a refusal over a grant, then a total
// order so the answer does not depend on map order.
func stricter(v verdict, zone string, w verdict, wz string) bool {
	if (v == grant) != (w == grant) {
		return w == grant
	}
	if v != w {
		return v > w
	}
	return zone < wz
}

func (a *Agent) handleOwners(w http.ResponseWriter, r *http.Request) error {
	var req agent.OwnersRequest
	if err := decode(w, r, agent.MaxOwnersBytes, &req); err != nil {
		return err
	}
	req, err := validate.Owners(req)
	if err != nil {
		return err
	}
	if err := a.owners.store(req); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, agent.OwnersResult{View: req.View, Zone: req.Zone, Sets: len(req.Sets)})
	return nil
}

// emptyBodyBytes bounds a body that must be `{}`.
const emptyBodyBytes = 64

// handleOwnersList answers PathOwnersList: the zones whose owners are
// stored. The body is `{}`, like every other request a JSON object.
func (a *Agent) handleOwnersList(w http.ResponseWriter, r *http.Request) error {
	var req struct{}
	if err := decode(w, r, emptyBodyBytes, &req); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, agent.StoredOwners{Zones: a.owners.list()})
	return nil
}

// handleOwnersGet answers PathOwnersGet: a zone's stored owners, read back
// from its file (values are not kept in memory), or 404 when none are.
func (a *Agent) handleOwnersGet(w http.ResponseWriter, r *http.Request) error {
	var req agent.ZoneRef
	if err := decode(w, r, agent.MaxRequestBytes, &req); err != nil {
		return err
	}
	ref, err := validate.Ref(req)
	if err != nil {
		return err
	}
	stored, ok, err := a.owners.load(ref)
	if err != nil {
		return err
	}
	if !ok {
		return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf("no owners stored for zone %s", target(ref))}
	}
	writeJSON(w, http.StatusOK, stored)
	return nil
}
