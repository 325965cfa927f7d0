package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	"git.unkin.net/unkin/bind-operator/rndc"
)

// ensureOp is an EnsureZoneRequest after validation.
type ensureOp struct {
	ref      agent.ZoneRef
	clause   *validate.Clause
	seed     string
	seedPath string // "" without a seed
}

// checkEnsure validates one request without touching anything.
func (a *Agent) checkEnsure(r agent.EnsureZoneRequest) (ensureOp, error) {
	ref, err := checkRef(agent.ZoneRef{View: r.View, Zone: r.Zone})
	if err != nil {
		return ensureOp{}, err
	}
	c, err := validate.ParseClause(r.Clause, a.cfg.Paths.DataDir)
	if err != nil {
		return ensureOp{}, err
	}
	op := ensureOp{ref: ref, clause: c}
	if r.Seed != "" {
		if len(r.Seed) > agent.MaxSeedBytes {
			return ensureOp{}, &validate.Error{Field: "seed", Reason: fmt.Sprintf("is %d bytes long, the limit is %d", len(r.Seed), agent.MaxSeedBytes)}
		}
		if strings.IndexByte(r.Seed, 0) >= 0 {
			return ensureOp{}, &validate.Error{Field: "seed", Reason: "contains a NUL byte"}
		}
		if c.Type != "primary" {
			return ensureOp{}, &validate.Error{Field: "seed", Reason: "only a primary zone has a seed file"}
		}
		op.seed = r.Seed
		op.seedPath = a.cfg.Paths.PrimaryZoneFile(ref.View, ref.Zone)
		if c.File != op.seedPath {
			return ensureOp{}, &validate.Error{Field: "clause", Reason: fmt.Sprintf("file must be %q, where the seed is written", op.seedPath)}
		}
	}
	return op, nil
}

func checkRef(ref agent.ZoneRef) (agent.ZoneRef, error) {
	zone, err := validate.ZoneName(ref.Zone)
	if err != nil {
		return ref, err
	}
	if err := validate.ViewName(ref.View); err != nil {
		return ref, err
	}
	return agent.ZoneRef{View: ref.View, Zone: zone}, nil
}

// target is the zone part of an rndc command: `zone [IN view]`. Names were
// validated, so they need no quoting.
func target(ref agent.ZoneRef) string {
	if ref.View == "" {
		return ref.Zone
	}
	return ref.Zone + " IN " + ref.View
}

// ensure applies one validated request:
//
//  1. write the seed if the file is missing (never overwrite);
//  2. addzone; on "already exists", showzone and compare clauses;
//  3. modzone only when they differ;
//  4. for a zone that named signs in place and whose signing has not
//     settled yet (new, newly signed, or not recorded as settled), wait
//     for its initial signing (settleSigning).
//
// The caller records the result in the store.
func (a *Agent) ensure(ctx context.Context, op ensureOp) (applied, error) {
	wrote, err := prepare(op)
	if err != nil {
		return applied{EnsureZoneResult: agent.EnsureZoneResult{View: op.ref.View, Zone: op.ref.Zone}}, err
	}
	return a.apply(ctx, op, wrote)
}

// applied is the outcome of apply: the result the client sees, and what
// the store remembers beyond it.
type applied struct {
	agent.EnsureZoneResult
	// signingSettled: the zone signs in place and settleSigning has
	// succeeded for it, now or in an earlier ensure.
	signingSettled bool
}

// prepare is the file-system half of an ensure: the seed of a primary, or
// the directory of a secondary's file (named does not create directories).
// It reports whether it wrote the seed.
func prepare(op ensureOp) (bool, error) {
	if op.seedPath != "" {
		return writeIfMissing(op.seedPath, op.seed)
	}
	if op.clause.File != "" {
		if err := os.MkdirAll(filepath.Dir(op.clause.File), 0o755); err != nil {
			return false, fmt.Errorf("zone directory: %w", err)
		}
	}
	return false, nil
}

// apply is the control-channel half of an ensure, after prepare.
func (a *Agent) apply(ctx context.Context, op ensureOp, seedWritten bool) (applied, error) {
	res := applied{EnsureZoneResult: agent.EnsureZoneResult{View: op.ref.View, Zone: op.ref.Zone, SeedWritten: seedWritten}}
	// settle runs settleSigning for a zone that signs in place and records
	// whether it succeeded.
	settle := func() error {
		err := a.settleSigning(ctx, op.ref)
		res.signingSettled = err == nil
		return err
	}
	_, err := a.api.command(ctx, "addzone "+target(op.ref)+" "+op.clause.Text)
	if err == nil {
		res.Action = agent.ActionAdded
		if op.clause.SignsInPlace {
			err = settle()
		}
		return res, err
	}
	if !isCommandErr(err, "already exists") {
		var ce *rndc.CommandError
		if errors.As(err, &ce) && op.clause.Type == "primary" {
			// The file named refused goes: the next seed is loaded.
			a.dropSeed(op.ref)
		}
		return res, err
	}
	shown, err := a.api.command(ctx, "showzone "+target(op.ref))
	if err != nil {
		return res, err
	}
	// A zone named already has and that was signing before this ensure
	// needs settling only if that never completed (see
	// zoneState.SigningSettled).
	before, _ := a.store.get(op.ref)
	cur, perr := validate.ParseShowzone(shown.Text)
	settled := before.SigningSettled && perr == nil && cur.SignsInPlace
	if perr == nil && cur.Equal(op.clause) {
		res.Action = agent.ActionUnchanged
		res.signingSettled = settled
		if op.clause.SignsInPlace && !settled {
			err = settle()
		}
		return res, err
	}
	// A clause named shows but we cannot parse counts as different:
	// modzone converges it to the requested one.
	if _, err := a.api.command(ctx, "modzone "+target(op.ref)+" "+op.clause.Text); err != nil {
		return res, err
	}
	res.Action = agent.ActionModified
	res.signingSettled = settled && op.clause.SignsInPlace
	// A zone that starts being signed is at the same moment as a new one.
	if op.clause.SignsInPlace && !settled {
		err = settle()
	}
	return res, err
}

// prepared is the outcome of prepare for one batch entry.
type prepared struct {
	wrote bool
	err   error
}

// prepareAhead runs prepare for ops in order on its own goroutine, at most
// lookahead entries ahead of the consumer, so seed files are written while
// named processes the previous addzones: disk writes and control-channel
// round trips overlap. It stops when ctx ends.
func prepareAhead(ctx context.Context, ops []ensureOp, lookahead int) <-chan prepared {
	out := make(chan prepared, lookahead)
	go func() {
		defer close(out)
		for _, op := range ops {
			wrote, err := prepare(op)
			select {
			case out <- prepared{wrote, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// record updates the expected list after ensures. A primary that addzone
// just loaded counts as loaded (named loads a primary synchronously: a
// missing file fails addzone), so adding a zone never makes a ready pod
// unready.
func (a *Agent) record(ops []ensureOp, results []applied) error {
	var loaded []agent.ZoneRef
	err := a.store.update(func(m map[agent.ZoneRef]zoneState) []agent.ZoneRef {
		var changed []agent.ZoneRef
		for i, op := range ops {
			r := results[i]
			if r.Action == "" {
				continue
			}
			// Changes to named's zones are rare and worth an audit line;
			// the unchanged answers of every resync are not.
			if r.Action != agent.ActionUnchanged {
				a.log.Info("zone "+string(r.Action), "view", op.ref.View, "zone", op.ref.Zone, "type", op.clause.Type, "seedWritten", r.SeedWritten)
			}
			old, had := m[op.ref]
			// A seed written by PathSeed (markSeeded) is the agent's file too.
			seeded := op.clause.Type == "primary" && a.takeSeeded(op.ref)
			z := zoneState{View: op.ref.View, Zone: op.ref.Zone, Type: op.clause.Type, Seeded: old.Seeded || r.SeedWritten || seeded, Loaded: old.Loaded,
				SigningSettled: r.signingSettled}
			if r.Action == agent.ActionAdded && z.Type == "primary" {
				z.Loaded = true
				loaded = append(loaded, op.ref)
			}
			if !had || z != old {
				m[op.ref] = z
				changed = append(changed, op.ref)
			}
		}
		return changed
	})
	a.ready.confirm(loaded)
	return err
}

// deleteZone removes a zone (delzone, with -clean when the agent wrote
// its file) and forgets it. Deleting an absent zone succeeds.
func (a *Agent) deleteZone(ctx context.Context, ref agent.ZoneRef) (agent.DeleteZoneResult, error) {
	st, _ := a.store.get(ref)
	cmd := "delzone "
	if st.Seeded {
		cmd += "-clean "
	}
	res := agent.DeleteZoneResult{Action: agent.ActionDeleted}
	_, err := a.api.command(ctx, cmd+target(ref))
	if isCommandErr(err, "not found") {
		res.Action, err = agent.ActionAbsent, nil
	}
	if err != nil {
		return res, err
	}
	// A seed written for a zone that was never added, or whose mark the
	// ensure did not take: the agent's file all the same.
	a.dropSeed(ref)
	a.log.Info("zone "+string(res.Action), "view", ref.View, "zone", ref.Zone)
	err = a.store.update(func(m map[agent.ZoneRef]zoneState) []agent.ZoneRef {
		if _, had := m[ref]; !had {
			return nil
		}
		delete(m, ref)
		return []agent.ZoneRef{ref}
	})
	a.ready.forget(ref)
	return res, errors.Join(err, a.owners.forget(ref))
}

// zoneStatus asks named (rndc zonestatus) about a zone.
func (a *Agent) zoneStatus(ctx context.Context, s *session, ref agent.ZoneRef) (agent.ZoneStatus, error) {
	st := agent.ZoneStatus{View: ref.View, Zone: ref.Zone}
	_, st.Expected = a.store.get(ref)
	resp, err := s.command(ctx, "zonestatus "+target(ref))
	if isCommandErr(err, "not found") {
		return st, nil
	}
	if isCommandErr(err, "not loaded") {
		// named knows the zone but has no data yet (a secondary before
		// its first transfer, or a load failure).
		st.Exists = true
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.Exists = true
	parseZoneStatus(resp.Text, &st)
	return st, nil
}

// parseZoneStatus reads the `key: value` lines of rndc zonestatus. A
// zone is loaded when named reports when it was loaded (a secondary that
// never transferred has no such line); the text is named's, but treated
// as untrusted all the same: unknown or malformed lines are ignored.
func parseZoneStatus(text string, st *agent.ZoneStatus) {
	for k, v := range zoneStatusLines(text) {
		switch k {
		case "type":
			if len(v) <= 32 {
				st.Type = v
			}
		case "serial":
			if n, err := strconv.ParseUint(v, 10, 32); err == nil {
				st.Serial = uint32(n)
			}
		case "last loaded":
			st.Loaded = v != "" && !strings.HasPrefix(v, "not")
		}
	}
}

// zoneStatusLines yields the `key: value` lines of rndc zonestatus, both
// sides trimmed; lines without a colon are skipped.
func zoneStatusLines(text string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for line := range strings.SplitSeq(text, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && !yield(strings.TrimSpace(k), strings.TrimSpace(v)) {
				return
			}
		}
	}
}

func (a *Agent) sync(ctx context.Context) error {
	_, err := a.api.command(ctx, "sync -clean")
	return err
}

// isCommandErr reports whether err is named refusing a command with an
// error text containing what.
func isCommandErr(err error, what string) bool {
	var ce *rndc.CommandError
	return errors.As(err, &ce) && strings.Contains(ce.Err, what)
}
