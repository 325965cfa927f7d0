package server

import (
	"encoding/json"
	"fmt"
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
// (ssu.go); the answer is a map lookup per label of the record's name.
type owners struct {
	dir string

	mu     sync.RWMutex
	byName map[string][]*zoneOwners // zone name (canonical) → one per view
}

type zoneOwners struct {
	view string
	keys map[string]bool
	sets map[ownedSet]bool
}

type ownedSet struct{ name, typ string }

func openOwners(dataDir string) (*owners, error) {
	o := &owners{dir: filepath.Join(dataDir, OwnersDir), byName: map[string][]*zoneOwners{}}
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
			p := filepath.Join(o.dir, v.Name(), f.Name())
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("owners: %w", err)
			}
			var req agent.OwnersRequest
			if err := json.Unmarshal(b, &req); err != nil {
				return nil, fmt.Errorf("owners: %s is not valid: %w (remove it; the operator sends it again)", p, err)
			}
			if req, err = validate.Owners(req); err != nil {
				return nil, fmt.Errorf("owners: %s: %w (remove it; the operator sends it again)", p, err)
			}
			o.set(req)
		}
	}
	return o, nil
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
	z := &zoneOwners{view: req.View, keys: make(map[string]bool, len(req.UpdateKeys)), sets: make(map[ownedSet]bool, len(req.Sets))}
	for _, k := range req.UpdateKeys {
		z.keys[k] = true
	}
	for _, s := range req.Sets {
		z.sets[ownedSet{s.Name, s.Type}] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.byName[req.Zone] = append(o.othersLocked(agent.ZoneRef{View: req.View, Zone: req.Zone}), z)
}

// othersLocked is ref's zone name in the views other than ref's.
func (o *owners) othersLocked(ref agent.ZoneRef) []*zoneOwners {
	return slices.DeleteFunc(slices.Clone(o.byName[ref.Zone]), func(e *zoneOwners) bool { return e.view == ref.View })
}

// store keeps a zone's owners on disk, then in memory.
func (o *owners) store(req agent.OwnersRequest) error {
	p := o.file(agent.ZoneRef{View: req.View, Zone: req.Zone})
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("owners: %w", err)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if err := replaceFile(p, string(b)); err != nil {
		return fmt.Errorf("owners: %w", err)
	}
	o.set(req)
	return nil
}

// forget drops a deleted zone's owners.
func (o *owners) forget(ref agent.ZoneRef) error {
	o.mu.Lock()
	list := o.othersLocked(ref)
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
	unknownZone         // no zone the signer may update holds the name
	owned               // the record set is the operator's
)

// judge decides about one record of an UPDATE signed by signer (key names
// and record names as named formats them: no trailing dot, any case): the
// closest enclosing zone that names signer among its update keys decides.
// Update keys serve one view each (the webhook refuses sharing), so the
// signer also tells the view.
func (o *owners) judge(signer, name, typ string) (verdict, string) {
	signer = strings.ToLower(strings.TrimSuffix(signer, "."))
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	typ = strings.ToUpper(typ)
	if signer == "" {
		return unknownZone, ""
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	for zone := name; ; {
		for _, z := range o.byName[zone] {
			if z.keys[signer] {
				if z.sets[ownedSet{name, typ}] {
					return owned, zone
				}
				return grant, zone
			}
		}
		_, rest, ok := strings.Cut(zone, ".")
		if !ok {
			return unknownZone, ""
		}
		zone = rest
	}
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
