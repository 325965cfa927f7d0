// Package agent_test drives the pod agent end to end: a real named from
// test/bindtest, the agent server in-process on loopback with real
// mutual TLS, and the operator's agent.Client.
package agent_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/server"
	"git.unkin.net/unkin/bind-operator/pki"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/rndc"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

type env struct {
	named      *bindtest.Server
	paths      render.Paths
	agent      *server.Agent
	client     *agent.Client
	apiAddr    string
	metricsURL string
	ca         *pki.KeyPair
	operator   *pki.KeyPair
	stop       func()
}

// startNamed starts named with a statistics channel on a free port.
func startNamed(t testing.TB, opts bindtest.Options) (*bindtest.Server, string) {
	t.Helper()
	port := testkit.FreePort(t)
	opts.Config += fmt.Sprintf("statistics-channels { inet 127.0.0.1 port %d allow { 127.0.0.1; }; };\n", port)
	s := bindtest.Start(t, opts)
	return s, fmt.Sprintf("http://127.0.0.1:%d/json/v1", port)
}

// startEnv starts named and an agent for it.
func startEnv(t testing.TB, opts bindtest.Options) *env {
	t.Helper()
	named, statsURL := startNamed(t, opts)
	return startAgent(t, named, statsURL, render.Paths{})
}

// startAgent starts an agent for named. paths zero: fresh config and keys
// dirs, named's directory as the data dir.
func startAgent(t testing.TB, named *bindtest.Server, statsURL string, paths render.Paths) *env {
	t.Helper()
	if paths == (render.Paths{}) {
		paths = render.Paths{ConfigDir: t.TempDir(), KeysDir: t.TempDir(), DataDir: named.Dir}
	}
	ca, err := agent.NewCA("test-cluster", 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := agent.IssueServer(ca, 0)
	op, _ := agent.IssueClient(ca, "bind-operator", 0)
	files := map[string][]byte{
		render.FileControl: []byte(named.ControlKey.Conf()),
		agent.FileCA:       ca.CertPEM, agent.FileServerCert: srv.CertPEM, agent.FileServerKey: srv.KeyPEM,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(paths.KeysDir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, err := server.New(server.Config{
		Paths:         paths,
		ControlAddr:   named.ControlAddr,
		StatisticsURL: statsURL,
		DNSAddr:       named.DNSAddr,
		ReadyInterval: 100 * time.Millisecond,
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, apiLn, metricsLn) }()
	e := &env{
		named: named, paths: paths, agent: a, ca: ca, operator: op,
		apiAddr:    apiLn.Addr().String(),
		metricsURL: "http://" + metricsLn.Addr().String(),
	}
	e.client, err = agent.NewClient(agent.ClientConfig{Address: e.apiAddr, CAPEM: ca.CertPEM, CertPEM: op.CertPEM, KeyPEM: op.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	var once bool
	e.stop = func() {
		if once {
			return
		}
		once = true
		e.client.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("agent did not shut down within 30s")
		}
	}
	t.Cleanup(e.stop)
	return e
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// primary returns an ensure request for a primary zone with the project's
// seed (glue for the in-zone NS so named loads it).
func (e *env) primary(view, zone string, extra string) agent.EnsureZoneRequest {
	file := e.paths.PrimaryZoneFile(view, zone)
	return agent.EnsureZoneRequest{
		View:   view,
		Zone:   zone,
		Clause: fmt.Sprintf(`{ type primary; file %q; %s};`, file, extra),
		Seed:   render.SeedZoneWithGlue(zone, nil, 0, []string{"127.0.0.1"}),
	}
}

// soa asks named over DNS for a zone's SOA serial and the rcode.
func soa(t testing.TB, addr, zone string) (uint32, int) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("SOA %s: %v", zone, err)
	}
	for _, rr := range r.Answer {
		if s, ok := rr.(*dns.SOA); ok {
			return s.Serial, r.Rcode
		}
	}
	return 0, r.Rcode
}

// readyz returns the /readyz status code.
func (e *env) readyz(t testing.TB) (int, string) {
	t.Helper()
	resp, err := http.Get(e.metricsURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// waitReady polls /readyz (bounded) until it returns want.
func (e *env) waitReady(t testing.TB, want int) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		code, body := e.readyz(t)
		g.Expect(code).To(Equal(want), "/readyz says %q", body)
	}).WithTimeout(15 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
}

// rawClient is an HTTPS client with the operator's certificate, for
// requests the typed client would never send.
func (e *env) rawClient(t testing.TB) *http.Client {
	t.Helper()
	cfg, err := agent.ClientTLSConfig(e.ca.CertPEM, e.operator.CertPEM, e.operator.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func tlsWith(t testing.TB, ca []byte, pair *pki.KeyPair) *tls.Config {
	t.Helper()
	if pair == nil {
		return &tls.Config{MinVersion: tls.VersionTLS13, ServerName: agent.ServerName, RootCAs: mustPool(t, ca)}
	}
	cfg, err := agent.ClientTLSConfig(ca, pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func mustPool(t testing.TB, pemBytes []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemBytes) {
		t.Fatal("no certificate in PEM")
	}
	return p
}

// controlSession is an rndc session to named with its control key, closed
// when the test ends: what the agent does, done by hand.
func controlSession(ctx context.Context, tb testing.TB, named *bindtest.Server) *rndc.Client {
	tb.Helper()
	key, err := rndc.NewKey(named.ControlKey.Name, named.ControlKey.Algorithm, named.ControlKey.Secret)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := rndc.Dial(ctx, named.ControlAddr, key)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
