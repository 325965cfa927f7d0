package pki

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeServer(t *testing.T, dir string, ca *CA) Pair {
	t.Helper()
	srv, err := ca.IssueServer(0)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{FileCA: ca.CertPEM, FileServerCert: srv.CertPEM, FileServerKey: srv.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

// handshake dials a TLS server backed by st with the given client config
// and reports the handshake result from the client's side.
func handshake(t *testing.T, st *ServerTLS, client *tls.Config) error {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", st.Config())
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
	ca, err := NewCA("test", 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := writeServer(t, dir, ca)
	st, err := NewServerTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.IssueClient("bind-operator", 0)
	if err != nil {
		t.Fatal(err)
	}
	good, err := ClientTLSConfig(ca.CertPEM, cli.CertPEM, cli.KeyPEM)
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
	other, _ := NewCA("other", 0)
	otherCli, _ := other.IssueClient("bind-operator", 0)
	foreign, _ := ClientTLSConfig(ca.CertPEM, otherCli.CertPEM, otherCli.KeyPEM)
	if err := handshake(t, st, foreign); err == nil {
		t.Fatal("client certificate from another CA accepted")
	}
	// The pods' serving certificate is not a client certificate.
	asServer, _ := ClientTLSConfig(ca.CertPEM, srv.CertPEM, srv.KeyPEM)
	if err := handshake(t, st, asServer); err == nil {
		t.Fatal("serving certificate accepted as a client certificate")
	}
	// The client refuses an agent whose certificate is from another CA.
	otherDir := t.TempDir()
	writeServer(t, otherDir, other)
	otherSrv, err := NewServerTLS(otherDir)
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
	ca1, _ := NewCA("one", 0)
	writeServer(t, dir, ca1)
	st, err := NewServerTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	st.now = func() time.Time { return clock }
	cli1, _ := ca1.IssueClient("op", 0)
	cfg1, _ := ClientTLSConfig(ca1.CertPEM, cli1.CertPEM, cli1.KeyPEM)
	if err := handshake(t, st, cfg1); err != nil {
		t.Fatal(err)
	}

	ca2, _ := NewCA("two", 0)
	writeServer(t, dir, ca2)
	// Make sure the stamp changes even on coarse-mtime filesystems.
	future := time.Now().Add(time.Minute)
	for _, f := range []string{FileCA, FileServerCert, FileServerKey} {
		_ = os.Chtimes(filepath.Join(dir, f), future, future)
	}
	clock = clock.Add(2 * time.Second)
	cli2, _ := ca2.IssueClient("op", 0)
	cfg2, _ := ClientTLSConfig(ca2.CertPEM, cli2.CertPEM, cli2.KeyPEM)
	if err := handshake(t, st, cfg2); err != nil {
		t.Fatalf("rotated material not used: %v", err)
	}
	if err := handshake(t, st, cfg1); err == nil {
		t.Fatal("old CA still accepted after rotation")
	}

	// Broken rotation: garbage key. The last good material stays.
	_ = os.WriteFile(filepath.Join(dir, FileServerKey), []byte("garbage"), 0o600)
	clock = clock.Add(2 * time.Second)
	if err := handshake(t, st, cfg2); err != nil {
		t.Fatalf("broken rotation broke serving: %v", err)
	}
	if st.LastError() == nil || strings.Contains(fmt.Sprint(st.LastError()), "garbage") {
		t.Fatalf("last error: %v", st.LastError())
	}
}

func TestLoadCAAndRenewal(t *testing.T) {
	ca, _ := NewCA("c", time.Hour)
	back, err := LoadCA(ca.CertPEM, ca.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	p, err := back.IssueServer(48 * time.Hour) // capped at the CA's expiry
	if err != nil {
		t.Fatal(err)
	}
	if !NeedsRenewal(p.CertPEM, 2*time.Hour) || NeedsRenewal(p.CertPEM, time.Minute) {
		t.Fatal("NeedsRenewal")
	}
	if _, err := LoadCA(p.CertPEM, p.KeyPEM); err == nil {
		t.Fatal("leaf loaded as CA")
	}
	if s := fmt.Sprintf("%v %+v %#v %s", ca, p, p, p); strings.Contains(s, "PRIVATE") {
		t.Fatalf("key material printed: %s", s)
	}
}
