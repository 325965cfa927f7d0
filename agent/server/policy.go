package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	"git.unkin.net/unkin/bind-operator/render"
)

// policyLoadWait bounds how long an apply waits for named to load the
// rewritten zone (rndc reload only queues the load).
const policyLoadWait = 5 * time.Second

func (a *Agent) handlePolicy(w http.ResponseWriter, r *http.Request) error {
	var req agent.PolicyRequest
	if err := decode(w, r, agent.MaxPolicyBytes, &req); err != nil {
		return err
	}
	ref, err := checkRef(agent.ZoneRef{View: req.View, Zone: req.Zone})
	if err != nil {
		return err
	}
	if err := validate.PolicyName(req.Policy); err != nil {
		return err
	}
	if err := validate.PolicyRecords(req.Records); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), singleTimeout)
	defer cancel()
	a.opMu.Lock()
	defer a.opMu.Unlock()
	res, err := a.applyPolicy(ctx, ref, req.Policy, req.Records)
	if err != nil {
		a.metrics.zoneOps.WithLabelValues("error").Inc()
		return err
	}
	a.metrics.zoneOps.WithLabelValues("policy-" + res.Action).Inc()
	writeJSON(w, http.StatusOK, res)
	return nil
}

// applyPolicy makes named enforce recs in the policy zone ref:
//
//  1. the zone must be one named declares (the cluster's config has the
//     policy): the agent writes no file for a zone named does not load;
//  2. when the file already holds these records and named serves its
//     serial, nothing happens;
//  3. otherwise the file is replaced (write, rename) with a newer serial
//     and named reloads the zone; the apply returns once named serves it.
func (a *Agent) applyPolicy(ctx context.Context, ref agent.ZoneRef, policy string, recs []agent.PolicyRecord) (agent.PolicyResult, error) {
	res := agent.PolicyResult{View: ref.View, Zone: ref.Zone}
	st, err := a.zoneStatus(ctx, a.api, ref)
	if err != nil {
		return res, err
	}
	if !st.Exists {
		return res, &httpError{status: http.StatusConflict, msg: fmt.Sprintf("named has no zone %s: the cluster's running configuration does not declare this policy yet", target(ref))}
	}
	rrecs := make([]render.PolicyRecord, len(recs))
	for i, r := range recs {
		rrecs[i] = render.PolicyRecord(r)
	}
	res.Digest = render.PolicyDigest(rrecs)
	path := a.cfg.Paths.PolicyZoneFile(ref.View, ref.Zone)
	cur, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("policy zone file: %w", err)
	}
	curSerial := render.FilePolicySerial(string(cur))
	if render.FilePolicyDigest(string(cur)) == res.Digest && st.Loaded && st.Serial == curSerial {
		res.Action, res.Serial = agent.ActionUnchanged, st.Serial
		return res, nil
	}
	serial := max(uint32(time.Now().Unix()), curSerial+1, st.Serial+1) //nolint:gosec // seconds fit in 32 bits until 2106
	if err := replaceFile(path, render.PolicyZoneFile(ref.Zone, policy, serial, rrecs)); err != nil {
		return res, err
	}
	if _, err := a.api.command(ctx, "reload "+target(ref)); err != nil {
		return res, err
	}
	deadline := time.Now().Add(policyLoadWait)
	for {
		st, err = a.zoneStatus(ctx, a.api, ref)
		if err != nil {
			return res, err
		}
		if st.Loaded && st.Serial == serial {
			res.Action, res.Serial = agent.ActionReloaded, serial
			return res, nil
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("named did not load %s at serial %d within %s (it serves %d); see its log", target(ref), serial, policyLoadWait, st.Serial)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
