package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	"git.unkin.net/unkin/bind-operator/rndc"
)

// Time budgets per request: a single zone is milliseconds, a batch of
// MaxBatchZones at ~1,000/s is seconds.
const (
	singleTimeout = 30 * time.Second
	batchTimeout  = 5 * time.Minute
)

func (a *Agent) apiHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST "+agent.PathEnsure, a.instrument("ensure", a.handleEnsure))
	mux.Handle("POST "+agent.PathEnsureBatch, a.instrument("ensure-batch", a.handleEnsureBatch))
	mux.Handle("POST "+agent.PathDelete, a.instrument("delete", zoneHandler(a.handleDelete)))
	mux.Handle("POST "+agent.PathStatus, a.instrument("status", zoneHandler(a.handleStatus)))
	mux.Handle("POST "+agent.PathSync, a.instrument("sync", a.handleSync))
	mux.Handle("POST "+agent.PathPolicy, a.instrument("policy", a.handlePolicy))
	mux.Handle("POST "+agent.PathProbe, a.instrument("probe", a.handleProbe))
	mux.Handle("POST "+agent.PathOwners, a.instrument("owners", a.handleOwners))
	mux.Handle("POST "+agent.PathOwnersList, a.instrument("owners-list", a.handleOwnersList))
	mux.Handle("POST "+agent.PathOwnersGet, a.instrument("owners-get", a.handleOwnersGet))
	mux.Handle("POST "+agent.PathKeysGet, a.instrument("keys-get", zoneHandler(a.handleKeysGet)))
	mux.Handle("POST "+agent.PathKeysRestore, a.instrument("keys-restore", a.handleKeysRestore))
	mux.Handle("POST "+agent.PathSeedNeeded, a.instrument("seed-needed", zoneHandler(a.handleSeedNeeded)))
	mux.Handle("POST "+agent.PathSeed, a.instrument("seed", a.handleSeed))
	// Anything else: the mux answers 404, or 405 for a known path with
	// another method.
	return mux
}

// httpError is an error with the status the client should see.
type httpError struct {
	status int
	msg    string
	field  string
}

func (e *httpError) Error() string { return e.msg }

// statusWriter records the status for metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// instrument wraps a handler: metrics, error mapping, panic containment.
func (a *Agent) instrument(endpoint string, h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if p := recover(); p != nil {
				a.log.Error("handler panic", "endpoint", endpoint, "panic", fmt.Sprint(p))
				writeJSON(sw, http.StatusInternalServerError, agent.ErrorResponse{Error: "internal error"})
			}
			a.metrics.requests.WithLabelValues(endpoint, strconv.Itoa(sw.status)).Inc()
			a.metrics.latency.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
		}()
		if err := h(sw, r); err != nil {
			he := a.toHTTPError(err)
			if he.status >= 500 {
				a.log.Warn("request failed", "endpoint", endpoint, "status", he.status, "err", he.msg)
			}
			writeJSON(sw, he.status, agent.ErrorResponse{Error: he.msg, Field: he.field})
		}
	})
}

// toHTTPError maps errors to statuses: the request's fault (4xx, do not
// retry as is) or named's/ours (5xx, retry).
func (a *Agent) toHTTPError(err error) *httpError {
	var he *httpError
	var ve *validate.Error
	var ce *rndc.CommandError
	switch {
	case errors.As(err, &he):
		return he
	case errors.As(err, &ve):
		return &httpError{status: http.StatusUnprocessableEntity, msg: ve.Error(), field: ve.Field}
	case errors.As(err, &ce):
		// named parsed the command and refused it: the clause or the zone
		// is wrong for this server (or, for "file not found", no seed was
		// sent for a primary without a file).
		return &httpError{status: http.StatusUnprocessableEntity, msg: "named refused: " + ce.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return &httpError{status: http.StatusGatewayTimeout, msg: err.Error()}
	default:
		return &httpError{status: http.StatusServiceUnavailable, msg: err.Error()}
	}
}

// decode reads a JSON body strictly: bounded size, no unknown fields, one
// value only.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body larger than %d bytes", limit)}
		}
		return &httpError{status: http.StatusBadRequest, msg: "invalid JSON: " + clipErr(err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body larger than %d bytes", limit)}
		}
		return &httpError{status: http.StatusBadRequest, msg: "invalid JSON: trailing data after the request"}
	}
	return nil
}

func clipErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *Agent) handleEnsure(w http.ResponseWriter, r *http.Request) error {
	var req agent.EnsureZoneRequest
	if err := decode(w, r, agent.MaxRequestBytes, &req); err != nil {
		return err
	}
	op, err := a.checkEnsure(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), singleTimeout)
	defer cancel()
	a.opMu.Lock()
	defer a.opMu.Unlock()
	res, err := a.ensure(ctx, op)
	if err != nil {
		a.metrics.zoneOps.WithLabelValues("error").Inc()
		return err
	}
	a.metrics.zoneOps.WithLabelValues(res.Action).Inc()
	if err := a.record([]ensureOp{op}, []applied{res}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res.EnsureZoneResult)
	return nil
}

func (a *Agent) handleEnsureBatch(w http.ResponseWriter, r *http.Request) error {
	var req agent.EnsureZonesRequest
	if err := decode(w, r, agent.MaxBatchBytes, &req); err != nil {
		return err
	}
	if len(req.Zones) > agent.MaxBatchZones {
		return &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("batch of %d zones exceeds %d; split it", len(req.Zones), agent.MaxBatchZones)}
	}
	// Validate everything before doing anything.
	ops := make([]ensureOp, len(req.Zones))
	seen := make(map[agent.ZoneRef]int, len(req.Zones))
	for i, z := range req.Zones {
		op, err := a.checkEnsure(z)
		if err != nil {
			he := a.toHTTPError(err)
			he.msg = fmt.Sprintf("zones[%d]: %s", i, he.msg)
			he.field = fmt.Sprintf("zones[%d].%s", i, he.field)
			return he
		}
		if j, dup := seen[op.ref]; dup {
			return &httpError{status: http.StatusUnprocessableEntity, field: fmt.Sprintf("zones[%d].zone", i),
				msg: fmt.Sprintf("zones[%d]: zone %s appears twice (also zones[%d])", i, target(op.ref), j)}
		}
		seen[op.ref] = i
		ops[i] = op
	}
	ctx, cancel := context.WithTimeout(r.Context(), batchTimeout)
	defer cancel()
	a.opMu.Lock()
	defer a.opMu.Unlock()
	results := make([]applied, len(ops))
	prepCtx, stopPrep := context.WithCancel(ctx)
	defer stopPrep()
	preps := prepareAhead(prepCtx, ops, 256)
	var abort error
	for i, op := range ops {
		if abort != nil {
			results[i].EnsureZoneResult = agent.EnsureZoneResult{View: op.ref.View, Zone: op.ref.Zone, Error: agent.BoundTo("not attempted: "+abort.Error(), agent.MaxResultErrorBytes)}
			continue
		}
		p, ok := <-preps
		if !ok {
			p.err = ctx.Err()
			if p.err == nil {
				p.err = errors.New("seed writer stopped")
			}
		}
		res := applied{EnsureZoneResult: agent.EnsureZoneResult{View: op.ref.View, Zone: op.ref.Zone}}
		err := p.err
		if err == nil {
			res, err = a.apply(ctx, op, p.wrote)
		}
		if err != nil {
			res.Error = agent.BoundTo(err.Error(), agent.MaxResultErrorBytes)
			a.metrics.zoneOps.WithLabelValues("error").Inc()
			var ce *rndc.CommandError
			if !errors.As(err, &ce) {
				// The session or the disk failed: the rest would fail
				// the same way, slowly.
				abort = err
				stopPrep()
			}
		} else {
			a.metrics.zoneOps.WithLabelValues(res.Action).Inc()
		}
		results[i] = res
	}
	if err := a.record(ops, results); err != nil {
		return err
	}
	if abort != nil {
		// The control channel or the disk failed: say so as a whole
		// (5xx, retry). What was applied stays applied and recorded; the
		// retry reports it unchanged.
		return abort
	}
	resp := agent.EnsureZonesResponse{Results: make([]agent.EnsureZoneResult, len(results))}
	for i, r := range results {
		resp.Results[i] = r.EnsureZoneResult
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// zoneHandler serves a request whose body is one zone (agent.ZoneRef): h
// gets the reference checked and canonical, and a context that ends after
// singleTimeout.
func zoneHandler(h func(ctx context.Context, w http.ResponseWriter, ref agent.ZoneRef) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req agent.ZoneRef
		if err := decode(w, r, agent.MaxRequestBytes, &req); err != nil {
			return err
		}
		ref, err := checkRef(req)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(r.Context(), singleTimeout)
		defer cancel()
		return h(ctx, w, ref)
	}
}

func (a *Agent) handleDelete(ctx context.Context, w http.ResponseWriter, ref agent.ZoneRef) error {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	res, err := a.deleteZone(ctx, ref)
	if err != nil {
		a.metrics.zoneOps.WithLabelValues("error").Inc()
		return err
	}
	a.metrics.zoneOps.WithLabelValues(res.Action).Inc()
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (a *Agent) handleStatus(ctx context.Context, w http.ResponseWriter, ref agent.ZoneRef) error {
	st, err := a.zoneStatus(ctx, a.api, ref)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (a *Agent) handleSync(w http.ResponseWriter, r *http.Request) error {
	// An empty body is fine: a hook may POST nothing.
	if r.ContentLength != 0 {
		var req struct{}
		if err := decode(w, r, agent.MaxRequestBytes, &req); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), singleTimeout)
	defer cancel()
	if err := a.sync(ctx); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, agent.SyncResult{Synced: true})
	return nil
}
