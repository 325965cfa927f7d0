package main

import (
	"crypto/tls"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/certs"
	"git.unkin.net/unkin/bind-operator/internal/quota"
	"git.unkin.net/unkin/bind-operator/internal/version"
)

// TestAPIConfigAsksForNoGzip: requests from the manager's client, over
// HTTP/2 as to a real API server, do not offer gzip, so the API server
// sends watch events and lists uncompressed; the config it was given is
// left as it was.
func TestAPIConfigAsksForNoGzip(t *testing.T) {
	g := NewWithT(t)
	seen := make(chan string, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Proto + " Accept-Encoding=" + r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	given := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}

	hc, err := rest.HTTPClientFor(apiConfig(given))
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := hc.Get(srv.URL + "/api")
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(<-seen).To(Equal("HTTP/2.0 Accept-Encoding="))
	g.Expect(given.DisableCompression).To(BeFalse())

	// Without it, the same client offers gzip (what the test guards).
	hc, err = rest.HTTPClientFor(given)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err = hc.Get(srv.URL + "/api")
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(<-seen).To(Equal("HTTP/2.0 Accept-Encoding=gzip"))
}

// TestHTTP2OffByDefault: the webhook and metrics servers speak HTTP/1.1
// only unless --enable-http2 is given (kubebuilder's scaffold; HTTP/2
// Rapid Reset and Stream Cancellation).
func TestHTTP2OffByDefault(t *testing.T) {
	o, _, err := parseManagerFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.enableHTTP2 {
		t.Fatal("--enable-http2 defaults to true")
	}
	c := &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
	for _, opt := range certs.ServingTLSOptions(o.enableHTTP2) {
		opt(c)
	}
	if slices.Contains(c.NextProtos, "h2") || !slices.Equal(c.NextProtos, []string{"http/1.1"}) {
		t.Fatalf("NextProtos = %v, want [http/1.1]", c.NextProtos)
	}
	if opts := certs.ServingTLSOptions(true); len(opts) != 0 {
		t.Fatalf("--enable-http2 still restricts the servers (%d options)", len(opts))
	}
}

// TestMetricsNamespaceSelectorFlag: unset keeps the default (nil, so
// clusters.DefaultMetricsNamespaces applies), "" admits every
// namespace, a selector is parsed, and a malformed one is a start-up error.
func TestMetricsNamespaceSelectorFlag(t *testing.T) {
	g := NewWithT(t)
	parse := func(args ...string) (*managerOptions, error) {
		o, _, err := parseManagerFlags(args)
		return o, err
	}
	o, err := parse()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.cluster.MetricsNamespaces).To(BeNil())
	o, err = parse("--metrics-namespace-selector=")
	g.Expect(err).NotTo(HaveOccurred())
	everything, err := metav1.LabelSelectorAsSelector(o.cluster.MetricsNamespaces)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(everything.Empty()).To(BeTrue(), "%v selects every namespace", o.cluster.MetricsNamespaces)
	o, err = parse("--metrics-namespace-selector=kubernetes.io/metadata.name in (monitoring,observability)")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.cluster.MetricsNamespaces.MatchExpressions).To(ConsistOf(metav1.LabelSelectorRequirement{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"monitoring", "observability"},
	}))
	_, err = parse("--metrics-namespace-selector=a b c")
	g.Expect(err).To(MatchError(ContainSubstring("not a label selector")))
}

// TestImageFlagDefaults: the images of clusters that pin none follow the
// release, and the allowed list the webhook and the controller share is
// derived from the image flags unless given.
func TestImageFlagDefaults(t *testing.T) {
	g := NewWithT(t)
	o, _, err := parseManagerFlags(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.cluster.BindImage).To(Equal(version.BindImage()))
	g.Expect(o.cluster.AgentImage).To(Equal(version.OperatorImage()))
	repo := version.Repository()
	g.Expect(o.cluster.AllowedImages).To(Equal([]string{
		repo + "/bind-operator-bind9:", repo + "/bind-operator-bind9@",
		repo + "/bind-operator:", repo + "/bind-operator@",
	}))

	o, _, err = parseManagerFlags([]string{"--bind-image=mirror.example/bind9:1", "--agent-image=mirror.example/op@sha256:00"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.cluster.AllowedImages).To(Equal([]string{"mirror.example/bind9:", "mirror.example/bind9@", "mirror.example/op:", "mirror.example/op@"}))

	o, _, err = parseManagerFlags([]string{"--allowed-images= a.example/ , *"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.cluster.AllowedImages).To(Equal([]string{"a.example/", "*"}))
}

// TestQuotaFlags: the quotas default to internal/quota's, take counts and
// byte quantities, 0 turns one off, and a negative or malformed value is a
// start-up error that names the flag.
func TestQuotaFlags(t *testing.T) {
	g := NewWithT(t)
	o, _, err := parseManagerFlags(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.quota).To(Equal(quota.DefaultLimits()))

	o, _, err = parseManagerFlags([]string{"--quota-namespace-objects=500", "--quota-namespace-bytes=4Mi", "--quota-zone-records=0", "--quota-zone-bytes=1048576"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.quota).To(Equal(quota.Limits{NamespaceObjects: 500, NamespaceBytes: 4 << 20, ZoneRecords: 0, ZoneBytes: 1 << 20}))

	for _, bad := range []string{"--quota-namespace-objects=-1", "--quota-zone-bytes=-1Mi"} {
		_, _, err = parseManagerFlags([]string{bad})
		g.Expect(err).To(MatchError(ContainSubstring("a limit is 0 (none) or more")), bad)
	}
	_, _, err = parseManagerFlags([]string{"--quota-namespace-bytes=lots"})
	g.Expect(err).To(MatchError(ContainSubstring("quota-namespace-bytes")))
	_, _, err = parseManagerFlags([]string{"--quota-zone-bytes=1.5"})
	g.Expect(err).To(MatchError(ContainSubstring("not a whole number of bytes")))

	// The help shows the defaults as users write them.
	var help strings.Builder
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	var l quota.Limits
	bindQuotaFlags(fs, &l)
	fs.SetOutput(&help)
	fs.PrintDefaults()
	g.Expect(help.String()).To(ContainSubstring("(default 16Mi)"))
	g.Expect(help.String()).To(ContainSubstring("(default 8Mi)"))
	g.Expect(help.String()).To(ContainSubstring("(default 20000)"))
}

// The ServiceMonitor verifies the metrics endpoint by the name it gives
// as serverName: the certificate the manager issues with its default
// flags (self-managed) carries that name, for the namespace the install
// files use.
func TestServiceMonitorServerNameIsInTheCertificate(t *testing.T) {
	b, err := os.ReadFile("../config/monitoring/servicemonitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sm struct {
		Spec struct {
			Endpoints []struct {
				TLSConfig struct {
					ServerName string `json:"serverName"`
				} `json:"tlsConfig"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &sm); err != nil || len(sm.Spec.Endpoints) == 0 {
		t.Fatalf("servicemonitor.yaml: %v", err)
	}
	o, _, err := parseManagerFlags([]string{"--webhook-cert-mode=self-managed", "--webhook-cert-namespace=bind-operator-system"})
	if err != nil {
		t.Fatal(err)
	}
	names := o.certs.Options.DNSNames()
	for _, e := range sm.Spec.Endpoints {
		if !slices.Contains(names, e.TLSConfig.ServerName) {
			t.Errorf("the ServiceMonitor verifies %q, which the serving certificate (%v) does not name", e.TLSConfig.ServerName, names)
		}
	}
}
