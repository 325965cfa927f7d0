// Package dataplane runs the zone controllers against real BIND: an
// envtest API server with the manager, and a primary plus two secondaries
// as real named processes on loopback (distinct ports), each with its pod
// agent in-process over real mutual TLS, their configs rendered by render/.
//
// To reproduce "NOTIFY from a non-primary address" (DESIGN §3.4) the
// secondaries transfer from the primary at [::1] (the stand-in for the
// primary Service ClusterIP) while the primary's NOTIFYs leave from
// 127.0.0.1 (the stand-in for its pod IP): they are accepted only because
// they are signed with the transfer key K.
package dataplane

import (
	"bytes"
	"context"
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent/pki"
	"git.unkin.net/unkin/bind-operator/agent/server"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers"
	"git.unkin.net/unkin/bind-operator/internal/bindtest"
	"git.unkin.net/unkin/bind-operator/render"
)

// node is one BIND "pod": named and its agent.
type node struct {
	name      string
	primary   bool
	host      string // the "pod IP" named answers on; "" is 127.0.0.1 (guarded by mu once running)
	paths     render.Paths
	dnsPort   int
	ctlPort   int
	statsPort int
	agentAddr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}

	stopAgent func()
}

func (n *node) dnsAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	host := n.host
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(n.dnsPort))
}

func (n *node) agentEndpoint() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.agentAddr
}

// Log is what named wrote so far.
func (n *node) Log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log.String()
}

type lockedWriter struct {
	n *node
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.n.mu.Lock()
	defer w.n.mu.Unlock()
	if w.n.log.Len() > 8<<20 {
		return len(p), nil
	}
	return w.n.log.Write(p)
}

// cluster is a BindCluster whose pods are nodes on loopback.
type cluster struct {
	t       *testing.T
	ns      string
	name    string
	nodes   []*node // primary first
	ca      *pki.CA
	ctlKey  render.TSIGKey
	keys    map[string]render.TSIGKey
	catalog *v1.BindCatalogZone
}

// Pods implements controllers.PodEndpoints.
func (c *cluster) Pods(_ context.Context, _ *v1.BindCluster) ([]controllers.PodEndpoint, error) {
	out := make([]controllers.PodEndpoint, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, controllers.PodEndpoint{Pod: n.name, Primary: n.primary, Notify: n.dnsAddr(), DNSAddr: n.dnsAddr(), AgentAddr: n.agentEndpoint(), Paths: &n.paths})
	}
	return out, nil
}

// Transfer implements controllers.PodEndpoints: the primary at [::1].
func (c *cluster) Transfer(context.Context, *v1.BindCluster) (string, int32, error) {
	return "::1", int32(c.nodes[0].dnsPort), nil
}

// endpoints routes each test namespace's cluster to its loopback nodes.
type endpoints struct {
	mu       sync.Mutex
	clusters map[string]*cluster
}

var eps = &endpoints{clusters: map[string]*cluster{}}

func (e *endpoints) get(c *v1.BindCluster) (*cluster, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	cl, ok := e.clusters[c.Namespace+"/"+c.Name]
	if !ok {
		return nil, fmt.Errorf("no loopback pods for cluster %s/%s", c.Namespace, c.Name)
	}
	return cl, nil
}

func (e *endpoints) Pods(ctx context.Context, c *v1.BindCluster) ([]controllers.PodEndpoint, error) {
	cl, err := e.get(c)
	if err != nil {
		return nil, err
	}
	return cl.Pods(ctx, c)
}

func (e *endpoints) Transfer(ctx context.Context, c *v1.BindCluster) (string, int32, error) {
	cl, err := e.get(c)
	if err != nil {
		return "", 0, err
	}
	return cl.Transfer(ctx, c)
}

var nsSeq int

// newCluster creates a namespace with keys K ("transfer") and U ("upd"), a
// BindCluster, a BindCatalogZone and the agent CA Secret, then starts a
// primary and `secondaries` secondaries rendered from those objects.
func newCluster(t *testing.T, secondaries int) *cluster {
	t.Helper()
	nsSeq++
	c := &cluster{t: t, ns: fmt.Sprintf("dp-%d-%d", os.Getpid()%1000, nsSeq), name: "dns", keys: map[string]render.TSIGKey{}}
	must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}))
	for _, k := range []string{"transfer", "upd"} {
		secret := newSecret()
		c.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: k + "-tsig"}, Data: map[string][]byte{v1.TSIGSecretKey: []byte(secret)}})
		c.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: k}, Spec: v1.BindTSIGKeySpec{ImportExisting: true, SecretName: k + "-tsig", Algorithm: "hmac-sha256"}})
		c.keys[k] = render.TSIGKey{Name: k, Algorithm: "hmac-sha256", Secret: secret}
	}
	cl := &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Spec: v1.BindClusterSpec{
		Mode: v1.ModeAuthoritative, Replicas: ptr(int32(1 + secondaries)), TransferKeyRef: &v1.LocalObjectReference{Name: "transfer"},
	}}
	c.create(cl)
	c.catalog = &v1.BindCatalogZone{ObjectMeta: metav1.ObjectMeta{Name: "catalog"}, Spec: v1.BindCatalogZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "catalog.example.internal", TransferKeyRef: v1.LocalObjectReference{Name: "transfer"},
	}}
	c.create(c.catalog)
	var err error
	c.ca, err = pki.NewCA("dataplane", 0)
	must(t, err)
	op, err := c.ca.IssueClient("bind-operator", 0)
	must(t, err)
	c.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: c.name + "-agent-ca"}, Data: map[string][]byte{
		pki.FileCA: c.ca.CertPEM, pki.FileCAKey: c.ca.KeyPEM, pki.FileClientCert: op.CertPEM, pki.FileClientKey: op.KeyPEM,
	}})
	c.ctlKey = render.TSIGKey{Name: "bind-operator-control", Algorithm: "hmac-sha256", Secret: newSecret()}

	for i := 0; i <= secondaries; i++ {
		n := &node{name: fmt.Sprintf("%s-%d", c.name, i), primary: i == 0}
		root := t.TempDir()
		n.paths = render.Paths{ConfigDir: filepath.Join(root, "config"), KeysDir: filepath.Join(root, "keys"), DataDir: filepath.Join(root, "data")}
		for _, d := range []string{n.paths.ConfigDir, n.paths.KeysDir, n.paths.DataDir} {
			must(t, os.MkdirAll(d, 0o755))
		}
		n.dnsPort, n.ctlPort, n.statsPort = bindtest.FreePort(t), bindtest.FreePort(t), bindtest.FreePort(t)
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		c.render(n, cl)
		c.startNamed(n)
		c.startAgent(n)
	}
	eps.mu.Lock()
	eps.clusters[c.ns+"/"+c.name] = c
	eps.mu.Unlock()
	t.Cleanup(func() {
		// Let the finalizers run while named is still up, then stop.
		var zones v1.BindZoneList
		_ = k8s.List(ctx, &zones, client.InNamespace(c.ns))
		if t.Failed() {
			for _, z := range zones.Items {
				t.Logf("BindZone %s status: %+v", z.Name, z.Status)
			}
		}
		for i := range zones.Items {
			_ = k8s.Delete(ctx, &zones.Items[i])
		}
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
			var l v1.BindZoneList
			err := k8s.List(ctx, &l, client.InNamespace(c.ns))
			return err == nil && len(l.Items) == 0, nil
		})
		_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}})
		for _, n := range c.nodes {
			n.stopAgent()
			c.stopNamed(n)
			if t.Failed() {
				t.Logf("--- %s named log (last lines) ---\n%s", n.name, bindtest.Tail(n.Log(), 30))
			}
		}
	})
	return c
}

func (c *cluster) create(obj client.Object) {
	c.t.Helper()
	obj.SetNamespace(c.ns)
	must(c.t, k8s.Create(ctx, obj))
}

// render writes n's config, keys and entrypoint with render.Render, then
// moves the fixed in-pod ports (control 953, statistics 8053, DNS on any
// address) to n's loopback ports so several nameds share the machine.
func (c *cluster) render(n *node, cl *v1.BindCluster) {
	c.t.Helper()
	cc := cl.DeepCopy()
	cc.Spec.Ports.DNS = int32(n.dnsPort)
	res, err := render.Render(render.Input{
		Cluster: cc, PrimaryAddress: "::1", PrimaryPort: int32(c.nodes[0].dnsPort), ControlKey: c.ctlKey,
		Keys: c.keys, Catalogs: []v1.BindCatalogZone{*c.catalog}, Paths: n.paths,
	})
	must(c.t, err)
	for name, data := range res.ConfigData {
		if strings.HasPrefix(name, "named.conf.") {
			data = strings.NewReplacer(
				fmt.Sprintf("port %d allow", render.ControlPort), fmt.Sprintf("port %d allow", n.ctlPort),
				fmt.Sprintf("port %d allow", render.StatisticsPort), fmt.Sprintf("port %d allow", n.statsPort),
				fmt.Sprintf("listen-on port %d { any; };", n.dnsPort), fmt.Sprintf("listen-on port %d { 127.0.0.1; };", n.dnsPort),
				fmt.Sprintf("listen-on-v6 port %d { any; };", n.dnsPort), fmt.Sprintf("listen-on-v6 port %d { ::1; };", n.dnsPort),
			).Replace(data)
			data = strings.Replace(data, "options {", "logging { channel e { stderr; severity info; print-time yes; }; category default { e; }; category notify { e; }; category xfer-in { e; }; category xfer-out { e; }; category update { e; }; category general { e; }; };\noptions {", 1)
		}
		must(c.t, os.WriteFile(filepath.Join(n.paths.ConfigDir, name), []byte(data), 0o644))
	}
	for name, data := range res.SecretData {
		must(c.t, os.WriteFile(filepath.Join(n.paths.KeysDir, name), data, 0o600))
	}
	srv, err := c.ca.IssueServer(0)
	must(c.t, err)
	for name, data := range map[string][]byte{pki.FileCA: c.ca.CertPEM, pki.FileServerCert: srv.CertPEM, pki.FileServerKey: srv.KeyPEM} {
		must(c.t, os.WriteFile(filepath.Join(n.paths.KeysDir, name), data, 0o600))
	}
	wrapper := filepath.Join(n.paths.ConfigDir, "named-wrapper.sh")
	must(c.t, os.WriteFile(wrapper, []byte("#!/bin/sh\nexec named -n 1 \"$@\"\n"), 0o755))
}

// startNamed runs the rendered entrypoint (role from the node) and waits,
// bounded, until named answers.
func (c *cluster) startNamed(n *node) {
	c.t.Helper()
	role := "secondary"
	if n.primary {
		role = "primary"
	}
	cmd := exec.Command("sh", filepath.Join(n.paths.ConfigDir, render.FileEntrypoint))
	cmd.Env = append(os.Environ(), "BIND_ROLE="+role, "NAMED_BIN="+filepath.Join(n.paths.ConfigDir, "named-wrapper.sh"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if n.log == nil {
		n.log = &bytes.Buffer{}
	}
	cmd.Stdout, cmd.Stderr = lockedWriter{n}, lockedWriter{n}
	must(c.t, cmd.Start())
	n.cmd, n.done = cmd, make(chan struct{})
	done := n.done
	go func() { _ = cmd.Wait(); close(done) }()
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
			c.t.Fatalf("%s: named exited during start-up:\n%s", n.name, bindtest.Tail(n.Log(), 30))
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: named not answering after 15s:\n%s", n.name, bindtest.Tail(n.Log(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopNamed kills named (SIGKILL: nothing is flushed on the way out) and
// waits, bounded.
func (c *cluster) stopNamed(n *node) {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		c.t.Logf("%s: named did not exit within 10s", n.name)
	}
	n.cmd = nil
}

func (c *cluster) startAgent(n *node) {
	c.t.Helper()
	a, err := server.New(server.Config{
		Paths:         n.paths,
		ControlAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(n.ctlPort)),
		StatisticsURL: fmt.Sprintf("http://127.0.0.1:%d/json/v1", n.statsPort),
		DNSAddr:       n.dnsAddr(),
		ReadyInterval: 200 * time.Millisecond,
		Logger:        slog.New(slog.DiscardHandler),
	})
	must(c.t, err)
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	must(c.t, err)
	metricsLn, err := net.Listen("tcp", "127.0.0.1:0")
	must(c.t, err)
	n.mu.Lock()
	n.agentAddr = apiLn.Addr().String()
	n.mu.Unlock()
	actx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(actx, apiLn, metricsLn) }()
	var once sync.Once
	n.stopAgent = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				c.t.Errorf("%s: agent did not stop within 30s", n.name)
			}
		})
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
