package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// BenchmarkEnsureZones measures primary zones created per second:
//
//   - agent-batch: through the agent, EnsureZones in batches of 1,000
//     (HTTPS + mTLS, validation, seed written, addzone, state persisted);
//   - agent-single: through the agent, one EnsureZone request per zone;
//   - rndc-session: the floor: seed files written and addzone sent over
//     one control session directly, no agent.
//
// Data dirs are on disk (t.TempDir()), as a pod's volume would be.
//
//	go test -run '^$' -bench EnsureZones -benchtime 3000x ./test/agent/
func BenchmarkEnsureZones(b *testing.B) {
	b.Run("agent-batch", func(b *testing.B) {
		e := startEnv(b, bindtest.Options{})
		reqs := benchRequests(e, b.N)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		b.ResetTimer()
		for i := 0; i < len(reqs); i += 1000 {
			if _, err := e.client.EnsureZones(ctx, reqs[i:min(i+1000, len(reqs))]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "zones/s")
	})
	b.Run("agent-single", func(b *testing.B) {
		e := startEnv(b, bindtest.Options{})
		reqs := benchRequests(e, b.N)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		b.ResetTimer()
		for _, r := range reqs {
			if _, err := e.client.EnsureZone(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "zones/s")
	})
	b.Run("rndc-session", func(b *testing.B) {
		s := bindtest.Start(b, bindtest.Options{})
		paths := render.Paths{DataDir: s.Dir}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		c := controlSession(ctx, b, s)
		if err := os.MkdirAll(filepath.Dir(paths.PrimaryZoneFile("", "x.test")), 0o755); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			zone := fmt.Sprintf("z%06d.test", i)
			file := paths.PrimaryZoneFile("", zone)
			if err := os.WriteFile(file, []byte(render.SeedZoneWithGlue(zone, nil, 0, []string{"127.0.0.1"})), 0o644); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Command(ctx, fmt.Sprintf(`addzone %s { type primary; file %q; };`, zone, file)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "zones/s")
	})
}

func benchRequests(e *env, n int) []agent.EnsureZoneRequest {
	reqs := make([]agent.EnsureZoneRequest, n)
	for i := range reqs {
		reqs[i] = e.primary("", fmt.Sprintf("z%06d.test", i), "")
	}
	return reqs
}
