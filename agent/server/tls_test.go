package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/pki"
)

func writeServer(t *testing.T, dir string, ca *pki.KeyPair) *pki.KeyPair {
	t.Helper()
	srv, err := agent.IssueServer(ca, 0)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{agent.FileCA: ca.CertPEM, agent.FileServerCert: srv.CertPEM, agent.FileServerKey: srv.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

// handshake dials a TLS server backed by st with the given client config
// and reports the handshake result from the client's side.
func handshake(t *testing.T, st *tlsFiles, client *tls.Config) error {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", st.config())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_ = c.(*tls.Conn).Handshake()
			_, _ = c.Write([]byte("x"))
			c.Close()
		}
	}()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.Addr().String(), client)
	if err != nil {
		return err
	}
	defer conn.Close()
	// TLS 1.3: a client-cert refusal arrives after the client's handshake
	// completes, on the first read.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	return err
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := agent.NewCA("test", 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := writeServer(t, dir, ca)
	st, err := newTLSFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := agent.IssueClient(ca, "bind-operator", 0)
	if err != nil {
		t.Fatal(err)
	}
	good, err := agent.ClientTLSConfig(ca.CertPEM, cli.CertPEM, cli.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, st, good); err != nil {
		t.Fatalf("operator client refused: %v", err)
	}

	// No client certificate.
	noCert := good.Clone()
	noCert.Certificates = nil
	if err := handshake(t, st, noCert); err == nil {
		t.Fatal("client without certificate accepted")
	}
	// A client certificate from another CA.
	other, _ := agent.NewCA("other", 0)
	otherCli, _ := agent.IssueClient(other, "bind-operator", 0)
	foreign, _ := agent.ClientTLSConfig(ca.CertPEM, otherCli.CertPEM, otherCli.KeyPEM)
	if err := handshake(t, st, foreign); err == nil {
		t.Fatal("client certificate from another CA accepted")
	}
	// The pods' serving certificate is not a client certificate.
	asServer, _ := agent.ClientTLSConfig(ca.CertPEM, srv.CertPEM, srv.KeyPEM)
	if err := handshake(t, st, asServer); err == nil {
		t.Fatal("serving certificate accepted as a client certificate")
	}
	// The client refuses an agent whose certificate is from another CA.
	otherDir := t.TempDir()
	writeServer(t, otherDir, other)
	otherSrv, err := newTLSFiles(otherDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, otherSrv, good); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("client accepted a server from another CA: %v", err)
	}
}

// Rotating every file (new CA) takes effect without a restart; a broken
// rotation keeps the last good material.
func TestServerReload(t *testing.T) {
	dir := t.TempDir()
	ca1, _ := agent.NewCA("one", 0)
	writeServer(t, dir, ca1)
	st, err := newTLSFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	st.now = func() time.Time { return clock }
	cli1, _ := agent.IssueClient(ca1, "op", 0)
	cfg1, _ := agent.ClientTLSConfig(ca1.CertPEM, cli1.CertPEM, cli1.KeyPEM)
	if err := handshake(t, st, cfg1); err != nil {
		t.Fatal(err)
	}

	ca2, _ := agent.NewCA("two", 0)
	writeServer(t, dir, ca2)
	// Make sure the stamp changes even on coarse-mtime filesystems.
	future := time.Now().Add(time.Minute)
	for _, f := range []string{agent.FileCA, agent.FileServerCert, agent.FileServerKey} {
		_ = os.Chtimes(filepath.Join(dir, f), future, future)
	}
	clock = clock.Add(2 * time.Second)
	cli2, _ := agent.IssueClient(ca2, "op", 0)
	cfg2, _ := agent.ClientTLSConfig(ca2.CertPEM, cli2.CertPEM, cli2.KeyPEM)
	if err := handshake(t, st, cfg2); err != nil {
		t.Fatalf("rotated material not used: %v", err)
	}
	if err := handshake(t, st, cfg1); err == nil {
		t.Fatal("old CA still accepted after rotation")
	}

	// Broken rotation: garbage key. The last good material stays.
	_ = os.WriteFile(filepath.Join(dir, agent.FileServerKey), []byte("garbage"), 0o600)
	clock = clock.Add(2 * time.Second)
	if err := handshake(t, st, cfg2); err != nil {
		t.Fatalf("broken rotation broke serving: %v", err)
	}
	if st.lastError() == nil || strings.Contains(fmt.Sprint(st.lastError()), "garbage") {
		t.Fatalf("last error: %v", st.lastError())
	}
}
