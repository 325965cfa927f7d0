package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// countingEnsurer counts the EnsureZones calls that reach the agent.
type countingEnsurer struct {
	c            *agent.Client
	calls, zones atomic.Int64
}

func (c *countingEnsurer) EnsureZones(ctx context.Context, reqs []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error) {
	c.calls.Add(1)
	c.zones.Add(int64(len(reqs)))
	return c.c.EnsureZones(ctx, reqs)
}

// ensureConcurrently sends every request through ensure from callers
// concurrent workers (as the BindZone controller's reconciles do) and
// returns each request's outcome, in request order.
func ensureConcurrently(tb testing.TB, callers int, reqs []agent.EnsureZoneRequest, ensure func(context.Context, agent.EnsureZoneRequest) (agent.EnsureZoneResult, error)) ([]agent.EnsureZoneResult, []error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res := make([]agent.EnsureZoneResult, len(reqs))
	errs := make([]error, len(reqs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				res[i], errs[i] = ensure(ctx, reqs[i])
			}
		}()
	}
	for i := range reqs {
		select {
		case work <- i:
		case <-ctx.Done():
			close(work)
			wg.Wait()
			tb.Fatalf("ensures did not finish within 5 minutes (%d sent)", i)
		}
	}
	close(work)
	wg.Wait()
	return res, errs
}

// The BindZone controller's batcher against a real agent and named: 300
// zones from 16 concurrent callers go in far fewer EnsureZones calls, each
// caller gets its own outcome, and the two zones the agent or named refuse
// fail alone, with the error a single ensure would have given.
func TestZoneBatcherAgainstAgent(t *testing.T) {
	e := startEnv(t, bindtest.Options{})
	via := &countingEnsurer{c: e.client}
	b := batch.NewZoneBatcher(batch.ZoneBatchOptions{})
	defer b.Close()
	ensure := func(ctx context.Context, r agent.EnsureZoneRequest) (agent.EnsureZoneResult, error) {
		return b.Ensure(ctx, "pod-0", via, r)
	}

	const n = 300
	reqs := make([]agent.EnsureZoneRequest, n)
	for i := range reqs {
		reqs[i] = e.primary("", fmt.Sprintf("zb%03d.test", i), "")
	}
	// Refused by the agent's validation: the seed would land elsewhere
	// than the clause's file (the whole batch would be refused with it).
	const invalid, unloadable = 17, 211
	reqs[invalid].Clause = `{ type primary; file "elsewhere.db"; };`
	// Refused by named: no seed and no file to load.
	reqs[unloadable] = agent.EnsureZoneRequest{Zone: reqs[unloadable].Zone, Clause: fmt.Sprintf(`{ type primary; file %q; };`, e.paths.PrimaryZoneFile("", reqs[unloadable].Zone))}

	res, errs := ensureConcurrently(t, 16, reqs, ensure)
	for i := range reqs {
		var ae *agent.Error
		switch i {
		case invalid:
			if !errors.As(errs[i], &ae) || ae.Status != 422 || ae.Field != "clause" || strings.HasPrefix(ae.Message, "zones[") {
				t.Errorf("invalid zone: %v (%+v), want the agent's 422 for this zone alone", errs[i], ae)
			}
		case unloadable:
			if !errors.As(errs[i], &ae) || !ae.Invalid() || !strings.HasPrefix(ae.Message, "named refused") {
				t.Errorf("unloadable zone: %v, want named's refusal as a 422", errs[i])
			}
		default:
			if errs[i] != nil || res[i].Action != agent.ActionAdded || res[i].Zone != reqs[i].Zone {
				t.Fatalf("zone %s: %+v %v", reqs[i].Zone, res[i], errs[i])
			}
		}
	}
	calls := via.calls.Load()
	t.Logf("%d zones from 16 callers in %d EnsureZones calls (%d zones sent, refusals included)", n, calls, via.zones.Load())
	if calls > n/4 {
		t.Errorf("%d calls for %d zones: the batcher did not coalesce", calls, n)
	}
	for i := 0; i < n; i += 37 {
		if i == invalid || i == unloadable {
			continue
		}
		if serial, _ := soa(t, e.named.DNSAddr, reqs[i].Zone); serial != 1 {
			t.Errorf("%s serial %d, want the seed's 1", reqs[i].Zone, serial)
		}
	}

	// Ensuring the same zones again changes nothing and says so per zone.
	good := append(append(append([]agent.EnsureZoneRequest{}, reqs[:invalid]...), reqs[invalid+1:unloadable]...), reqs[unloadable+1:]...)
	res, errs = ensureConcurrently(t, 16, good, ensure)
	for i := range good {
		if errs[i] != nil || res[i].Action != agent.ActionUnchanged {
			t.Fatalf("repeat %s: %+v %v", good[i].Zone, res[i], errs[i])
		}
	}
	e.waitReady(t, 200)
}
