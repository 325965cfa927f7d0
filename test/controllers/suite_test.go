// Package controllers tests the reconcilers against a real kube-apiserver
// and etcd, with named-checkconf from Debian vetting every render.
package controllers

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/controllers/clusters"
	"git.unkin.net/unkin/bind-operator/controllers/configstatus"
	"git.unkin.net/unkin/bind-operator/controllers/dnsrecords"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/controllers/tsigkeys"
	"git.unkin.net/unkin/bind-operator/internal/version"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

var (
	cfg        *rest.Config
	k8sClient  client.Client
	reconciler *clusters.BindClusterReconciler
	ctx        = context.Background()
)

func TestMain(m *testing.M) {
	testkit.Main(m, testkit.Options{Requires: []string{"named-checkconf"}}, func(s *testkit.Suite) error {
		cfg, k8sClient = s.Config, s.Client
		checkconf, err := exec.LookPath("named-checkconf")
		if err != nil {
			return err
		}
		// The production cache scope and client: only the operator's own
		// objects are cached, anything else is read on demand.
		return s.StartManager(ctrl.Options{Cache: reconcileutil.CacheOptions(s.Config), NewClient: reconcileutil.NewClient}, func(mgr ctrl.Manager) error {
			invalidObjects = suiteRechecks.Collector(mgr.GetCache())
			reconciler = &clusters.BindClusterReconciler{
				Client: mgr.GetClient(),
				Options: clusters.ClusterOptions{
					BindImage:         version.BindImage(),
					AgentImage:        version.OperatorImage(),
					OperatorNamespace: "bind-operator-system",
					OperatorPodLabels: map[string]string{"app.kubernetes.io/name": "bind-operator"},
					NamedCheckconf:    checkconf,
				},
				Paths:              render.DefaultPaths(),
				SecretResyncPeriod: time.Second,
				Rechecks:           suiteRechecks,
			}
			if err := reconciler.SetupWithManager(mgr); err != nil {
				return err
			}
			if err := (&tsigkeys.BindTSIGKeyReconciler{Client: mgr.GetClient(), SecretResyncPeriod: time.Second, Rechecks: suiteRechecks}).SetupWithManager(mgr); err != nil {
				return err
			}
			if err := (&configstatus.ConfigStatusReconciler{Client: mgr.GetClient(), Rechecks: suiteRechecks}).SetupWithManager(mgr); err != nil {
				return err
			}
			return (&dnsrecords.DNSRecordReconciler{Client: mgr.GetClient(), Servers: resolver, ResyncPeriod: 2 * time.Second, Rechecks: suiteRechecks}).SetupWithManager(mgr)
		})
	})
}
