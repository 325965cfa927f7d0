package batch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
)

// ensureFunc is a fake transport: the agent's EnsureZones as a function.
type ensureFunc func(ctx context.Context, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error)

func (f ensureFunc) EnsureZones(ctx context.Context, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error) {
	return f(ctx, reqs)
}

// recorder is a fake agent that adds every zone and records its calls.
type recorder struct {
	mu    sync.Mutex
	calls [][]string
	// before, when set, runs first and may answer instead.
	before func(ctx context.Context, call int, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error, bool)
}

func (r *recorder) EnsureZones(ctx context.Context, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error) {
	r.mu.Lock()
	zones := make([]string, len(reqs))
	for i, q := range reqs {
		zones[i] = q.Zone
	}
	r.calls = append(r.calls, zones)
	call := len(r.calls)
	r.mu.Unlock()
	if r.before != nil {
		if res, err, done := r.before(ctx, call, reqs); done {
			return res, err
		}
	}
	out := make([]agent.EnsureZoneResult, len(reqs))
	for i, q := range reqs {
		out[i] = agent.EnsureZoneResult{View: q.View, Zone: q.Zone, Action: agent.ActionAdded}
	}
	return out, nil
}

func (r *recorder) snapshot() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.calls...)
}

type outcome struct {
	zone string
	res  agent.EnsureZoneResult
	err  error
}

// ensureAll runs one Ensure per zone concurrently and returns the outcomes
// by zone and clause; ensures still running after 10 s are reported as
// errors (it may run on a goroutine other than the test's).
func ensureAll(t *testing.T, b *ZoneBatcher, key string, via ZoneEnsurer, reqs []agent.EnsureZoneRequest) map[string]outcome {
	t.Helper()
	out := make(chan outcome, len(reqs))
	for _, q := range reqs {
		go func() {
			res, err := b.Ensure(context.Background(), key, via, q)
			out <- outcome{q.Zone + "/" + q.Clause, res, err}
		}()
	}
	got := map[string]outcome{}
	timeout := time.After(10 * time.Second)
	for range reqs {
		select {
		case o := <-out:
			got[o.zone] = o
		case <-timeout:
			t.Errorf("only %d of %d ensures returned within 10s", len(got), len(reqs))
			return got
		}
	}
	return got
}

func zoneReqs(n int, clause string) []agent.EnsureZoneRequest {
	reqs := make([]agent.EnsureZoneRequest, n)
	for i := range reqs {
		reqs[i] = agent.EnsureZoneRequest{Zone: fmt.Sprintf("z%03d.test", i), Clause: clause}
	}
	return reqs
}

// waitFor polls cond every millisecond for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	NewWithT(t).Eventually(cond).WithTimeout(10*time.Second).WithPolling(time.Millisecond).Should(BeTrue(), "waiting for %s", what)
}

func (b *ZoneBatcher) queued(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.pods[key]; q != nil {
		return len(q.items)
	}
	return 0
}

// With a linger longer than the test, the first batch goes out only once
// it is full, and no batch is larger than MaxZones: 30 concurrent zones are
// three calls of ten, and every caller gets the result for its own zone.
func TestZoneBatcherFlushesFullBatches(t *testing.T) {
	b := NewZoneBatcher(ZoneBatchOptions{MaxZones: 10, Linger: time.Hour})
	defer b.Close()
	release := make(chan struct{})
	f := &recorder{before: func(ctx context.Context, call int, _ []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error, bool) {
		if call == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil, nil, false
	}}
	done := make(chan map[string]outcome)
	go func() { done <- ensureAll(t, b, "pod-0", f, zoneReqs(30, "{ type primary; };")) }()
	waitFor(t, "a full first batch and 20 zones behind it", func() bool { return len(f.snapshot()) == 1 && b.queued("pod-0") == 20 })
	close(release)
	for k, o := range <-done {
		if o.err != nil || o.res.Action != agent.ActionAdded || o.res.Zone+"/{ type primary; };" != k {
			t.Errorf("%s: %+v %v", k, o.res, o.err)
		}
	}
	calls := f.snapshot()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3 batches of 10: %v", len(calls), calls)
	}
	for _, c := range calls {
		if len(c) != 10 {
			t.Errorf("batch of %d, want 10", len(c))
		}
	}
}

// Zones that arrive while a call runs go together as soon as it returns.
func TestZoneBatcherCoalescesBehindRunningCall(t *testing.T) {
	b := NewZoneBatcher(ZoneBatchOptions{Linger: time.Millisecond})
	defer b.Close()
	release := make(chan struct{})
	f := &recorder{before: func(ctx context.Context, call int, _ []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error, bool) {
		if call == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil, nil, false
	}}
	first := make(chan error, 1)
	go func() {
		_, err := b.Ensure(context.Background(), "pod-0", f, agent.EnsureZoneRequest{Zone: "first.test"})
		first <- err
	}()
	waitFor(t, "the first call", func() bool { return len(f.snapshot()) == 1 })
	done := make(chan map[string]outcome)
	go func() { done <- ensureAll(t, b, "pod-0", f, zoneReqs(20, "")) }()
	waitFor(t, "20 zones queued behind the running call", func() bool { return b.queued("pod-0") == 20 })
	close(release)
	got := <-done
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for k, o := range got {
		if o.err != nil {
			t.Errorf("%s: %v", k, o.err)
		}
	}
	calls := f.snapshot()
	if len(calls) != 2 || len(calls[1]) != 20 {
		t.Fatalf("calls %v, want [first.test] then all 20 at once", calls)
	}
}

// named refusing one zone of a batch fails that zone's caller only, with
// the error a single ensure would have given (422, "named refused").
func TestZoneBatcherPerZoneErrors(t *testing.T) {
	b := NewZoneBatcher(ZoneBatchOptions{MaxZones: 5, Linger: time.Hour})
	defer b.Close()
	f := ensureFunc(func(_ context.Context, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error) {
		out := make([]agent.EnsureZoneResult, len(reqs))
		var failed []agent.EnsureZoneResult
		for i, q := range reqs {
			out[i] = agent.EnsureZoneResult{Zone: q.Zone, Action: agent.ActionAdded}
			if q.Zone == "z002.test" {
				out[i] = agent.EnsureZoneResult{Zone: q.Zone, Error: "file not found\n\x1b[31m"}
				failed = append(failed, out[i])
			}
		}
		return out, &agent.BatchError{Failed: failed}
	})
	got := ensureAll(t, b, "pod-0", f, zoneReqs(5, ""))
	for k, o := range got {
		var ae *agent.Error
		switch {
		case strings.HasPrefix(k, "z002.test"):
			if !errors.As(o.err, &ae) || !ae.Invalid() || !strings.HasPrefix(ae.Message, "named refused: file not found") || strings.ContainsAny(ae.Message, "\n\x1b") {
				t.Errorf("%s: %v, want a bounded 422 from named", k, o.err)
			}
		case o.err != nil || o.res.Action != agent.ActionAdded:
			t.Errorf("%s: %+v %v, want added", k, o.res, o.err)
		}
	}
}

// The agent refuses a whole batch for one invalid entry ("zones[i]"): that
// caller gets the refusal as its own, the others are sent again.
func TestZoneBatcherEntryRefusal(t *testing.T) {
	b := NewZoneBatcher(ZoneBatchOptions{MaxZones: 6, Linger: time.Hour})
	defer b.Close()
	f := &recorder{before: func(_ context.Context, _ int, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error, bool) {
		for i, q := range reqs {
			if q.Clause == "bad" {
				return nil, &agent.Error{Status: 422, Message: fmt.Sprintf("zones[%d]: clause: not a block", i), Field: fmt.Sprintf("zones[%d].clause", i)}, true
			}
		}
		return nil, nil, false
	}}
	reqs := zoneReqs(6, "good")
	reqs[1].Clause, reqs[4].Clause = "bad", "bad"
	got := ensureAll(t, b, "pod-0", f, reqs)
	for _, q := range reqs {
		o := got[q.Zone+"/"+q.Clause]
		var ae *agent.Error
		if q.Clause == "bad" {
			if !errors.As(o.err, &ae) || ae.Status != 422 || ae.Field != "clause" || ae.Message != "clause: not a block" {
				t.Errorf("%s: %v (%+v), want its own 422 without the batch prefix", q.Zone, o.err, ae)
			}
		} else if o.err != nil {
			t.Errorf("%s: %v", q.Zone, o.err)
		}
	}
	if calls := f.snapshot(); len(calls) != 3 || len(calls[2]) != 4 {
		t.Errorf("calls %v, want 6, 5, then the 4 good zones", calls)
	}
}

// A refusal that names no entry (413, 400) is retried zone by zone, so it
// reaches only the zones it belongs to.
func TestZoneBatcherUnattributedRefusalSplits(t *testing.T) {
	b := NewZoneBatcher(ZoneBatchOptions{MaxZones: 4, Linger: time.Hour})
	defer b.Close()
	f := &recorder{before: func(_ context.Context, _ int, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error, bool) {
		if len(reqs) > 1 || reqs[0].Clause == "huge" {
			return nil, &agent.Error{Status: http.StatusRequestEntityTooLarge, Message: "request body too large"}, true
		}
		return nil, nil, false
	}}
	reqs := zoneReqs(4, "")
	reqs[3].Clause = "huge"
	got := ensureAll(t, b, "pod-0", f, reqs)
	for _, q := range reqs {
		o := got[q.Zone+"/"+q.Clause]
		if (q.Clause == "huge") != (o.err != nil) {
			t.Errorf("%s: %v", q.Zone, o.err)
		}
	}
	if calls := f.snapshot(); len(calls) != 5 {
		t.Errorf("calls %v, want the batch then 4 singles", calls)
	}
}

// A call that fails as a whole fails every caller in it; a reply that does
// not match the request is malformed, never a success.
func TestZoneBatcherWholeCallFailures(t *testing.T) {
	boom := errors.New("connection reset")
	for name, tc := range map[string]struct {
		f    ensureFunc
		want func(error) bool
	}{
		"transport": {
			func(context.Context, []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error) { return nil, boom },
			func(err error) bool { return errors.Is(err, boom) },
		},
		"agent 503": {
			func(context.Context, []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error) {
				return nil, &agent.Error{Status: 503, Message: "control channel down"}
			},
			func(err error) bool { var ae *agent.Error; return errors.As(err, &ae) && ae.Status == 503 },
		},
		"short reply": {
			func(_ context.Context, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error) {
				return make([]agent.EnsureZoneResult, len(reqs)-1), nil
			},
			func(err error) bool { return errors.Is(err, agent.ErrBadReply) },
		},
		"results for other zones": {
			func(_ context.Context, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error) {
				out := make([]agent.EnsureZoneResult, len(reqs))
				for i := range out {
					out[i] = agent.EnsureZoneResult{Zone: "evil\n.test", Action: agent.ActionAdded}
				}
				return out, nil
			},
			func(err error) bool { return errors.Is(err, agent.ErrBadReply) && !strings.Contains(err.Error(), "\n") },
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := NewZoneBatcher(ZoneBatchOptions{MaxZones: 3, Linger: time.Hour})
			defer b.Close()
			for k, o := range ensureAll(t, b, "pod-0", tc.f, zoneReqs(3, "")) {
				if !tc.want(o.err) {
					t.Errorf("%s: %v", k, o.err)
				}
			}
		})
	}
}

// Two callers for the same zone never share a batch (the agent refuses a
// batch naming a zone twice); different pods never share one either.
func TestZoneBatcherSeparatesDuplicatesAndPods(t *testing.T) {
	b := NewZoneBatcher(ZoneBatchOptions{MaxZones: 4, Linger: time.Millisecond})
	defer b.Close()
	release := make(chan struct{})
	f := &recorder{before: func(ctx context.Context, call int, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error, bool) {
		if call == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		seen := map[string]bool{}
		for i, q := range reqs {
			if seen[q.Zone] {
				return nil, &agent.Error{Status: 422, Message: fmt.Sprintf("zones[%d]: appears twice", i), Field: fmt.Sprintf("zones[%d].zone", i)}, true
			}
			seen[q.Zone] = true
		}
		return nil, nil, false
	}}
	first := make(chan error, 1)
	go func() {
		_, err := b.Ensure(context.Background(), "pod-0", f, agent.EnsureZoneRequest{Zone: "first.test"})
		first <- err
	}()
	waitFor(t, "the first call", func() bool { return len(f.snapshot()) == 1 })
	same := []agent.EnsureZoneRequest{{Zone: "dup.test", Clause: "a"}, {Zone: "dup.test", Clause: "b"}, {Zone: "other.test"}, {Zone: "more.test"}}
	done := make(chan map[string]outcome)
	go func() { done <- ensureAll(t, b, "pod-0", f, same) }()
	waitFor(t, "4 zones queued behind the first", func() bool { return b.queued("pod-0") == 4 })

	g := &recorder{}
	for k, o := range ensureAll(t, b, "pod-1", g, zoneReqs(2, "")) {
		if o.err != nil {
			t.Errorf("pod-1 %s: %v", k, o.err)
		}
	}
	if calls := f.snapshot(); len(calls) != 1 {
		t.Errorf("pod-1's zones went through pod-0's queue: %v", calls)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for k, o := range <-done {
		if o.err != nil {
			t.Errorf("pod-0 %s: %v", k, o.err)
		}
	}
	calls := f.snapshot()
	if len(calls) != 3 || len(calls[1]) != 3 || len(calls[2]) != 1 || calls[2][0] != "dup.test" {
		t.Errorf("pod-0 calls %v, want [first] [dup other more] [dup]", calls)
	}
	if n := len(g.snapshot()); n == 0 || n > 2 {
		t.Errorf("pod-1 made %d calls", n)
	}
}

// A caller that gives up returns at once; its zone, not yet sent, is
// dropped instead of being applied for nobody.
func TestZoneBatcherCancellation(t *testing.T) {
	b := NewZoneBatcher(ZoneBatchOptions{Linger: time.Millisecond})
	defer b.Close()
	release := make(chan struct{})
	f := &recorder{before: func(ctx context.Context, call int, _ []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error, bool) {
		if call == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil, nil, false
	}}
	first := make(chan error, 1)
	go func() {
		_, err := b.Ensure(context.Background(), "pod-0", f, agent.EnsureZoneRequest{Zone: "first.test"})
		first <- err
	}()
	waitFor(t, "the first call", func() bool { return len(f.snapshot()) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := b.Ensure(ctx, "pod-0", f, agent.EnsureZoneRequest{Zone: "gone.test"})
		gone <- err
	}()
	waitFor(t, "the second zone queued", func() bool { return b.queued("pod-0") == 1 })
	cancel()
	select {
	case err := <-gone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled ensure: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled ensure did not return")
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod's sender to finish", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.pods) == 0 })
	if calls := f.snapshot(); len(calls) != 1 {
		t.Errorf("calls %v: the cancelled zone was sent", calls)
	}
}

// Close cancels the running call, fails what is queued, leaves no
// goroutine behind, and refuses new work.
func TestZoneBatcherClose(t *testing.T) {
	before := runtime.NumGoroutine()
	b := NewZoneBatcher(ZoneBatchOptions{MaxZones: 4, Linger: time.Millisecond})
	stuck := ensureFunc(func(ctx context.Context, _ []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error) {
		<-ctx.Done() // an agent that never answers
		return nil, ctx.Err()
	})
	out := make(chan error, 40)
	for i := range 40 {
		go func() {
			_, err := b.Ensure(context.Background(), fmt.Sprintf("pod-%d", i%4), stuck, agent.EnsureZoneRequest{Zone: fmt.Sprintf("z%d.test", i)})
			out <- err
		}()
	}
	waitFor(t, "every zone queued or sent", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.pods) == 4
	})
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	for range 40 {
		select {
		case err := <-out:
			if err == nil {
				t.Error("an ensure succeeded against an agent that never answers")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("an ensure outlived Close")
		}
	}
	if _, err := b.Ensure(context.Background(), "pod-0", stuck, agent.EnsureZoneRequest{Zone: "late.test"}); !errors.Is(err, ErrZoneBatcherClosed) {
		t.Errorf("ensure after Close: %v", err)
	}
	waitFor(t, "the goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}
