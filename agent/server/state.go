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
//
// Changes are appended to JournalFile (one JSON line per zone, fsynced per
// request) so a single ensure costs O(1) however many zones exist; the
// journal is folded into StateFile when it grows past the zone count.
const (
	StateFile   = "agent/zones.json"
	JournalFile = "agent/zones.journal"
)

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
	// SigningSettled: named signs the zone in place and the agent has
	// seen it secure and asked for a full signing (settleSigning). Until
	// it is set, every ensure settles the signing again, so a control
	// session that broke between addzone and the signing, or a zone
	// added by an agent from before this field, is signed in full on the
	// next ensure or resync.
	SigningSettled bool `json:"signingSettled,omitempty"`
}

// required reports whether readiness waits for the zone: primaries always
// (their file is local), other zones once they have loaded before.
func (z zoneState) required() bool { return z.Type == "primary" || z.Loaded }

type stateFile struct {
	Version int         `json:"version"`
	Zones   []zoneState `json:"zones"`
}

// journalEntry is one line of the journal: a zone's new state, or its
// removal.
type journalEntry struct {
	Set *zoneState     `json:"set,omitempty"`
	Del *agent.ZoneRef `json:"del,omitempty"`
}

// store is the expected-zone list, persisted on every change.
type store struct {
	path, journalPath string
	mu                sync.Mutex
	zones             map[agent.ZoneRef]zoneState
	journal           *os.File
	journalLines      int
}

func openStore(dataDir string) (*store, error) {
	s := &store{
		path:        filepath.Join(dataDir, StateFile),
		journalPath: filepath.Join(dataDir, JournalFile),
		zones:       map[agent.ZoneRef]zoneState{},
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	b, err := os.ReadFile(s.path)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return nil, fmt.Errorf("state: %w", err)
	default:
		var f stateFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("state: %s is not valid: %w (move it away to start with an empty list)", s.path, err)
		}
		for _, z := range f.Zones {
			s.zones[agent.ZoneRef{View: z.View, Zone: z.Zone}] = z
		}
	}
	// Replay the journal. A line that does not decode is a write torn by
	// a crash: it and anything after it never completed.
	if b, err := os.ReadFile(s.journalPath); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			var e journalEntry
			if line == "" || json.Unmarshal([]byte(line), &e) != nil {
				break
			}
			switch {
			case e.Set != nil:
				s.zones[agent.ZoneRef{View: e.Set.View, Zone: e.Set.Zone}] = *e.Set
			case e.Del != nil:
				delete(s.zones, *e.Del)
			}
		}
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("state: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.compactLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *store) get(ref agent.ZoneRef) (zoneState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[ref]
	return z, ok
}

// hasZone reports whether zone is expected in any view, without copying
// the store.
func (s *store) hasZone(zone string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ref := range s.zones {
		if ref.Zone == zone {
			return true
		}
	}
	return false
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

// update applies fn to the map under the store's lock; fn returns the
// zones it changed (set or deleted), which are journalled and fsynced
// before update returns.
func (s *store) update(fn func(m map[agent.ZoneRef]zoneState) []agent.ZoneRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := fn(s.zones)
	if len(changed) == 0 {
		return nil
	}
	var buf []byte
	for _, ref := range changed {
		var e journalEntry
		if z, ok := s.zones[ref]; ok {
			e.Set = &z
		} else {
			e.Del = &ref
		}
		line, err := json.Marshal(e)
		if err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
	}
	if _, err := s.journal.Write(buf); err != nil {
		return fmt.Errorf("state: journal: %w", err)
	}
	if err := s.journal.Sync(); err != nil {
		return fmt.Errorf("state: journal: %w", err)
	}
	s.journalLines += len(changed)
	if s.journalLines > len(s.zones)+1024 {
		return s.compactLocked()
	}
	return nil
}

// compactLocked writes the whole list to StateFile (temp file, fsync,
// rename; sorted, so the file is deterministic) and starts an empty
// journal. A crash between the two replays the old journal onto the new
// snapshot, which is harmless: entries are whole states.
func (s *store) compactLocked() error {
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
	if s.journal != nil {
		_ = s.journal.Close()
	}
	s.journal, err = os.OpenFile(s.journalPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("state: journal: %w", err)
	}
	s.journalLines = 0
	return nil
}

func (s *store) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal != nil {
		_ = s.journal.Close()
		s.journal = nil
	}
}
