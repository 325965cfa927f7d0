// Package webhooks tests the admission webhooks end to end: a real
// kube-apiserver with the CRDs and the webhook configurations generated
// into config/webhook, calling a controller-runtime webhook server that runs
// webhooks.SetupWithManager. Every object goes through the API server, so
// what is asserted here is what kubectl users see.
package webhooks

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"git.unkin.net/unkin/bind-operator/test/envtestutil"
	bindwebhooks "git.unkin.net/unkin/bind-operator/webhooks"
)

var (
	k8sClient client.Client
	restCfg   *rest.Config
	ctx       = context.Background()
)

// podCIDR is the pod range the webhooks are configured with; pod IPs of
// the test come from the benchmarking range 198.18.0.0/15 (DESIGN §7).
var podCIDR = netip.MustParsePrefix("198.18.128.0/17")

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := envtestutil.NewEnvironment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.WebhookInstallOptions = envtest.WebhookInstallOptions{
		Paths: []string{filepath.Join(envtestutil.RepoRoot(), "config", "webhook")},
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-apiserver and etcd: %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	restCfg = cfg

	wo := &env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		}),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := bindwebhooks.SetupWithManager(mgr, bindwebhooks.Options{PodCIDRs: []netip.Prefix{podCIDR}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if err := mgr.Start(mctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	// Bounded wait for the webhook server's TLS listener.
	addr := net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness probe of the test's own server
		if err == nil {
			_ = conn.Close()
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "webhook server at %s not ready after 30s: %v\n", addr, err)
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
	k8sClient, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
