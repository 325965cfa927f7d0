// Package e2e runs the operator exactly as it runs in a cluster — the real
// binary with its admission webhooks — against the local cluster of
// test/localcluster, where BIND pods are real named processes with their own
// IPs. The end-to-end tests and `make demo` both start it through Start.
package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"git.unkin.net/unkin/bind-operator/test/envtestutil"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
)

// Env is a local cluster with the operator running against it.
type Env struct {
	Cluster *localcluster.Cluster
	Client  client.Client
	// OperatorLog is the manager's stdout and stderr.
	OperatorLog string

	manager *exec.Cmd
	done    chan error
	ownWork string
}

// Options configure Start.
type Options struct {
	// WorkDir receives the operator binary and its log (default: a new
	// temporary folder, removed by Stop).
	WorkDir string
	// Logf receives progress lines.
	Logf func(format string, args ...any)
}

// Start builds the operator, starts the local cluster with the CRDs and the
// webhook configurations of config/webhook, runs `bind-operator manager`
// on the host as the cluster's operator, and waits until its webhooks serve.
func Start(ctx context.Context, opts Options) (*Env, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	root := envtestutil.RepoRoot()
	work := opts.WorkDir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "bind-operator-e2e-"); err != nil {
			return nil, err
		}
	}
	binary := filepath.Join(work, "bind-operator")
	logf("building the operator")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the operator: %v\n%s", err, out)
	}

	var webhookOpts *envtest.WebhookInstallOptions
	logf("starting the local cluster")
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		OperatorBinary:    binary,
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
		RequireNamed:      true,
		Logf:              logf,
		ConfigureEnvironment: func(env *envtest.Environment) {
			env.WebhookInstallOptions = envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook")}}
			webhookOpts = &env.WebhookInstallOptions
		},
	})
	if err != nil {
		return nil, err
	}
	e := &Env{Cluster: cluster, OperatorLog: filepath.Join(work, "operator.log"), done: make(chan error, 1)}
	if opts.WorkDir == "" {
		e.ownWork = work
	}
	scheme := envtestutil.Scheme()
	if e.Client, err = client.New(cluster.Config(), client.Options{Scheme: scheme}); err != nil {
		e.Stop()
		return nil, err
	}
	if err := e.startManager(binary, webhookOpts); err != nil {
		e.Stop()
		return nil, err
	}
	addr := net.JoinHostPort(webhookOpts.LocalServingHost, strconv.Itoa(webhookOpts.LocalServingPort))
	logf("waiting for the operator's webhooks on %s", addr)
	if err := e.waitServing(ctx, addr, 60*time.Second); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) startManager(binary string, w *envtest.WebhookInstallOptions) error {
	log, err := os.Create(e.OperatorLog)
	if err != nil {
		return err
	}
	cmd := exec.Command(binary, "manager",
		"--webhook-port="+strconv.Itoa(w.LocalServingPort),
		"--webhook-cert-dir="+w.LocalServingCertDir,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		// The local cluster's pods live in 198.18.0.0/16.
		"--pod-cidrs=198.18.0.0/16",
		"--operator-namespace=default",
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.Cluster.KubeconfigPath())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	e.manager = cmd
	go func() { e.done <- cmd.Wait(); log.Close() }()
	return nil
}

// waitServing waits until the webhook server completes a TLS handshake.
func (e *Env) waitServing(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-e.done:
			return fmt.Errorf("the operator exited before serving (log: %s): %v", e.OperatorLog, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness only
		if err == nil {
			conn.Close()
			return nil
		}
	}
	return errors.New("the operator's webhook server did not come up within " + timeout.String() + "; see " + e.OperatorLog)
}

// Stop stops the operator and the cluster, removing everything they made.
func (e *Env) Stop() {
	if e.manager != nil && e.manager.Process != nil {
		_ = e.manager.Process.Signal(os.Interrupt)
		select {
		case <-e.done:
		case <-time.After(10 * time.Second):
			_ = e.manager.Process.Kill()
			<-e.done
		}
	}
	if e.Cluster != nil {
		e.Cluster.Stop()
	}
	if e.ownWork != "" {
		_ = os.RemoveAll(e.ownWork)
	}
}

// OperatorLogTail returns the last n bytes of the operator's log.
func (e *Env) OperatorLogTail(n int) string {
	b, err := os.ReadFile(e.OperatorLog)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
