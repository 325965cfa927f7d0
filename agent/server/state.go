package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"git.unkin.net/unkin/bind-operator/agent"
)

// StateFile is where the agent keeps its list of expected zones, relative
// to the data directory. It lives on named's data volume, next to the zone
// files and the .nzd database, so it survives exactly as long as the zones
// do: a restarted agent (or a restarted pod with persistent storage) knows
// which zones must be loaded before the pod is ready, and an emptied volume
// starts with an empty list, matching an empty named.
const StateFile = "agent/zones.json"

// zoneState is what the agent remembers about an ensured zone.
type zoneState struct {
	View string `json:"view,omitempty"`
	Zone string `json:"zone"`
	Type string `json:"type"`
	// Seeded: the agent wrote the zone file, so delete cleans it up.
	Seeded bool `json:"seeded,omitempty"`
	// Loaded: named has loaded the zone at least once. A secondary that
	// never transferred does not hold readiness back (its primary may be
	// down; making every secondary unready would turn that into an outage).
	Loaded bool `json:"loaded,omitempty"`
}

// required reports whether readiness waits for the zone: primaries always
// (their file is local), other zones once they have loaded before.
func (z zoneState) required() bool { return z.Type == "primary" || z.Loaded }

type stateFile struct {
	Version int         `json:"version"`
	Zones   []zoneState `json:"zones"`
}

// store is the expected-zone list, persisted on every change.
type store struct {
	path  string
	mu    sync.Mutex
	zones map[agent.ZoneRef]zoneState
}

func openStore(dataDir string) (*store, error) {
	s := &store{path: filepath.Join(dataDir, StateFile), zones: map[agent.ZoneRef]zoneState{}}
	b, err := os.ReadFile(s.path)
	if os.IsNotExist(err) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("state: %s is not valid: %w (move it away to start with an empty list)", s.path, err)
	}
	for _, z := range f.Zones {
		s.zones[agent.ZoneRef{View: z.View, Zone: z.Zone}] = z
	}
	return s, nil
}

func (s *store) get(ref agent.ZoneRef) (zoneState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[ref]
	return z, ok
}

func (s *store) snapshot() []zoneState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]zoneState, 0, len(s.zones))
	for _, z := range s.zones {
		out = append(out, z)
	}
	return out
}

func (s *store) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.zones)
}

// update applies fn to the map and persists it when fn reports a change.
func (s *store) update(fn func(m map[agent.ZoneRef]zoneState) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !fn(s.zones) {
		return nil
	}
	return s.saveLocked()
}

// saveLocked writes the list atomically (temp file, fsync, rename), sorted
// so the file is deterministic.
func (s *store) saveLocked() error {
	f := stateFile{Version: 1, Zones: make([]zoneState, 0, len(s.zones))}
	for _, z := range s.zones {
		f.Zones = append(f.Zones, z)
	}
	slices.SortFunc(f.Zones, func(a, b zoneState) int {
		if c := strings.Compare(a.View, b.View); c != 0 {
			return c
		}
		return strings.Compare(a.Zone, b.Zone)
	})
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".zones-*.json")
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}
