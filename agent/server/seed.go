package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
)

// A large zone starts from a zone file the operator keeps in ConfigMaps
// (BindZone spec.seedFrom) instead of the small seed an ensure carries.
// The operator asks whether the primary's zone file is missing
// (PathSeedNeeded, a stat), and only then reads the ConfigMaps and streams
// the file (PathSeed). The agent stages it beside its place while hashing
// it, checks it (validate.Seed), and links it into place only if the file
// is still missing: a zone file that holds dynamic updates is never
// replaced. The next ensure finds the file and loads it.

func (a *Agent) handleSeedNeeded(_ context.Context, w http.ResponseWriter, ref agent.ZoneRef) error {
	_, err := os.Lstat(a.cfg.Paths.PrimaryZoneFile(ref.View, ref.Zone))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	writeJSON(w, http.StatusOK, agent.SeedNeeded{Needed: err != nil})
	return nil
}

func (a *Agent) handleSeed(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ref, err := checkRef(agent.ZoneRef{View: q.Get(agent.SeedQueryView), Zone: q.Get(agent.SeedQueryZone)})
	if err != nil {
		return err
	}
	want := q.Get(agent.SeedQuerySHA256)
	if err := validate.SHA256Hex(want); err != nil {
		return err
	}
	path := a.cfg.Paths.PrimaryZoneFile(ref.View, ref.Zone)
	tmp, err := a.stageSeed(w, r, path, want)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	st, err := validate.Seed(ref.Zone, f)
	_ = f.Close()
	if err != nil {
		return err
	}
	// Under opMu no ensure adds the zone from a small seed between the
	// look and the link.
	a.opMu.Lock()
	defer a.opMu.Unlock()
	res := agent.SeedResult{Records: st.Records, Serial: st.Serial}
	if err := os.Link(tmp, path); errors.Is(err, os.ErrExist) {
		res.Reason = "the zone file exists; it is kept"
	} else if err != nil {
		return fmt.Errorf("seed: %w", err)
	} else {
		res.Written = true
		if err := a.markSeeded(ref); err != nil {
			_ = os.Remove(path)
			return fmt.Errorf("seed: %w", err)
		}
		a.log.Info("zone seed written", "view", ref.View, "zone", ref.Zone, "records", st.Records, "serial", st.Serial)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// stageSeed streams the request body, at most agent.MaxSeedFileBytes,
// into a staged file beside path (stageFile), checks its digest and
// flushes it to the volume, since it is linked into place once and never
// written again. It returns the staged file's name; the caller removes it.
func (a *Agent) stageSeed(w http.ResponseWriter, r *http.Request, path, want string) (string, error) {
	h := sha256.New()
	tmp, err := stageFile(path, io.TeeReader(http.MaxBytesReader(w, r.Body, agent.MaxSeedFileBytes), h))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return "", &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("zone file larger than %d bytes", agent.MaxSeedFileBytes)}
	case err != nil:
		return "", fmt.Errorf("seed: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		_ = os.Remove(tmp)
		return "", &validate.Error{Field: "sha256", Reason: fmt.Sprintf("the zone file's SHA-256 is %s, not %s: it changed or was cut on the way", got, want)}
	}
	if err := syncFile(tmp); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("seed: %w", err)
	}
	return tmp, nil
}

func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// A seed the agent wrote is marked by a file beside it (seedMarker), on
// the volume, until the zone's first successful ensure records the zone
// as seeded: so a delete cleans the file up as it does for small seeds,
// and a file named refused to load is removed rather than kept for ever
// (it would be found again by every later ensure of that zone name,
// whatever seed its next BindZone names). Called under opMu.

func seedMarker(zoneFile string) string { return zoneFile + ".seeded" }

func (a *Agent) markSeeded(ref agent.ZoneRef) error {
	f, err := os.OpenFile(seedMarker(a.cfg.Paths.PrimaryZoneFile(ref.View, ref.Zone)), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// takeSeeded reports whether a mark is there, and removes it.
func (a *Agent) takeSeeded(ref agent.ZoneRef) bool {
	err := os.Remove(seedMarker(a.cfg.Paths.PrimaryZoneFile(ref.View, ref.Zone)))
	return err == nil
}

// dropSeed removes a marked seed and its mark: named refused to load it,
// or the zone was deleted before it was ever added. It reports whether it
// did.
func (a *Agent) dropSeed(ref agent.ZoneRef) bool {
	if !a.takeSeeded(ref) {
		return false
	}
	path := a.cfg.Paths.PrimaryZoneFile(ref.View, ref.Zone)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		a.log.Warn("removing a seed named did not load", "view", ref.View, "zone", ref.Zone, "err", err.Error())
		return false
	}
	a.log.Info("zone seed removed", "view", ref.View, "zone", ref.Zone)
	return true
}
