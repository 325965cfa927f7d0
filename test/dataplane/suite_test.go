package dataplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/controllers"
	"git.unkin.net/unkin/bind-operator/test/envtestutil"
)

var (
	k8s client.Client
	ctx = context.Background()
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	level := zapcore.Level(2)
	if os.Getenv("TEST_VERBOSE") != "" {
		level = -1
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level)))
	if _, err := exec.LookPath("named"); err != nil {
		fmt.Fprintln(os.Stderr, "named not found: run `make deps` (BIND 9.18 from Debian)")
		return 1
	}
	env, err := envtestutil.NewEnvironment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-apiserver and etcd: %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	updates := batch.NewUpdates(0, 0)
	servers := controllers.ClusterResolver{Client: mgr.GetClient(), Endpoints: eps}
	for _, r := range []interface{ SetupWithManager(ctrl.Manager) error }{
		&controllers.DNSRecordReconciler{Client: mgr.GetClient(), Servers: servers, Updates: updates},
		&controllers.BindZoneReconciler{Client: mgr.GetClient(), Servers: servers, Endpoints: eps, Updates: updates, ResyncPeriod: time.Minute},
		&controllers.BindCatalogZoneReconciler{Client: mgr.GetClient(), Endpoints: eps, Period: 2 * time.Second},
	} {
		if err := r.SetupWithManager(mgr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	mgrCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if err := mgr.Start(mgrCtx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(mgrCtx) {
		fmt.Fprintln(os.Stderr, "cache did not sync")
		return 1
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
