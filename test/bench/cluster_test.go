package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/pki"
	"git.unkin.net/unkin/bind-operator/agent/server"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/bindtest"
	"git.unkin.net/unkin/bind-operator/render"
)

// A bench cluster is what the operator runs as a BindCluster, on loopback:
// named.conf, keys and entrypoint rendered by render.Render (so the
// replication tuning is the operator's), every named with its agent
// in-process over mutual TLS. Secondaries transfer from the primary at
// [::1] (the Service address) and get NOTIFY from 127.0.0.1 (the pod IP),
// accepted because it is signed with the transfer key.

type benchNode struct {
	primary                     bool
	paths                       render.Paths
	dnsPort, ctlPort, statsPort int
	agent                       *agent.Client

	mu   sync.Mutex
	log  bytes.Buffer
	cmd  *exec.Cmd
	done chan struct{}
}

func (n *benchNode) dnsAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.dnsPort)) }

func (n *benchNode) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.log.Len() < 1<<20 {
		n.log.Write(p)
	}
	return len(p), nil
}

func (n *benchNode) logTail() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	lines := strings.Split(strings.TrimRight(n.log.String(), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

type benchCluster struct {
	b       testing.TB
	cluster *v1.BindCluster
	keys    map[string]render.TSIGKey
	ctlKey  render.TSIGKey
	nodes   []*benchNode // primary first
}

func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// startCluster starts a primary and `secondaries` secondaries with the
// given spec.tuning (zero value: the operator's defaults).
func startCluster(b testing.TB, tuning v1.ReplicationTuning, secondaries int) *benchCluster {
	b.Helper()
	c := &benchCluster{b: b, keys: map[string]render.TSIGKey{}, ctlKey: render.TSIGKey{Name: "bind-operator-control", Algorithm: "hmac-sha256", Secret: secret()}}
	for _, k := range []string{"transfer", "upd"} {
		c.keys[k] = render.TSIGKey{Name: k, Algorithm: "hmac-sha256", Secret: secret()}
	}
	c.cluster = &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "bench"}, Spec: v1.BindClusterSpec{
		Mode: v1.ModeAuthoritative, Replicas: ptr(int32(1 + secondaries)), TransferKeyRef: &v1.LocalObjectReference{Name: "transfer"}, Tuning: tuning,
	}}
	ca, err := pki.NewCA("bench", 0)
	must(b, err)
	op, err := ca.IssueClient("bind-operator", 0)
	must(b, err)
	for i := 0; i <= secondaries; i++ {
		root := b.TempDir()
		n := &benchNode{primary: i == 0, paths: render.Paths{ConfigDir: filepath.Join(root, "config"), KeysDir: filepath.Join(root, "keys"), DataDir: filepath.Join(root, "data")}}
		for _, d := range []string{n.paths.ConfigDir, n.paths.KeysDir, n.paths.DataDir} {
			must(b, os.MkdirAll(d, 0o755))
		}
		n.dnsPort, n.ctlPort, n.statsPort = bindtest.FreePort(b), bindtest.FreePort(b), bindtest.FreePort(b)
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		c.render(n, ca)
		c.startNamed(n)
		c.startAgent(n, ca, op)
	}
	return c
}

func (c *benchCluster) input(n *benchNode) render.Input {
	cc := c.cluster.DeepCopy()
	cc.Spec.Ports.DNS = int32(n.dnsPort)
	return render.Input{Cluster: cc, PrimaryAddress: "::1", PrimaryPort: int32(c.nodes[0].dnsPort), ControlKey: c.ctlKey, Keys: c.keys, Paths: n.paths}
}

// render writes n's rendered files and moves the in-pod fixed ports to n's
// loopback ports.
func (c *benchCluster) render(n *benchNode, ca *pki.CA) {
	res, err := render.Render(c.input(n))
	must(c.b, err)
	for name, data := range res.ConfigData {
		if strings.HasPrefix(name, "named.conf.") {
			data = strings.NewReplacer(
				fmt.Sprintf("port %d allow", render.ControlPort), fmt.Sprintf("port %d allow", n.ctlPort),
				fmt.Sprintf("port %d allow", render.StatisticsPort), fmt.Sprintf("port %d allow", n.statsPort),
				fmt.Sprintf("listen-on port %d { any; };", n.dnsPort), fmt.Sprintf("listen-on port %d { 127.0.0.1; };", n.dnsPort),
				fmt.Sprintf("listen-on-v6 port %d { any; };", n.dnsPort), fmt.Sprintf("listen-on-v6 port %d { ::1; };", n.dnsPort),
			).Replace(data)
		}
		must(c.b, os.WriteFile(filepath.Join(n.paths.ConfigDir, name), []byte(data), 0o644))
	}
	for name, data := range res.SecretData {
		must(c.b, os.WriteFile(filepath.Join(n.paths.KeysDir, name), data, 0o600))
	}
	srv, err := ca.IssueServer(0)
	must(c.b, err)
	for name, data := range map[string][]byte{pki.FileCA: ca.CertPEM, pki.FileServerCert: srv.CertPEM, pki.FileServerKey: srv.KeyPEM} {
		must(c.b, os.WriteFile(filepath.Join(n.paths.KeysDir, name), data, 0o600))
	}
	// One worker thread per named: the machine is shared.
	must(c.b, os.WriteFile(filepath.Join(n.paths.ConfigDir, "named-wrapper.sh"), []byte("#!/bin/sh\nexec named -n 1 \"$@\"\n"), 0o755))
}

func (c *benchCluster) startNamed(n *benchNode) {
	c.b.Helper()
	role := "secondary"
	if n.primary {
		role = "primary"
	}
	cmd := exec.Command("sh", filepath.Join(n.paths.ConfigDir, render.FileEntrypoint))
	cmd.Env = append(os.Environ(), "BIND_ROLE="+role, "NAMED_BIN="+filepath.Join(n.paths.ConfigDir, "named-wrapper.sh"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = n, n
	must(c.b, cmd.Start())
	n.cmd, n.done = cmd, make(chan struct{})
	done := n.done
	go func() { _ = cmd.Wait(); close(done) }()
	c.b.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	m := new(dns.Msg)
	m.SetQuestion("version.bind.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	for {
		if r, _, err := (&dns.Client{Timeout: 200 * time.Millisecond}).Exchange(m, n.dnsAddr()); err == nil && r != nil {
			if conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n.ctlPort)), time.Second); err == nil {
				_ = conn.Close()
				return
			}
		}
		select {
		case <-done:
			c.b.Fatalf("named (%s) exited during start-up:\n%s", role, n.logTail())
		default:
		}
		if time.Now().After(deadline) {
			c.b.Fatalf("named (%s) not answering after 15s:\n%s", role, n.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *benchCluster) startAgent(n *benchNode, ca *pki.CA, op pki.Pair) {
	c.b.Helper()
	a, err := server.New(server.Config{
		Paths:         n.paths,
		ControlAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(n.ctlPort)),
		StatisticsURL: fmt.Sprintf("http://127.0.0.1:%d/json/v1", n.statsPort),
		DNSAddr:       n.dnsAddr(),
		Logger:        slog.New(slog.DiscardHandler),
	})
	must(c.b, err)
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	must(c.b, err)
	metricsLn, err := net.Listen("tcp", "127.0.0.1:0")
	must(c.b, err)
	actx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(actx, apiLn, metricsLn) }()
	n.agent, err = agent.NewClient(agent.ClientConfig{Address: apiLn.Addr().String(), CAPEM: ca.CertPEM, CertPEM: op.CertPEM, KeyPEM: op.KeyPEM, Timeout: 5 * time.Minute})
	must(c.b, err)
	c.b.Cleanup(func() {
		n.agent.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			c.b.Errorf("agent did not stop within 30s")
		}
	})
}

// zone is a primary BindZone of the cluster, updatable with key "upd".
func (c *benchCluster) zone(name string) *v1.BindZone {
	return &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: strings.ReplaceAll(name, ".", "-"), Namespace: "bench"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: v1.DomainName(name), Type: v1.ZonePrimary,
		UpdateKeyRef: &v1.LocalObjectReference{Name: "upd"},
	}}
}

// ensureRequest is what the BindZone controller sends the agent of n for
// zone: the rendered runtime clause (primary: with also-notify naming
// notify; secondary: transferring from [::1] keyed) and, on the primary,
// the seed.
func (c *benchCluster) ensureRequest(n *benchNode, z *v1.BindZone, notify []string) agent.EnsureZoneRequest {
	c.b.Helper()
	zc, err := render.NewZoneClauses(c.input(n))
	must(c.b, err)
	role := render.ZoneRoleSecondary
	if n.primary {
		role = render.ZoneRolePrimary
	}
	clause, err := zc.Clause(z, role, notify)
	must(c.b, err)
	req := agent.EnsureZoneRequest{Zone: string(z.Spec.ZoneName), Clause: clause}
	if n.primary {
		req.Seed = render.SeedZone(string(z.Spec.ZoneName), &v1.SOASpec{PrimaryNameServer: "dns.bench.svc.cluster.local."}, 0)
	}
	return req
}

// addZone adds z on every node through the agents, the way the BindZone
// controller does for a zone outside catalogs. notify=false leaves
// also-notify out (and so, with `notify explicit`, every NOTIFY).
func (c *benchCluster) addZone(z *v1.BindZone, notify bool) {
	c.b.Helper()
	var targets []string
	if notify {
		for _, s := range c.nodes[1:] {
			targets = append(targets, s.dnsAddr())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range c.nodes {
		if _, err := n.agent.EnsureZone(ctx, c.ensureRequest(n, z, targets)); err != nil {
			c.b.Fatalf("ensure %s: %v", z.Spec.ZoneName, err)
		}
	}
	for _, n := range c.nodes {
		deadline := time.Now().Add(15 * time.Second)
		for !soaServed(n.dnsAddr(), string(z.Spec.ZoneName)) {
			if time.Now().After(deadline) {
				c.b.Fatalf("zone %s not served within 15s:\n%s", z.Spec.ZoneName, n.logTail())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func soaServed(addr, zone string) bool {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
	return err == nil && r.Rcode == dns.RcodeSuccess && r.Authoritative && len(r.Answer) > 0
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return string(out), err
}
