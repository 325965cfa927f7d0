// Package controllers tests the reconcilers against a real kube-apiserver
// and etcd, with named-checkconf from Debian vetting every render.
package controllers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/envtestutil"
)

var (
	cfg        *rest.Config
	k8sClient  client.Client
	reconciler *controllers.BindClusterReconciler
	ctx        = context.Background()
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(zapLevel()))))
	checkconf, err := exec.LookPath("named-checkconf")
	if err != nil {
		fmt.Fprintln(os.Stderr, "named-checkconf not found: run `make deps` (BIND 9.18 from Debian)")
		return 1
	}
	env, err := envtestutil.NewEnvironment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, err = env.Start()
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
	reconciler = &controllers.BindClusterReconciler{
		Client: mgr.GetClient(),
		Options: controllers.ClusterOptions{
			BindImage:         v1.DefaultBindImage,
			AgentImage:        controllers.DefaultAgentImage,
			OperatorNamespace: "bind-operator-system",
			OperatorPodLabels: map[string]string{"app.kubernetes.io/name": "bind-operator"},
			NamedCheckconf:    checkconf,
		},
		Paths: render.DefaultPaths(),
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := (&controllers.BindTSIGKeyReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := (&controllers.DNSRecordReconciler{Client: mgr.GetClient(), Servers: resolver, ResyncPeriod: 2 * time.Second}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
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
	k8sClient, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// zapLevel keeps the manager quiet unless TEST_VERBOSE is set.
func zapLevel() int8 {
	if os.Getenv("TEST_VERBOSE") != "" {
		return -1
	}
	return 2
}
