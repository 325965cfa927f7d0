package localcluster

import (
	"encoding/json"
	"errors"
	"os"
	"sync"
)

// state is the journal of what a running cluster changed on the host,
// written before each change, so that Stop — or the next Start after a
// crash, even a SIGKILL — can undo exactly that and nothing else.
type state struct {
	mu sync.Mutex `json:"-"`

	WorkDir     string `json:"workDir"`
	KeepWorkDir bool   `json:"keepWorkDir"`
	// Processes the harness started, with their start time (field 22 of
	// /proc/PID/stat) so a recycled PID is never killed.
	Processes []process `json:"processes"`
	// Sysctls holds the value each changed sysctl had before.
	Sysctls map[string]string `json:"sysctls"`
	// NftTables lists the nftables tables present before the cluster
	// started; the sweep removes the ones that appeared since (kube-proxy's,
	// the kubelet's, ours). Never omitted: an empty list means "there were
	// none", a missing one would mean "unknown".
	NftTables []string `json:"nftTables"`
	// Paths the kubelet or containerd create at fixed places; removed
	// only when they did not exist before.
	Paths []string `json:"paths"`
}

type process struct {
	Name  string `json:"name"`
	PID   int    `json:"pid"`
	Start string `json:"start"`
}

func (s *state) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, statePath)
}

func (s *state) update(f func(*state)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
	return s.save()
}

// loadState reads the journal of a previous run (nil when there is none).
func loadState() (*state, error) {
	b, err := os.ReadFile(statePath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := &state{}
	if err := json.Unmarshal(b, s); err != nil {
		// A torn write: nothing can be trusted but the fixed names.
		return &state{}, nil
	}
	return s, nil
}
