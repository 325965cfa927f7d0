package main

import (
	"context"
	"crypto/x509/pkix"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/certs"
	"git.unkin.net/unkin/bind-operator/internal/version"
	"git.unkin.net/unkin/bind-operator/pki"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestAlertsReadOperatorMetrics (issue 45 item 4): every operator metric
// the shipped alerts read (config/monitoring/prometheusrule.yaml) is one
// the manager exports: controller-runtime's (its registry, with a running
// controller and an instrumented webhook as the leader has them)
// and the operator's own, registered as runManager registers them. An
// upgrade of controller-runtime that renames a metric, or a metric of ours
// removed, fails here; test/agent checks the agents' metrics the same way.
func TestAlertsReadOperatorMetrics(t *testing.T) {
	g := NewWithT(t)

	// A controller as the manager's leader runs them (the default queue,
	// controller-runtime's priority queue), one object through it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reconciled := make(chan struct{}, 1)
	c, err := controller.NewUnmanaged("alertmetricstest", controller.Options{
		SkipNameValidation: ptr.To(true),
		Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			select {
			case reconciled <- struct{}{}:
			default:
			}
			return reconcile.Result{}, nil
		}),
	})
	g.Expect(err).NotTo(HaveOccurred())
	events := make(chan event.GenericEvent, 1)
	g.Expect(c.Watch(source.Channel(events, &handler.EnqueueRequestForObject{}))).To(Succeed())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = c.Start(ctx) }()
	defer func() { cancel(); <-stopped }()
	events <- event.GenericEvent{Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}}
	g.Eventually(reconciled, 10*time.Second).Should(Receive())

	// A webhook, one request through it.
	srv := webhook.NewServer(webhook.Options{})
	srv.Register("/alertmetricstest", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.WebhookMux().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/alertmetricstest", nil))

	// The operator's own, on a registry of their own (runManager puts
	// them on controller-runtime's, where other tests may have put them).
	scheme := runtime.NewScheme()
	g.Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	cluster := &bindv1alpha1.BindCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "dns"}}
	cluster.Status.Conditions = []metav1.Condition{{Type: bindv1alpha1.ConditionConfigValid, Status: metav1.ConditionTrue, Reason: bindv1alpha1.ReasonConfigValid, LastTransitionTime: metav1.Now()}}
	certDir := t.TempDir()
	ca, err := pki.NewCA(pkix.Name{CommonName: "test"}, time.Now(), time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(certDir, certs.KeyTLSCert), pki.EncodeCerts(ca.Cert), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(certDir, certs.KeyCACert), pki.EncodeCerts(ca.Cert), 0o600)).To(Succeed())
	own := prometheus.NewRegistry()
	g.Expect(version.Register(own)).To(Succeed())
	g.Expect(registerAlertMetrics(own, fake.NewClientBuilder().WithScheme(scheme).WithObjects(cluster).Build(), certDir)).To(Succeed())

	families := map[string]bool{}
	gathered, err := prometheus.Gatherers{crmetrics.Registry, own}.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range gathered {
		families[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				families[f.GetName()+s] = true
			}
		}
	}

	read := map[string]bool{}
	for _, r := range testkit.AlertRules(t) {
		for _, n := range testkit.MetricNames(r.Expr) {
			if !testkit.OperatorMetric(n) {
				continue
			}
			read[n] = true
			g.Expect(families).To(HaveKey(n), "alert %s reads %s, which the manager does not export", r.Alert, n)
		}
	}
	g.Expect(read).To(HaveKey(certs.ExpiryMetric))
	t.Logf("the alerts' %d operator metrics are all exported: %v", len(read), slices.Sorted(maps.Keys(read)))
}
