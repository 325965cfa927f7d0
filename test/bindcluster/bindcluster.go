// Package bindcluster runs the pods of a BindCluster on loopback: a primary
// and its secondaries as real named processes, configured by render.Render
// so the tuning under test is the operator's, each with its pod agent
// in-process behind mutual TLS.
//
// It exists so that the data-plane tests and the replication benchmarks
// exercise one and the same cluster: a harness copy that drifted would make
// the benchmarks measure something the tests no longer check.
//
// The secondaries transfer from the primary at [::1], the stand-in for the
// primary Service ClusterIP, while the primary's NOTIFYs leave from
// 127.0.0.1, the stand-in for its pod IP. BIND accepts them only because
// they are signed with the transfer key (docs/behaviours.md, "Keyed
// NOTIFY"), so every cluster started here exercises keyed NOTIFY.
package bindcluster

import (
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

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/server"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/pki"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/rndc"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// transferHost is where secondaries transfer from and UPDATEs go; it must
// differ from the primary's NOTIFY source (127.0.0.1) for NOTIFYs to come
// from a non-primary address.
const transferHost = "::1"

const (
	startTimeout = 15 * time.Second
	stopTimeout  = 10 * time.Second
	agentTimeout = 30 * time.Second
)

// Options describe the cluster to run.
type Options struct {
	// Cluster (required) is rendered as the operator would render it;
	// spec.replicas is the number of pods (default 1), spec.ports.dns is
	// set per pod.
	Cluster *v1.BindCluster
	// Keys is the TSIG key material by BindTSIGKey name, as render wants it.
	Keys map[string]render.TSIGKey
	// Catalogs are rendered into the config (catalog zones are restart-scoped).
	Catalogs []v1.BindCatalogZone
	// Zones are rendered into the config too: Primary zones are added at
	// runtime, but named.conf holds what they need from it (the
	// secondaries' allow-update-forwarding for their update keys).
	Zones []v1.BindZone
	// DNSSECPolicies are rendered into the config (dnssec-policy
	// statements the zones name).
	DNSSECPolicies []v1.BindDNSSECPolicy
	// ReadyInterval is the agents' readiness period; zero keeps the
	// agent's default, whose lighter polling benchmarks want.
	ReadyInterval time.Duration
}

// Cluster is a running BindCluster.
type Cluster struct {
	// Nodes are the pods, the primary first.
	Nodes []*Node
	// CA is the agents' CA: callers issue their own operator client
	// certificate from it, as the operator does from the CA Secret.
	CA *pki.KeyPair
	// ControlKey signs every named's control channel.
	ControlKey render.TSIGKey

	tb       testing.TB
	opts     Options
	operator *pki.KeyPair
}

// Node is one pod: named and its agent.
type Node struct {
	// Name is the pod's name, <cluster>-<ordinal> as a StatefulSet names it.
	Name    string
	Primary bool
	// Paths are the pod's mounts, each node's own since they share a disk.
	Paths render.Paths

	ctlPort, statsPort int

	// mu guards what Move changes while controllers read it concurrently.
	mu        sync.Mutex
	host      string
	dnsPort   int
	agentAddr string
	agent     *agent.Client
	// metricsAddr is where the agent serves its Prometheus metrics.
	metricsAddr string

	log       bindtest.LogBuffer
	cmd       *exec.Cmd
	exited    chan struct{}
	stopAgent func()
}

// Start renders and starts every pod, waiting (bounded) until each named
// answers. Everything is stopped and removed on test cleanup.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	if _, err := exec.LookPath("named"); err != nil {
		tb.Skip("named not installed")
	}
	ca, err := agent.NewCA("bindcluster", 0)
	testkit.Must(tb, err)
	op, err := agent.IssueClient(ca, "bind-operator", 0)
	testkit.Must(tb, err)
	c := &Cluster{
		CA:         ca,
		ControlKey: render.TSIGKey(bindtest.NewKey("bind-operator-control", "hmac-sha256")),
		tb:         tb,
		opts:       opts,
		operator:   op,
	}
	replicas := 1
	if r := opts.Cluster.Spec.Replicas; r != nil {
		replicas = int(*r)
	}
	for i := range replicas {
		root := tb.TempDir()
		n := &Node{
			Name:    fmt.Sprintf("%s-%d", opts.Cluster.Name, i),
			Primary: i == 0,
			Paths:   render.Paths{ConfigDir: filepath.Join(root, "config"), KeysDir: filepath.Join(root, "keys"), DataDir: filepath.Join(root, "data")},
			host:    "127.0.0.1",
		}
		for _, d := range []string{n.Paths.ConfigDir, n.Paths.KeysDir, n.Paths.DataDir} {
			testkit.Must(tb, os.MkdirAll(d, 0o755))
		}
		n.dnsPort, n.ctlPort, n.statsPort = testkit.FreePort(tb), testkit.FreePort(tb), testkit.FreePort(tb)
		c.Nodes = append(c.Nodes, n)
	}
	// Registered before the first start so a failed start still stops the
	// nodes already running.
	tb.Cleanup(func() {
		for _, n := range c.Nodes {
			c.stop(n)
			if tb.Failed() {
				tb.Logf("--- %s named log, last lines ---\n%s", n.Name, bindtest.Tail(n.Log(), 30))
			}
		}
	})
	for _, n := range c.Nodes {
		c.start(n)
	}
	return c
}

// Input is what the operator renders for n: the controllers' runtime
// clauses come from the same input.
func (c *Cluster) Input(n *Node) render.Input {
	cc := c.opts.Cluster.DeepCopy()
	cc.Spec.Ports.DNS = int32(n.DNSPort())
	host, port := c.Transfer()
	return render.Input{
		Cluster: cc, PrimaryAddress: host, PrimaryPort: port, ControlKey: c.ControlKey,
		Keys: c.opts.Keys, Catalogs: c.opts.Catalogs, Zones: c.opts.Zones, DNSSECPolicies: c.opts.DNSSECPolicies, Paths: n.Paths,
	}
}

// Roll renders every pod's config again with zones and the DNSSEC policies
// they name (see Options.Zones) and restarts the pods one by one with their
// data, as the operator's roll does after a restart-scoped change.
func (c *Cluster) Roll(zones []v1.BindZone, policies ...v1.BindDNSSECPolicy) {
	c.tb.Helper()
	c.opts.Zones, c.opts.DNSSECPolicies = zones, policies
	for _, n := range c.Nodes {
		c.stop(n)
		c.start(n)
	}
}

// Transfer is the primary's stable address and port, what the primary
// Service would be.
func (c *Cluster) Transfer() (string, int32) {
	return transferHost, int32(c.Nodes[0].DNSPort())
}

// Rndc opens a control session to n's named.
func (c *Cluster) Rndc(ctx context.Context, n *Node) (*rndc.Client, error) {
	key, err := rndc.NewKey(c.ControlKey.Name, c.ControlKey.Algorithm, c.ControlKey.Secret)
	if err != nil {
		return nil, err
	}
	return rndc.Dial(ctx, n.controlAddr(), key)
}

// Restart kills n's named with SIGKILL, so nothing is flushed on the way
// out as when a node dies, and starts it again; the agent stays up as a
// sidecar would.
func (c *Cluster) Restart(n *Node) {
	c.tb.Helper()
	c.kill(n)
	c.startNamed(n)
}

// Freeze stops n's named (SIGSTOP), as a node that stalls: its sockets
// stay open and queue what arrives, and it answers nothing until Thaw.
// The test's cleanup thaws it first, so every later stop finds it
// running.
func (c *Cluster) Freeze(n *Node) {
	c.tb.Helper()
	c.signal(n, syscall.SIGSTOP)
	c.tb.Cleanup(func() { c.Thaw(n) })
}

// Thaw lets a frozen named run again (SIGCONT); it is a no-op on one
// that runs.
func (c *Cluster) Thaw(n *Node) {
	c.tb.Helper()
	c.signal(n, syscall.SIGCONT)
}

// signal sends sig to n's named: the process group the entrypoint's shell
// became named in.
func (c *Cluster) signal(n *Node, sig syscall.Signal) {
	c.tb.Helper()
	if n.cmd == nil {
		c.tb.Fatalf("bindcluster: %s: named does not run", n.Name)
	}
	testkit.Must(c.tb, syscall.Kill(-n.cmd.Process.Pid, sig))
}

// Wipe replaces n as a pod that comes back with an empty data volume (an
// emptyDir, or a volume lost with its node): named and the agent stop,
// DataDir is emptied, and both start again at the same addresses, so the
// entrypoint seeds the catalogs afresh and the agent knows no zone.
func (c *Cluster) Wipe(n *Node) {
	c.tb.Helper()
	c.stop(n)
	entries, err := os.ReadDir(n.Paths.DataDir)
	testkit.Must(c.tb, err)
	for _, e := range entries {
		testkit.Must(c.tb, os.RemoveAll(filepath.Join(n.Paths.DataDir, e.Name())))
	}
	c.start(n)
}

// Move reschedules secondary n: it comes back with the same data at
// another address, [::1] on a new DNS port with nothing left listening at
// the old one, and its agent at a new address too, as a pod whose IP
// changed.
func (c *Cluster) Move(n *Node) {
	c.tb.Helper()
	if n.Primary {
		c.tb.Fatal("bindcluster: the primary is reached at its stable transfer address and cannot move")
	}
	c.stop(n)
	port := testkit.FreePort(c.tb)
	n.mu.Lock()
	n.host, n.dnsPort = transferHost, port
	n.mu.Unlock()
	c.start(n)
}

func (c *Cluster) start(n *Node) {
	c.tb.Helper()
	c.render(n)
	c.startNamed(n)
	c.startAgent(n)
}

// render writes n's ConfigMap and Secret files. The rendered config is a
// pod's (fixed control and statistics ports, DNS on every address); here
// several nameds share one machine and may only use loopback
// (docs/testing.md, "Network rules"), so each gets its own ports. A
// render change that breaks the rewrite fails rather than letting named
// listen on every address.
func (c *Cluster) render(n *Node) {
	c.tb.Helper()
	res, err := render.Render(c.Input(n))
	testkit.Must(c.tb, err)
	n.mu.Lock()
	port, v4 := n.dnsPort, n.host
	n.mu.Unlock()
	if v4 != "127.0.0.1" {
		v4 = "none" // moved: the old address is dead
	}
	rewrite := []string{
		fmt.Sprintf("port %d allow", render.ControlPort), fmt.Sprintf("port %d allow", n.ctlPort),
		fmt.Sprintf("port %d allow", render.StatisticsPort), fmt.Sprintf("port %d allow", n.statsPort),
		fmt.Sprintf("listen-on port %d { any; };", port), fmt.Sprintf("listen-on port %d { %s; };", port, v4),
		fmt.Sprintf("listen-on-v6 port %d { any; };", port), fmt.Sprintf("listen-on-v6 port %d { ::1; };", port),
	}
	for name, data := range res.ConfigData {
		if name == render.FilePrimaryConf || name == render.FileSecondaryConf {
			for i := 0; i < len(rewrite); i += 2 {
				if !strings.Contains(data, rewrite[i]) {
					c.tb.Fatalf("bindcluster: rendered %s has no %q to move to loopback", name, rewrite[i])
				}
			}
			data = strings.NewReplacer(rewrite...).Replace(data)
		}
		testkit.Must(c.tb, os.WriteFile(filepath.Join(n.Paths.ConfigDir, name), []byte(data), 0o644))
	}
	for name, data := range res.SeedData { // the ConfigMap holds them too
		testkit.Must(c.tb, os.WriteFile(filepath.Join(n.Paths.ConfigDir, name), []byte(data), 0o644))
	}
	for name, data := range res.SecretData {
		testkit.Must(c.tb, os.WriteFile(filepath.Join(n.Paths.KeysDir, name), data, 0o600))
	}
	srv, err := agent.IssueServer(c.CA, 0)
	testkit.Must(c.tb, err)
	for name, data := range map[string][]byte{agent.FileCA: c.CA.CertPEM, agent.FileServerCert: srv.CertPEM, agent.FileServerKey: srv.KeyPEM} {
		testkit.Must(c.tb, os.WriteFile(filepath.Join(n.Paths.KeysDir, name), data, 0o600))
	}
	// One worker thread per named: the machine is shared.
	testkit.Must(c.tb, os.WriteFile(filepath.Join(n.Paths.ConfigDir, "named-wrapper.sh"), []byte("#!/bin/sh\nexec named -n 1 \"$@\"\n"), 0o755))
}

// startNamed runs the rendered entrypoint, so its role selection and seed
// copying are what run, and waits until named answers.
func (c *Cluster) startNamed(n *Node) {
	c.tb.Helper()
	role := "secondary"
	if n.Primary {
		role = "primary"
	}
	cmd := exec.Command("sh", filepath.Join(n.Paths.ConfigDir, render.FileEntrypoint))
	cmd.Env = append(os.Environ(), "BIND_ROLE="+role, "NAMED_BIN="+filepath.Join(n.Paths.ConfigDir, "named-wrapper.sh"))
	// A group, so the kill reaches named even before the shells exec it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = &n.log, &n.log
	testkit.Must(c.tb, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	n.cmd, n.exited = cmd, exited
	if err := bindtest.WaitReady(n.DNSAddr(), n.controlAddr(), exited, startTimeout); err != nil {
		c.tb.Fatalf("bindcluster: %s (%s): %v\n%s", n.Name, role, err, bindtest.Tail(n.Log(), 30))
	}
}

func (c *Cluster) startAgent(n *Node) {
	c.tb.Helper()
	a, err := server.New(server.Config{
		Paths:         n.Paths,
		ControlAddr:   n.controlAddr(),
		StatisticsURL: fmt.Sprintf("http://127.0.0.1:%d/json/v1", n.statsPort),
		DNSAddr:       n.DNSAddr(),
		ReadyInterval: c.opts.ReadyInterval,
		Logger:        slog.New(slog.DiscardHandler),
	})
	testkit.Must(c.tb, err)
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	testkit.Must(c.tb, err)
	metricsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = apiLn.Close()
		c.tb.Fatal(err)
	}
	// Long enough for a batch of thousands of zones, still bounded.
	cl, err := agent.NewClient(agent.ClientConfig{
		Address: apiLn.Addr().String(), CAPEM: c.CA.CertPEM, CertPEM: c.operator.CertPEM, KeyPEM: c.operator.KeyPEM, Timeout: 5 * time.Minute,
	})
	if err != nil {
		_ = apiLn.Close()
		_ = metricsLn.Close()
		c.tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, apiLn, metricsLn) }()
	n.mu.Lock()
	n.agentAddr, n.agent, n.metricsAddr = apiLn.Addr().String(), cl, metricsLn.Addr().String()
	n.mu.Unlock()
	n.stopAgent = func() {
		cl.Close()
		cancel()
		select {
		case <-done: //nolint:errcheck // Serve returns once ctx is cancelled; only its return matters here.
		case <-time.After(agentTimeout):
			c.tb.Errorf("bindcluster: %s: agent did not stop within %v", n.Name, agentTimeout)
		}
	}
}

func (c *Cluster) stop(n *Node) {
	if n.stopAgent != nil {
		n.stopAgent()
		n.stopAgent = nil
	}
	c.kill(n)
}

func (c *Cluster) kill(n *Node) {
	if n.cmd == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-n.exited:
	case <-time.After(stopTimeout):
		c.tb.Logf("bindcluster: %s: named did not exit within %v", n.Name, stopTimeout)
	}
	n.cmd = nil
}

// DNSAddr is host:port where n's named answers now.
func (n *Node) DNSAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return net.JoinHostPort(n.host, strconv.Itoa(n.dnsPort))
}

// DNSPort is the port of DNSAddr.
func (n *Node) DNSPort() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dnsPort
}

// AgentAddr is host:port of n's agent API now.
func (n *Node) AgentAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.agentAddr
}

// Agent is a client of n's agent with an operator certificate.
func (n *Node) Agent() *agent.Client {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.agent
}

// MetricsURL is where n's agent serves its metrics now.
func (n *Node) MetricsURL() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return "http://" + n.metricsAddr + "/metrics"
}

// StatisticsURL is where n's named serves its statistics (JSON).
func (n *Node) StatisticsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/json/v1/server", n.statsPort)
}

// Log is what n's named wrote so far, across restarts.
func (n *Node) Log() string { return n.log.String() }

// CPU is the time the threads of n's named have spent on a CPU
// (testkit.RunTime): what a benchmark divides by the changes it made.
// The entrypoint's shell execs named, so the process started is named.
// Like Freeze, it reads the process Restart and Wipe replace: call it
// between them, not during.
func (n *Node) CPU() (time.Duration, error) {
	if n.cmd == nil || n.cmd.Process == nil {
		return 0, fmt.Errorf("bindcluster: %s: named does not run", n.Name)
	}
	return testkit.RunTime(n.cmd.Process.Pid)
}

func (n *Node) controlAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.ctlPort)) }
