// Package pki creates and loads the TLS material of the operator ↔ agent
// channel: a per-cluster CA, a serving certificate for the agents and a
// client certificate for the operator.
//
// Trust model. Every BIND pod's agent serves HTTPS with one certificate
// issued by the cluster's CA for the fixed name ServerName ("bind-agent").
// The operator dials a pod by IP or DNS name but verifies the certificate
// against ServerName, so pod IPs and headless-Service names never need to be
// in a certificate and a pod restart (new IP) never needs a new one. The
// agent accepts only clients presenting a certificate from the same CA with
// the client-auth extended key usage; the serving certificate carries only
// server-auth, so a pod that holds it cannot call other agents as the
// operator.
//
// Where the material lives. The agent reads FileCA, FileServerCert and
// FileServerKey from its keys directory (the cluster's keys Secret mount).
// The CA's private key and the operator's client certificate and key must
// NOT be in that Secret: every BIND pod mounts it. Keep them in a Secret
// only the operator reads (FileCAKey, FileClientCert, FileClientKey are the
// suggested keys).
//
// Keys are ECDSA P-256; the channel is TLS 1.3 only.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// File names of the agent's TLS material in the keys directory.
const (
	FileCA         = "agent-ca.crt" // the cluster's agent CA certificate (PEM)
	FileServerCert = "agent.crt"    // the agents' serving certificate (PEM)
	FileServerKey  = "agent.key"    // its private key (PEM, PKCS#8)
)

// Suggested keys of the operator-only Secret (never mounted into pods).
const (
	FileCAKey      = "agent-ca.key"
	FileClientCert = "agent-client.crt"
	FileClientKey  = "agent-client.key"
)

// ServerName is the DNS name in every agent serving certificate and the
// name the operator verifies, whatever address it dials.
const ServerName = "bind-agent"

// Default lifetimes. Rotation is the operator's job (see NeedsRenewal); the
// agent reloads rotated files without a restart.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultLeafValidity = 365 * 24 * time.Hour
)

// CA is a certificate authority: its certificate and key in PEM.
type CA struct {
	CertPEM []byte
	KeyPEM  []byte

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Pair is an issued certificate and its key, in PEM.
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// String never prints key material.
func (c *CA) String() string { return "agent CA (key redacted)" }

// String never prints key material.
func (p Pair) String() string { return "certificate pair (key redacted)" }

// GoString masks %#v as well.
func (p Pair) GoString() string { return p.String() }

// NewCA creates a self-signed CA. commonName labels it (e.g. the cluster's
// namespace/name); validity <= 0 means DefaultCAValidity.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	if validity <= 0 {
		validity = DefaultCAValidity
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"bind-operator"}},
		NotBefore:             now.Add(-5 * time.Minute), // tolerate small clock skew between nodes
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{CertPEM: encodeCert(der), KeyPEM: keyPEM, cert: cert, key: key}, nil
}

// LoadCA parses a CA kept by the operator.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The tls error never contains key bytes, but say it in our words.
		return nil, errors.New("pki: CA certificate and key do not parse or do not match")
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("pki: CA key is not ECDSA")
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || !cert.IsCA {
		return nil, errors.New("pki: CA certificate is not a CA")
	}
	return &CA{CertPEM: certPEM, KeyPEM: keyPEM, cert: cert, key: key}, nil
}

// IssueServer issues the agents' serving certificate for ServerName.
// validity <= 0 means DefaultLeafValidity.
func (c *CA) IssueServer(validity time.Duration) (Pair, error) {
	return c.issue(ServerName, []string{ServerName}, x509.ExtKeyUsageServerAuth, validity)
}

// IssueClient issues the operator's client certificate. commonName labels
// the client in the agent's logs (e.g. "bind-operator").
func (c *CA) IssueClient(commonName string, validity time.Duration) (Pair, error) {
	return c.issue(commonName, nil, x509.ExtKeyUsageClientAuth, validity)
}

func (c *CA) issue(cn string, dnsNames []string, usage x509.ExtKeyUsage, validity time.Duration) (Pair, error) {
	if c.cert == nil || c.key == nil {
		return Pair{}, errors.New("pki: CA not initialised (use NewCA or LoadCA)")
	}
	if validity <= 0 {
		validity = DefaultLeafValidity
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	now := time.Now()
	notAfter := now.Add(validity)
	if notAfter.After(c.cert.NotAfter) {
		notAfter = c.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"bind-operator"}},
		DNSNames:     dnsNames,
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return Pair{}, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

// NeedsRenewal reports whether the first certificate in certPEM expires
// within the given window (or does not parse), so the operator can rotate
// before expiry.
func NeedsRenewal(certPEM []byte, within time.Duration) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return true
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return true
	}
	return time.Now().Add(within).After(cert.NotAfter)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("pki: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
