package e2e

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// operatorPprof is where the benchmarks save the operator leader's
// profiles while they run; empty (the default) turns the endpoint off.
var operatorPprof = flag.String("operator-pprof", "", "a folder: the benchmarks start the manager with its pprof endpoint and save the leader's CPU profile and goroutines there while they run")

const operatorPprofPort = "8082"

// operatorEnv is environment the records bench gives the manager, such
// as GOMEMLIMIT=64MiB or GOGC=50, to measure what bounding its memory
// costs (docs/behaviours.md, "the manager's memory"); empty (the default)
// runs it as shipped.
var operatorEnv = flag.String("operator-env", "", "comma-separated NAME=VALUE pairs (such as GOGC=50,GOMEMLIMIT=80MiB) TestInClusterBench sets on the manager before it measures")

// setOperatorEnv sets -operator-env on the manager's Deployment, which
// rolls it; the caller waits for the rollout.
func setOperatorEnv(ctx context.Context, t *testing.T) {
	t.Helper()
	if *operatorEnv == "" {
		return
	}
	pairs := strings.Split(*operatorEnv, ",")
	for _, p := range pairs {
		if name, _, ok := strings.Cut(p, "="); !ok || name == "" {
			t.Fatalf("-operator-env: %q is not NAME=VALUE", p)
		}
	}
	args := append([]string{"-n", OperatorNamespace, "set", "env", "deployment/" + OperatorDeployment}, pairs...)
	_, err := env.Kubectl(ctx, "", args...)
	testkit.Must(t, err)
	t.Logf("the manager runs with %s", strings.Join(pairs, " "))
}

// enableOperatorPprof adds --pprof-bind-address to the manager's
// arguments when -operator-pprof is set; the caller restarts the operator.
// The endpoint is unauthenticated, so it is only ever on in a test cluster.
func enableOperatorPprof(ctx context.Context, t *testing.T) {
	t.Helper()
	if *operatorPprof == "" {
		return
	}
	_, err := env.Kubectl(ctx, "", "-n", OperatorNamespace, "patch", "deployment/"+OperatorDeployment, "--type=json", "-p",
		`[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--pprof-bind-address=:`+operatorPprofPort+`"}]`)
	testkit.Must(t, err)
}

// profileLeader saves, in the -operator-pprof folder, a CPU profile of
// the operator's leader over d, its goroutines at the start and the end
// and its heap, named after what. It runs in the background; the
// returned function waits for it. Failures are logged, not fatal: a
// profile is an aid.
func profileLeader(ctx context.Context, t *testing.T, what string, d time.Duration) (wait func()) {
	return inBackground(t, leaderPprof(ctx, t, what), func(save saveFunc) {
		save("goroutine?debug=1", "goroutines-start.txt", 30*time.Second)
		save(fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), "cpu.pprof", d+30*time.Second)
		save("goroutine?debug=1", "goroutines-end.txt", 30*time.Second)
		save("heap", "heap.pprof", 30*time.Second)
		// The text form ends with runtime.MemStats: the heap's goal,
		// what is idle or released, and the stacks.
		save("heap?debug=1", "heap.txt", 30*time.Second)
	})
}

// profileLeaderCPU is profileLeader without the goroutine and heap dumps,
// for a phase whose latencies are measured: a dump stops the leader's
// world, and the profile ends before the phase does.
func profileLeaderCPU(ctx context.Context, t *testing.T, what string, d time.Duration) (wait func()) {
	return inBackground(t, leaderPprof(ctx, t, what), func(save saveFunc) {
		save(fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), "cpu.pprof", d+30*time.Second)
	})
}

// saveFunc saves one of the leader's pprof endpoints into a file.
type saveFunc func(path, file string, timeout time.Duration)

// leaderPprof is the saveFunc of the current leader for what, or nil when
// -operator-pprof is off or the leader is not on a test address.
func leaderPprof(ctx context.Context, t *testing.T, what string) saveFunc {
	if *operatorPprof == "" {
		return nil
	}
	leader := leaderPod(ctx, t)
	// Tests talk only to loopback and the test range (docs/testing.md).
	if ip, err := netip.ParseAddr(leader.Status.PodIP); err != nil || !localcluster.IsTestHost(ip) {
		t.Logf("operator pprof: the leader's address %q is outside the test range; not profiling", leader.Status.PodIP)
		return nil
	}
	t.Logf("profiling the operator's leader %s (%s) into %s", leader.Name, what, *operatorPprof)
	base := "http://" + net.JoinHostPort(leader.Status.PodIP, operatorPprofPort) + "/debug/pprof/"
	return func(path, file string, timeout time.Duration) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := fetchTo(ctx, base+path, filepath.Join(*operatorPprof, what+"-"+file)); err != nil {
			t.Logf("operator pprof %s: %v", path, err)
		}
	}
}

// inBackground runs saves with save in a goroutine and returns a wait for
// it; with no save it does nothing. A test that fails first still waits
// for it, so that it never logs after the test ended.
func inBackground(t *testing.T, save saveFunc, saves func(saveFunc)) (wait func()) {
	if save == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		saves(save)
	}()
	t.Cleanup(func() { <-done })
	return func() { <-done }
}

func fetchTo(ctx context.Context, url, file string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, res.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(res.Body, 256<<20)); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
