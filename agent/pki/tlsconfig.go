package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ClientTLSConfig is the operator's side: trust only the cluster's CA,
// verify the agent as ServerName whatever address is dialled, and present
// the client certificate.
func ClientTLSConfig(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("pki: CA bundle has no certificate")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, errors.New("pki: client certificate and key do not parse or do not match")
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		RootCAs:      pool,
		ServerName:   ServerName,
		Certificates: []tls.Certificate{pair},
	}, nil
}

// ServerTLS is the agent's side. It reads FileCA, FileServerCert and
// FileServerKey from a directory and re-reads them when they change
// (Kubernetes updates Secret volumes in place), checked at most once a
// second on new handshakes. A rotation that leaves the files half-written
// or mismatched keeps the previous good material.
type ServerTLS struct {
	dir string
	now func() time.Time

	mu      sync.Mutex
	stamp   string
	checked time.Time
	cfg     *tls.Config
	lastErr error
}

// NewServerTLS loads the material once (so a misconfigured pod fails at
// start) and returns the reloader.
func NewServerTLS(dir string) (*ServerTLS, error) {
	s := &ServerTLS{dir: dir, now: time.Now}
	if _, err := s.current(); err != nil {
		return nil, err
	}
	return s, nil
}

// Config is the *tls.Config for http.Server: every handshake gets the
// current material and requires a client certificate from the current CA.
func (s *ServerTLS) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current()
		},
	}
}

// LastError is the last reload failure (nil after a good reload).
func (s *ServerTLS) LastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

func (s *ServerTLS) current() (*tls.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.cfg != nil && now.Sub(s.checked) < time.Second {
		return s.cfg, nil
	}
	s.checked = now
	stamp, err := s.fileStamp()
	if err == nil && stamp == s.stamp && s.cfg != nil {
		return s.cfg, nil
	}
	if err == nil {
		var cfg *tls.Config
		if cfg, err = s.load(); err == nil {
			s.cfg, s.stamp, s.lastErr = cfg, stamp, nil
			return cfg, nil
		}
	}
	s.lastErr = err
	if s.cfg != nil {
		return s.cfg, nil // keep serving with the last good material
	}
	return nil, err
}

func (s *ServerTLS) fileStamp() (string, error) {
	var b []byte
	for _, f := range []string{FileCA, FileServerCert, FileServerKey} {
		fi, err := os.Stat(filepath.Join(s.dir, f))
		if err != nil {
			return "", fmt.Errorf("pki: %s: %w", f, errors.Unwrap(err))
		}
		b = fmt.Appendf(b, "%s:%d:%d;", f, fi.Size(), fi.ModTime().UnixNano())
	}
	return string(b), nil
}

func (s *ServerTLS) load() (*tls.Config, error) {
	caPEM, err := os.ReadFile(filepath.Join(s.dir, FileCA))
	if err != nil {
		return nil, fmt.Errorf("pki: read %s: %w", FileCA, errors.Unwrap(err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("pki: %s has no certificate", FileCA)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(s.dir, FileServerCert), filepath.Join(s.dir, FileServerKey))
	if err != nil {
		return nil, fmt.Errorf("pki: %s and %s do not parse or do not match", FileServerCert, FileServerKey)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}, nil
}
