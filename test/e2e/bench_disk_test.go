package e2e

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// diskProbe times a small write and fsync on the disk that holds the
// cluster's volumes and etcd, every diskProbeEvery, while edits are
// measured. named commits each UPDATE and each incoming IXFR to its
// journal with fsync before it serves the change, so a stalled disk
// delays an edit on the primary and on every secondary whoever wrote it.
// The probe says whether the slow edits of a run coincided with such a
// stall (issue 15, item 3) instead of leaving it to guesswork.
type diskProbe struct {
	stop chan struct{}
	done sync.WaitGroup

	mu      sync.Mutex
	samples []diskSample
	err     error
}

type diskSample struct {
	at   time.Time
	took time.Duration
}

const (
	diskProbeEvery = 20 * time.Millisecond
	// diskProbeLimit bounds the samples (and so the probe's run): the
	// edits it watches take seconds, not minutes.
	diskProbeLimit = 60000
	// diskStall is an fsync slow enough to show in an edit's time.
	diskStall = 20 * time.Millisecond
)

// startDiskProbe starts probing in dir (a folder on the cluster's disk); the
// file it writes is removed by stopDiskProbe.
func startDiskProbe(t *testing.T, dir string) *diskProbe {
	t.Helper()
	f, err := os.CreateTemp(dir, "bench-fsync-probe-")
	if err != nil {
		t.Fatalf("disk probe: %v", err)
	}
	p := &diskProbe{stop: make(chan struct{})}
	buf := []byte(strings.Repeat("x", 4096))
	p.done.Go(func() {
		defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }()
		tick := time.NewTicker(diskProbeEvery)
		defer tick.Stop()
		for range diskProbeLimit {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			start := time.Now()
			_, err := f.WriteAt(buf, 0)
			if err == nil {
				err = f.Sync()
			}
			p.mu.Lock()
			if err != nil {
				p.err = err
				p.mu.Unlock()
				return
			}
			p.samples = append(p.samples, diskSample{at: start, took: time.Since(start)})
			p.mu.Unlock()
		}
	})
	return p
}

// finish stops the probe and returns its samples.
func (p *diskProbe) finish(t *testing.T) []diskSample {
	t.Helper()
	close(p.stop)
	p.done.Wait()
	if p.err != nil {
		t.Fatalf("disk probe: %v", p.err)
	}
	return p.samples
}

// worstDuring is the longest fsync that overlapped [from, to].
func worstDuring(samples []diskSample, from, to time.Time) time.Duration {
	var worst time.Duration
	for _, s := range samples {
		if s.at.Before(to) && s.at.Add(s.took).After(from) {
			worst = max(worst, s.took)
		}
	}
	return worst
}

// diskSummary is the probe's row: its fsync times, and for each path how
// many edits were slow and how many of those overlapped a stalled fsync.
func diskSummary(samples []diskSample, paths []string, lats []changeLatencies) string {
	took := make(latencies, 0, len(samples))
	for _, s := range samples {
		took = append(took, s.took)
	}
	if len(took) == 0 {
		return "no sample"
	}
	counts := make([]string, 0, len(lats))
	for i, l := range lats {
		slow, stalled := 0, 0
		for j, served := range l.served {
			if served <= editGoal {
				continue
			}
			slow++
			if worstDuring(samples, l.started[j], l.started[j].Add(served)) > diskStall {
				stalled++
			}
		}
		counts = append(counts, fmt.Sprintf("%s %d (%d)", paths[i], slow, stalled))
	}
	return fmt.Sprintf("fsync %s over %d samples; edits served in over %s (of them, during an fsync over %s): %s",
		took.summary(), len(took), editGoal, diskStall, strings.Join(counts, ", "))
}
