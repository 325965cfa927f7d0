package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
)

// tlsFiles is the agent's side of the channel (see package agent for the
// trust model). It reads agent.FileCA, agent.FileServerCert and
// agent.FileServerKey from a directory and re-reads them when they change
// (Kubernetes updates Secret volumes in place), checked at most once a
// second on new handshakes. A rotation that leaves the files half-written
// or mismatched keeps the previous good material.
type tlsFiles struct {
	dir string
	now func() time.Time

	mu      sync.Mutex
	stamp   string
	checked time.Time
	cfg     *tls.Config
	lastErr error
}

// newTLSFiles loads the material once (so a misconfigured pod fails at
// start) and returns the reloader.
func newTLSFiles(dir string) (*tlsFiles, error) {
	s := &tlsFiles{dir: dir, now: time.Now}
	if _, err := s.current(); err != nil {
		return nil, err
	}
	return s, nil
}

// config is the *tls.Config for http.Server: every handshake gets the
// current material and requires a client certificate from the current CA.
func (s *tlsFiles) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current()
		},
	}
}

// lastError is the last reload failure (nil after a good reload).
func (s *tlsFiles) lastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

func (s *tlsFiles) current() (*tls.Config, error) {
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

func (s *tlsFiles) fileStamp() (string, error) {
	var b []byte
	for _, f := range []string{agent.FileCA, agent.FileServerCert, agent.FileServerKey} {
		fi, err := os.Stat(filepath.Join(s.dir, f))
		if err != nil {
			return "", fmt.Errorf("agent: %s: %w", f, errors.Unwrap(err))
		}
		b = fmt.Appendf(b, "%s:%d:%d;", f, fi.Size(), fi.ModTime().UnixNano())
	}
	return string(b), nil
}

func (s *tlsFiles) load() (*tls.Config, error) {
	caPEM, err := os.ReadFile(filepath.Join(s.dir, agent.FileCA))
	if err != nil {
		return nil, fmt.Errorf("agent: read %s: %w", agent.FileCA, errors.Unwrap(err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("agent: %s has no certificate", agent.FileCA)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(s.dir, agent.FileServerCert), filepath.Join(s.dir, agent.FileServerKey))
	if err != nil {
		return nil, fmt.Errorf("agent: %s and %s do not parse or do not match", agent.FileServerCert, agent.FileServerKey)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}, nil
}
