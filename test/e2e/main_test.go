package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// env is the one local cluster with the operator that every test of the
// package shares. Each test works in its own namespace with its own
// BindCluster objects, so tests never see each other's objects.
var env *Env

// TestMain starts the shared environment once: building the operator and
// starting the control plane is most of a test's cost, and only one local
// cluster may run on a machine at a time anyway.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "test/e2e: the end-to-end tests run pods in network namespaces and need root")
		return 1
	}
	// The API server's warnings (e.g. about a sample) reach the test output.
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	var err error
	env, err = Start(ctx, Options{Logf: func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
	}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "test/e2e: starting the environment: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: environment up in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "operator log (tail):\n%s\n", env.OperatorLogTail(6000))
		// The work folder goes with Stop; keep the whole log for a look.
		if b, err := os.ReadFile(env.OperatorLog); err == nil {
			kept := filepath.Join(os.TempDir(), "bind-operator-e2e-operator.log")
			if os.WriteFile(kept, b, 0o644) == nil {
				fmt.Fprintf(os.Stderr, "full operator log: %s\n", kept)
			}
		}
	}
	env.Stop()
	return code
}

// newNamespace creates a namespace for one test.
func newNamespace(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}
