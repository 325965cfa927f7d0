package rbac

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"git.unkin.net/unkin/bind-operator/internal/metricsauth"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestMetricsEndpointAuth serves the manager's metrics as cmd/manager does
// (HTTPS, internal/metricsauth), with the manager's ServiceAccount asking
// the reviews, and scrapes it as three callers: nobody, a ServiceAccount
// bound to the shipped metrics-reader ClusterRole (Prometheus), and one
// bound to nothing.
func TestMetricsEndpointAuth(t *testing.T) {
	g := NewWithT(t)
	c, err := kubernetes.NewForConfig(adminConfig)
	g.Expect(err).NotTo(HaveOccurred())

	const ns = "monitoring"
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	token := func(sa string) string {
		_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return tr.Status.Token
	}
	prometheus, stranger := token("prometheus"), token("stranger")
	_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-bind-operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	httpClient, err := rest.HTTPClientFor(saConfig)
	g.Expect(err).NotTo(HaveOccurred())
	srv, err := metricsserver.NewServer(metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: metricsauth.Filter}, saConfig, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Start(sctx) }()
	t.Cleanup(func() { stop(); <-done })

	// The endpoint's certificate is its own, self-signed.
	scraper := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test of authorisation, not of the certificate
	scrape := func(method, token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, "https://"+addr+"/metrics", nil)
		g.Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := scraper.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(body)
	}
	g.Eventually(func() int { code, _ := scrape(http.MethodGet, ""); return code }).
		WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).
		Should(Equal(http.StatusUnauthorized), "a scrape without a token")

	for _, tc := range []struct {
		desc, method, token string
		code                int
		body                string
	}{
		{"a token the API server did not issue", http.MethodGet, "not-a-token", http.StatusUnauthorized, "Unauthorized"},
		{"a ServiceAccount bound to nothing", http.MethodGet, stranger, http.StatusForbidden, `"system:serviceaccount:monitoring:stranger" may not get /metrics`},
		{"Prometheus, bound to metrics-reader", http.MethodGet, prometheus, http.StatusOK, "# HELP"},
		{"Prometheus again", http.MethodGet, prometheus, http.StatusOK, "# HELP"},
		{"Prometheus with a verb metrics-reader does not grant", http.MethodPost, prometheus, http.StatusForbidden, `may not post /metrics`},
	} {
		code, body := scrape(tc.method, tc.token)
		g.Expect(code).To(Equal(tc.code), "%s: %s", tc.desc, body)
		g.Expect(body).To(ContainSubstring(tc.body), tc.desc)
		g.Expect(body).NotTo(ContainSubstring(prometheus), "%s: the answer never holds a token", tc.desc)
	}
	for _, r := range refused.all() {
		g.Expect(strings.Contains(r, "tokenreviews") || strings.Contains(r, "subjectaccessreviews")).To(BeFalse(),
			"the manager's ServiceAccount was refused a review: %s", r)
	}
}
