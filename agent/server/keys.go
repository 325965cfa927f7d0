package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
)

// A signed zone's keys live in named's key-directory on the pod's volume.
// The operator keeps a copy in a Secret (PathKeysGet) and puts it back
// onto a volume that lost it before the zone is added again
// (PathKeysRestore), so named signs with the keys whose DS the parent
// publishes instead of making new ones.

func (a *Agent) handleKeysGet(ctx context.Context, w http.ResponseWriter, ref agent.ZoneRef) error {
	keys, err := a.readKeys(ref.Zone)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keys)
	return nil
}

func (a *Agent) handleKeysRestore(w http.ResponseWriter, r *http.Request) error {
	var req agent.ZoneKeys
	if err := decode(w, r, agent.MaxKeysBytes, &req); err != nil {
		return err
	}
	keys, err := validate.Keys(req)
	if err != nil {
		return err
	}
	if len(keys.Files) == 0 {
		return &validate.Error{Field: "files", Reason: "is empty: there is nothing to restore"}
	}
	ctx, cancel := context.WithTimeout(r.Context(), singleTimeout)
	defer cancel()
	// Under opMu, no ensure adds the zone between the look at named and
	// the writes: named never loads the zone half way through them.
	a.opMu.Lock()
	defer a.opMu.Unlock()
	res, err := a.restoreKeys(ctx, keys)
	if err != nil {
		return err
	}
	if res.Restored {
		// Names and counts only: the files hold private keys.
		a.log.Info("zone keys restored", "zone", keys.Zone, "files", len(keys.Files))
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// restoreKeys writes keys into the key-directory while named does not
// serve the zone (in any view) and the directory holds no key file of it.
// Keys named made, or signs with, are never replaced or joined by others.
func (a *Agent) restoreKeys(ctx context.Context, keys agent.ZoneKeys) (agent.KeysRestoreResult, error) {
	st, err := a.zoneStatus(ctx, a.api, agent.ZoneRef{Zone: keys.Zone})
	if err != nil {
		return agent.KeysRestoreResult{}, err
	}
	if st.Exists {
		return agent.KeysRestoreResult{Reason: "named serves the zone already, with the keys it has"}, nil
	}
	if a.store.hasZone(keys.Zone) {
		return agent.KeysRestoreResult{Reason: "the zone is added in a view already, with the keys it has"}, nil
	}
	have, err := a.keyFileNames(keys.Zone)
	if err != nil {
		return agent.KeysRestoreResult{}, err
	}
	if len(have) > 0 {
		return agent.KeysRestoreResult{Reason: fmt.Sprintf("the key-directory holds %d key file(s) of the zone already", len(have))}, nil
	}
	dir := a.cfg.Paths.DNSSECKeysDir()
	for _, f := range keys.Files {
		if err := writeKeyFile(filepath.Join(dir, validate.KeyFileName(keys.Zone, f)), f); err != nil {
			return agent.KeysRestoreResult{}, err
		}
	}
	return agent.KeysRestoreResult{Restored: true}, nil
}

// writeKeyFile creates one key file (never over an existing one) with
// named's modes: a private key readable by the volume's group only.
func writeKeyFile(path string, f agent.KeyFile) error {
	tmp, err := stageFile(path, strings.NewReader(f.Data))
	if err != nil {
		return fmt.Errorf("key file %s: %w", validate.KeyFileLabel(f), err)
	}
	defer os.Remove(tmp)
	if f.Kind == agent.KeyFilePrivate {
		if err := os.Chmod(tmp, 0o640); err != nil {
			return fmt.Errorf("key file %s: %w", validate.KeyFileLabel(f), err)
		}
	}
	if err := os.Link(tmp, path); err != nil {
		return fmt.Errorf("key file %s: %w", validate.KeyFileLabel(f), err)
	}
	return nil
}

// keyFileNames lists the key-directory's files of zone, as named names
// them. A missing directory holds none.
func (a *Agent) keyFileNames(zone string) (map[string]agent.KeyFile, error) {
	entries, err := os.ReadDir(a.cfg.Paths.DNSSECKeysDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("key-directory: %w", err)
	}
	out := map[string]agent.KeyFile{}
	prefix := "K" + zone + ".+"
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if f, ok := validate.ParseKeyFileName(zone, e.Name()); ok {
			out[e.Name()] = f
		}
	}
	return out, nil
}

// readKeys reads the zone's key files, checked as the operator checks
// them. Regular files only, each bounded.
func (a *Agent) readKeys(zone string) (agent.ZoneKeys, error) {
	names, err := a.keyFileNames(zone)
	if err != nil {
		return agent.ZoneKeys{}, err
	}
	if len(names) > agent.MaxKeyFiles {
		return agent.ZoneKeys{}, fmt.Errorf("the key-directory holds %d key files of zone %s, more than %d", len(names), zone, agent.MaxKeyFiles)
	}
	out := agent.ZoneKeys{Zone: zone, Files: []agent.KeyFile{}}
	for name, f := range names {
		data, err := readBounded(filepath.Join(a.cfg.Paths.DNSSECKeysDir(), name), agent.MaxKeyFileBytes)
		if err != nil {
			return agent.ZoneKeys{}, fmt.Errorf("key file %s: %w", validate.KeyFileLabel(f), err)
		}
		f.Data = data
		out.Files = append(out.Files, f)
	}
	keys, err := validate.Keys(out)
	if err != nil {
		// Not the request's fault: what named keeps does not pass.
		return agent.ZoneKeys{}, fmt.Errorf("the key files of zone %s: %w", zone, err)
	}
	return keys, nil
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int) (string, error) {
	if info, err := os.Lstat(path); err != nil {
		return "", err
	} else if !info.Mode().IsRegular() {
		return "", errors.New("is not a regular file")
	}
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", errors.New("is not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(fh, int64(limit)+1))
	if err != nil {
		return "", err
	}
	if len(b) > limit {
		return "", fmt.Errorf("is larger than %d bytes", limit)
	}
	return string(b), nil
}
