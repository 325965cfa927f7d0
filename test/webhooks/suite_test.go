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
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"git.unkin.net/unkin/bind-operator/certs"
	"git.unkin.net/unkin/bind-operator/internal/quota"
	"git.unkin.net/unkin/bind-operator/test/testkit"
	bindwebhooks "git.unkin.net/unkin/bind-operator/webhooks"
)

var (
	k8sClient client.Client
	restCfg   *rest.Config
	ctx       = context.Background()
	// quotas is the webhooks' quota tracker, with the default limits;
	// TestQuotas lowers them while it runs.
	quotas = quota.NewTracker(quota.DefaultLimits())
)

// podCIDR is the pod range the webhooks are configured with; pod IPs of
// the test come from the benchmarking range 198.18.0.0/15 (docs/testing.md,
// "Network rules").
var podCIDR = netip.MustParsePrefix("198.18.128.0/17")

func TestMain(m *testing.M) {
	opts := testkit.Options{Benchmarks: true, WebhookPaths: []string{filepath.Join(testkit.RepoRoot(), "config", "webhook")}}
	testkit.Main(m, opts, func(s *testkit.Suite) error {
		k8sClient, restCfg = s.Client, s.Config
		wo := s.Webhook
		err := s.StartManager(ctrl.Options{
			Scheme:                 s.Scheme,
			HealthProbeBindAddress: "0",
			WebhookServer: webhook.NewServer(webhook.Options{
				Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
				// As the manager serves them by default: HTTP/1.1 only.
				TLSOpts: certs.ServingTLSOptions(false),
			}),
		}, func(mgr ctrl.Manager) error {
			// The real named-checkconf, as the manager image ships it.
			checkconf, err := exec.LookPath("named-checkconf")
			if err != nil {
				return fmt.Errorf("named-checkconf is not installed (make deps): %w", err)
			}
			return bindwebhooks.SetupWithManager(mgr, bindwebhooks.Options{PodCIDRs: []netip.Prefix{podCIDR}, NamedCheckconf: checkconf, ConfigCheckTimeout: 8 * time.Second, Quota: quotas})
		})
		if err != nil {
			return err
		}
		// The cache has synced; the webhook server's TLS listener may
		// still be coming up.
		addr := net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))
		return testkit.Await(30*time.Second, 100*time.Millisecond, func(g Gomega) {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness probe of the test's own server
			g.Expect(err).NotTo(HaveOccurred(), "webhook server at %s", addr)
			_ = conn.Close()
		})
	})
}
