package certmanager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"git.unkin.net/unkin/bind-operator/test/e2e"
)

// env is the local cluster with cert-manager's CRDs, the stand-in, and the
// operator installed from the release's install-cert-manager.yaml.
var env *e2e.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "test/e2e/certmanager: the end-to-end tests run a kubelet, containerd and kube-proxy and need root")
		return 1
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	var err error
	env, err = e2e.Start(ctx, e2e.Options{
		Install:       e2e.InstallManifestsCertManager,
		BeforeInstall: Install,
		Logf:          func(format string, args ...any) { fmt.Fprintf(os.Stderr, "e2e/certmanager: "+format+"\n", args...) },
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "test/e2e/certmanager: starting the environment: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e/certmanager: environment up in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if code != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		logs := env.OperatorLogs(ctx)
		fmt.Fprintf(os.Stderr, "%s\noperator logs (tails):\n%s\n", env.DescribeOperator(ctx), env.OperatorLogTails(ctx, 10000))
		kept := filepath.Join(os.TempDir(), "bind-operator-e2e-certmanager-operator.log")
		if os.WriteFile(kept, []byte(logs), 0o644) == nil {
			fmt.Fprintf(os.Stderr, "full operator logs: %s\n", kept)
		}
		cancel()
	}
	env.Stop()
	return code
}
