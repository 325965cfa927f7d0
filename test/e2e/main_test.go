package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// env is the one local cluster with the operator that every test of the
// package shares. Each test works in its own namespace with its own
// BindCluster objects, so tests never see each other's objects.
var env *Env

// TestMain installs the operator once, with `helm install` of the
// checkout's release: building the release and starting a real node are
// most of a run's cost, and only one local cluster may run on a machine at
// a time anyway.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "test/e2e: the end-to-end tests run a kubelet, containerd and kube-proxy and need root")
		return 1
	}
	// The API server's warnings (e.g. about a sample) reach the test output.
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	SetDefaultConsistentlyPollingInterval(time.Second)
	// The operator image may need a rebuild (a minute or three on two
	// cores), then the cluster starts and the release is installed.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	var err error
	// The flags decide how the cluster starts (-apiserver-pprof).
	flag.Parse()
	env, err = Start(ctx, Options{Install: InstallHelm, APIServerProfiling: *apiServerPprof != "", Logf: func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
	}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "test/e2e: starting the environment: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: environment up in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if code != 0 {
		printOperatorLogs(env)
	}
	env.Stop()
	return code
}

// printOperatorLogs prints the operator's logs (the tail; the whole of
// them goes to a file, since the cluster goes with Stop).
func printOperatorLogs(e *Env) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logs := e.OperatorLogs(ctx)
	fmt.Fprintf(os.Stderr, "%s\noperator logs (tails):\n%s\n", e.DescribeOperator(ctx), e.OperatorLogTails(ctx, 10000))
	kept := filepath.Join(os.TempDir(), "bind-operator-e2e-operator.log")
	if os.WriteFile(kept, []byte(logs), 0o644) == nil {
		fmt.Fprintf(os.Stderr, "full operator logs: %s\n", kept)
	}
}

// newNamespace creates a namespace for one test.
func newNamespace(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	testkit.Must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}
