package agent_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// zonesPerRun is how many primary zones each path creates per iteration.
const zonesPerRun = 2000

// BenchmarkZoneBatcher compares, side by side on fresh named + agent pairs,
// how fast concurrent callers (the BindZone controller's reconciles) get
// primary zones created:
//
//   - single: each caller sends its own EnsureZone (what the controller did);
//   - batcher: each caller goes through batch.ZoneBatcher, which
//     coalesces them into EnsureZones calls (what it does now).
//
// It prints a markdown table (with -benchtime Nx, once for the calibration
// run and once for the N runs); nothing is asserted about time.
//
//	go test -run '^$' -bench ZoneBatcher -benchtime 3x ./test/agent/
func BenchmarkZoneBatcher(b *testing.B) {
	callers := []int{8, 64}
	type path struct {
		name string
		run  func(e *env, n int, reqs []agent.EnsureZoneRequest) (time.Duration, int64)
	}
	paths := []path{
		{"single EnsureZone per caller", func(e *env, n int, reqs []agent.EnsureZoneRequest) (time.Duration, int64) {
			start := time.Now()
			_, errs := ensureConcurrently(b, n, reqs, e.client.EnsureZone)
			failOn(b, errs)
			return time.Since(start), int64(len(reqs))
		}},
		{"batch.ZoneBatcher", func(e *env, n int, reqs []agent.EnsureZoneRequest) (time.Duration, int64) {
			zb := batch.NewZoneBatcher(batch.ZoneBatchOptions{})
			defer zb.Close()
			via := &countingEnsurer{c: e.client}
			start := time.Now()
			_, errs := ensureConcurrently(b, n, reqs, func(ctx context.Context, r agent.EnsureZoneRequest) (agent.EnsureZoneResult, error) {
				return zb.Ensure(ctx, "pod-0", via, r)
			})
			failOn(b, errs)
			return time.Since(start), via.calls.Load()
		}},
	}
	took := make([][]time.Duration, len(callers))
	calls := make([][]int64, len(callers))
	for i := range callers {
		took[i] = make([]time.Duration, len(paths))
		calls[i] = make([]int64, len(paths))
	}
	for range b.N {
		for i, n := range callers {
			for j, p := range paths {
				e := startEnv(b, bindtest.Options{})
				d, c := p.run(e, n, benchRequests(e, zonesPerRun))
				took[i][j] += d
				calls[i][j] += c
				e.stop()
				e.named.Stop()
			}
		}
	}
	fmt.Fprintf(os.Stdout, "\n| concurrent callers (%d primary zones, mean of %d runs) | path | zones/s | time | agent calls | vs single |\n|---|---|---|---|---|---|\n", zonesPerRun, b.N)
	for i, n := range callers {
		single := float64(zonesPerRun*b.N) / took[i][0].Seconds()
		for j, p := range paths {
			rate := float64(zonesPerRun*b.N) / took[i][j].Seconds()
			b.ReportMetric(rate, fmt.Sprintf("%s-%d-zones/s", []string{"single", "batcher"}[j], n))
			fmt.Fprintf(os.Stdout, "| %d | %s | %.0f | %v | %d | %.2f× |\n", n, p.name, rate,
				(took[i][j] / time.Duration(b.N)).Round(time.Millisecond), calls[i][j]/int64(b.N), rate/single)
		}
	}
	fmt.Fprintln(os.Stdout)
}

func failOn(b *testing.B, errs []error) {
	b.Helper()
	for i, err := range errs {
		if err != nil {
			b.Fatalf("zone %d: %v", i, err)
		}
	}
}
