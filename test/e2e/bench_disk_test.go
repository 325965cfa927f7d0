package e2e

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The bench samples the machine while edits are measured, so that each
// slow edit can be set against what the node was doing at that moment
// (issue 15, item 3) instead of leaving it to guesswork: the disk (this
// file) and the CPU (bench_cpu_test.go).

// probe calls sample every period, at most probeLimit times, until
// finish or the end of the test.
type probe[S any] struct {
	name string
	stop chan struct{}
	once sync.Once
	done sync.WaitGroup

	mu      sync.Mutex
	samples []S
	err     error
}

// probeLimit bounds the samples (and so a probe's run): the edits it
// watches take seconds to a minute, not hours.
const probeLimit = 60000

// startProbe starts sampling; a test that fails before finish still stops
// it (and runs cleanup) when it ends.
func startProbe[S any](t *testing.T, name string, every time.Duration, sample func() (S, error), cleanup func()) *probe[S] {
	t.Helper()
	p := &probe[S]{name: name, stop: make(chan struct{})}
	t.Cleanup(p.halt)
	p.done.Go(func() {
		defer cleanup()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for range probeLimit {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			s, err := sample()
			p.mu.Lock()
			if err != nil {
				p.err = err
				p.mu.Unlock()
				return
			}
			p.samples = append(p.samples, s)
			p.mu.Unlock()
		}
	})
	return p
}

// halt stops the probe and waits for it; it may be called more than once.
func (p *probe[S]) halt() {
	p.once.Do(func() { close(p.stop) })
	p.done.Wait()
}

// finish stops the probe and returns its samples.
func (p *probe[S]) finish(t *testing.T) []S {
	t.Helper()
	p.halt()
	if p.err != nil {
		t.Fatalf("%s probe: %v", p.name, p.err)
	}
	return p.samples
}

// The disk probe times a small write and fsync on the disk that holds the
// cluster's volumes and etcd, every diskProbeEvery. named commits each
// UPDATE and each incoming IXFR to its journal with fsync before it serves
// the change (unless its data volume is in memory), and etcd each write,
// so a stalled disk delays an edit whoever wrote it.
type diskSample struct {
	at   time.Time
	took time.Duration
}

// benchDiskProbe turns the disk probe on. It is off by default: its
// fsyncs, one every diskProbeEvery, about as many as etcd's during the
// DNSRecord edits, load the disk that etcd's commits wait on, and so the
// edits it watches.
var benchDiskProbe = flag.Bool("bench-disk-probe", false, "TestInClusterBench times a 4 KiB write and fsync on the node's disk every 20 ms during the edits")

const (
	diskProbeEvery = 20 * time.Millisecond
	// diskStall is an fsync slow enough to show in an edit's time.
	diskStall = 20 * time.Millisecond
)

// startDiskProbe starts probing in dir (a folder on the cluster's disk);
// the file it writes is removed when the probe finishes.
func startDiskProbe(t *testing.T, dir string) *probe[diskSample] {
	t.Helper()
	f, err := os.CreateTemp(dir, "bench-fsync-probe-")
	if err != nil {
		t.Fatalf("disk probe: %v", err)
	}
	buf := []byte(strings.Repeat("x", 4096))
	return startProbe(t, "disk", diskProbeEvery, func() (diskSample, error) {
		start := time.Now()
		_, err := f.WriteAt(buf, 0)
		if err == nil {
			err = f.Sync()
		}
		return diskSample{at: start, took: time.Since(start)}, err
	}, func() { _ = f.Close(); _ = os.Remove(f.Name()) })
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
		return "not probed (-bench-disk-probe)"
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
