package e2e

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

var apiServerPprof = flag.String("apiserver-pprof", "", "a folder: TestInClusterBench saves the API server's CPU profile there while the DNSRecords are edited and while they are created")

// profileAPIServer takes the API server's CPU profile for d into
// -apiserver-pprof (its /debug/pprof, read with the cluster's admin
// credentials) and returns a wait for it; without the flag it does
// nothing. The bench's tables say how much of the node the API server
// takes; this says on what.
func profileAPIServer(ctx context.Context, t *testing.T, what string, d time.Duration) (wait func()) {
	if *apiServerPprof == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
		defer cancel()
		raw, err := env.Cluster.Client().CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + 30*time.Second).DoRaw(ctx)
		if err == nil {
			err = os.MkdirAll(*apiServerPprof, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(*apiServerPprof, what+"-apiserver-cpu.pprof"), raw, 0o644)
		}
		if err != nil {
			t.Logf("API server pprof %s: %v", what, err)
		}
	}()
	// A test that fails first still waits for it, so that it never logs
	// after the test ended.
	t.Cleanup(func() { <-done })
	t.Logf("profiling the API server for %s into %s", d, *apiServerPprof)
	return func() { <-done }
}
