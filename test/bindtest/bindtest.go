// Package bindtest starts real BIND 9 (named) processes on loopback for
// integration tests and benchmarks of the data plane.
//
// Each Server gets its own directory, its own free DNS and control ports on
// 127.0.0.1 and its own control key, so a test can run a primary and several
// secondaries side by side with different configurations. Every named is
// killed when the test ends; every wait is bounded.
package bindtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/internal/keyalg"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// Key is a shared secret as named.conf spells it: a name, an HMAC algorithm
// name (hmac-sha256, ...) and the base64 secret.
type Key struct {
	Name      string
	Algorithm string
	Secret    string
}

// NewKey returns a key with a fresh random secret of the size BIND's own
// tools generate for the algorithm: its digest's (32 bytes for a name
// keyalg does not know).
func NewKey(name, algorithm string) Key {
	size := 32
	if h := keyalg.Hash(algorithm); h != nil {
		size = h().Size()
	}
	b := make([]byte, size)
	_, _ = rand.Read(b) // never fails (crypto/rand contract since Go 1.24)
	return Key{Name: name, Algorithm: algorithm, Secret: base64.StdEncoding.EncodeToString(b)}
}

// Conf renders the key as a named.conf key statement.
func (k Key) Conf() string {
	return fmt.Sprintf("key %q {\n\talgorithm %s;\n\tsecret %q;\n};\n", k.Name, k.Algorithm, k.Secret)
}

// Options configure one named. The zero value is a usable empty
// authoritative server with allow-new-zones.
type Options struct {
	// ControlAlgorithm is the control key's HMAC (default hmac-sha256).
	ControlAlgorithm string
	// ControlKey, when set, replaces the generated control key (e.g. a
	// fixed key so captured replies stay verifiable as fuzz seeds).
	ControlKey *Key
	// Keys are extra key statements (e.g. TSIG keys for UPDATE and transfers).
	Keys []Key
	// Options is appended inside the options { } block.
	Options string
	// Config is appended at top level (zone statements, ACLs, ...).
	Config string
	// Files are written into the server directory before named starts,
	// name (a relative path) → content (e.g. zone files referenced from
	// Config).
	Files map[string]string
	// Tmpfs puts the server directory on /dev/shm instead of t.TempDir(),
	// so journal fsyncs cost nothing (for benchmarks).
	Tmpfs bool
	// StartTimeout bounds the wait until named answers (default 15 s).
	StartTimeout time.Duration
}

// Server is one running named.
type Server struct {
	Dir         string // working directory: config, zone files, journals, log
	ConfPath    string
	DNSAddr     string // 127.0.0.1:port, UDP and TCP
	ControlAddr string // 127.0.0.1:port
	ControlKey  Key

	tb      testing.TB
	cmd     *exec.Cmd
	log     *LogBuffer
	exited  chan struct{}
	stopped sync.Once
}

// Start writes a named.conf for opts into a fresh directory, starts named in
// the foreground and waits (bounded) until it answers both DNS and the
// control channel. named is killed on test cleanup.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if _, err := exec.LookPath("named"); err != nil {
		tb.Skip("named not installed")
	}
	if opts.ControlAlgorithm == "" {
		opts.ControlAlgorithm = "hmac-sha256"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 15 * time.Second
	}
	dir := tb.TempDir()
	if opts.Tmpfs {
		d, err := os.MkdirTemp("/dev/shm", "bindtest-")
		if err != nil {
			tb.Fatalf("bindtest: tmpfs dir: %v", err)
		}
		tb.Cleanup(func() { _ = os.RemoveAll(d) })
		dir = d
	}
	for name, content := range opts.Files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			tb.Fatalf("bindtest: directory of %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			tb.Fatalf("bindtest: write %s: %v", name, err)
		}
	}
	// A free port can be taken by someone else between probing and named's
	// bind; retry a bounded number of times with fresh ports.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := start(tb, dir, opts)
		if err == nil {
			return s
		}
		lastErr = err
	}
	tb.Fatalf("bindtest: named did not start: %v", lastErr)
	return nil
}

func start(tb testing.TB, dir string, opts Options) (*Server, error) {
	dnsPort, ctlPort := testkit.FreePort(tb), testkit.FreePort(tb)
	s := &Server{
		Dir:         dir,
		ConfPath:    filepath.Join(dir, "named.conf"),
		DNSAddr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(dnsPort)),
		ControlAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ctlPort)),
		ControlKey:  controlKey(opts),
		tb:          tb,
		log:         &LogBuffer{},
		exited:      make(chan struct{}),
	}
	if err := os.WriteFile(s.ConfPath, []byte(s.render(dnsPort, ctlPort, opts)), 0o644); err != nil {
		return nil, err
	}
	// -g: foreground, log to stderr; -n 1: one worker, the machine is shared.
	s.cmd = exec.Command("named", "-g", "-n", "1", "-c", s.ConfPath)
	s.cmd.Dir = dir
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	tb.Cleanup(s.Stop)
	if err := WaitReady(s.DNSAddr, s.ControlAddr, s.exited, opts.StartTimeout); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w\n--- named log ---\n%s", err, Tail(s.Log(), 40))
	}
	return s, nil
}

func controlKey(opts Options) Key {
	if opts.ControlKey != nil {
		return *opts.ControlKey
	}
	return NewKey("bindtest-control", opts.ControlAlgorithm)
}

func (s *Server) render(dnsPort, ctlPort int, opts Options) string {
	var b strings.Builder
	b.WriteString(s.ControlKey.Conf())
	for _, k := range opts.Keys {
		b.WriteString(k.Conf())
	}
	fmt.Fprintf(&b, `controls {
	inet 127.0.0.1 port %d allow { 127.0.0.1; } keys { %q; };
};
options {
	directory %q;
	pid-file none;
	session-keyfile none;
	managed-keys-directory %q;
	listen-on port %d { 127.0.0.1; };
	listen-on-v6 port %d { ::1; };
	recursion no;
	dnssec-validation no;
	allow-new-zones yes;
	notify no;
%s
};
logging { channel default_stderr { stderr; severity info; }; category default { default_stderr; }; };
%s`, ctlPort, s.ControlKey.Name, s.Dir, s.Dir, dnsPort, dnsPort, indent(opts.Options), opts.Config)
	return b.String()
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "\t" + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n\t")
}

// WaitReady waits, bounded by timeout, until the named at dnsAddr answers
// a CH TXT query and accepts TCP on controlAddr. A closed exited means named
// died, which no amount of waiting fixes: the wait ends at once.
func WaitReady(dnsAddr, controlAddr string, exited <-chan struct{}, timeout time.Duration) error {
	// Over TCP: named rate-limits UDP answers of its built-in CHAOS view
	// (3 per second, none slipped), so a named that takes a while to load
	// (a zone of 100,000 records on a busy machine) found every later
	// UDP probe dropped, however long the wait.
	c := &dns.Client{Net: "tcp", Timeout: 200 * time.Millisecond}
	m := new(dns.Msg)
	m.SetQuestion("version.bind.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	err := testkit.Await(timeout, 20*time.Millisecond, func(g gomega.Gomega) {
		select {
		case <-exited:
			gomega.StopTrying("named exited during start-up").Now()
		default:
		}
		_, _, err := c.Exchange(m, dnsAddr)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "named not answering on %s", dnsAddr)
		conn, err := net.DialTimeout("tcp", controlAddr, 200*time.Millisecond)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "named's control channel not open on %s", controlAddr)
		_ = conn.Close()
	})
	if err != nil {
		return fmt.Errorf("named at %s / %s not ready: %w", dnsAddr, controlAddr, err)
	}
	return nil
}

// Stop kills named and waits (bounded) for it to exit. Safe to call twice.
func (s *Server) Stop() {
	s.stopped.Do(func() {
		if s.cmd.Process != nil {
			_ = s.cmd.Process.Kill()
		}
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			s.tb.Logf("bindtest: named pid %d did not exit within 10s", s.cmd.Process.Pid)
		}
		if s.tb.Failed() {
			s.tb.Logf("--- named log (%s), last lines ---\n%s", s.DNSAddr, Tail(s.Log(), 40))
		}
	})
}

// Tail returns the last n lines of a log, for failure messages.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Log returns what named wrote so far.
func (s *Server) Log() string { return s.log.String() }

// WriteFile writes a file into the server directory (e.g. a zone file that
// rndc addzone will load) and returns its absolute path.
func (s *Server) WriteFile(name, content string) string {
	s.tb.Helper()
	p := filepath.Join(s.Dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		s.tb.Fatalf("bindtest: write %s: %v", p, err)
	}
	return p
}

// RndcConf writes an rndc.conf for the control key and returns its path, so
// tests can compare against the rndc binary.
func (s *Server) RndcConf() string {
	host, port, _ := net.SplitHostPort(s.ControlAddr)
	conf := s.ControlKey.Conf() + fmt.Sprintf("options {\n\tdefault-server %s;\n\tdefault-port %s;\n\tdefault-key %q;\n};\n", host, port, s.ControlKey.Name)
	p := filepath.Join(s.Dir, "rndc.conf")
	if err := os.WriteFile(p, []byte(conf), 0o600); err != nil {
		s.tb.Fatalf("bindtest: write rndc.conf: %v", err)
	}
	return p
}

// Rndc runs the rndc binary against this server with a bounded timeout.
func (s *Server) Rndc(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "rndc", append([]string{"-c", s.RndcConf()}, args...)...).CombinedOutput()
	return string(out), err
}

// SeedZone returns a minimal zone file for origin with the project's seed SOA
// timers and one NS record inside the zone.
func SeedZone(origin string, serial uint32) string {
	origin = dns.Fqdn(origin)
	return fmt.Sprintf(`$TTL 300
@ IN SOA ns1.%[1]s hostmaster.%[1]s %[2]d 300 60 1209600 60
@ IN NS ns1.%[1]s
ns1 IN A 127.0.0.1
`, origin, serial)
}

// LogBuffer collects a process's output for failure messages. Writers run
// on os/exec's copying goroutines while the test reads, hence the lock.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Bound the kept log: a runaway named must not eat the test's memory.
	if l.b.Len() > 4<<20 {
		return len(p), nil
	}
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
