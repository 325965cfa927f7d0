package agent

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"time"

	"git.unkin.net/unkin/bind-operator/pki"
)

// The channel's trust model.
//
// Every BIND pod's agent serves HTTPS with one certificate issued by the
// cluster's agent CA for the fixed name ServerName. The operator dials a pod
// by IP or DNS name but verifies the certificate against ServerName, so pod
// IPs and headless-Service names never need to be in a certificate and a
// pod restart (new IP) never needs a new one. The agent accepts only
// clients presenting a certificate from the same CA with the client-auth
// extended key usage; the serving certificate carries only server-auth, so
// a pod that holds it cannot call other agents as the operator.
//
// Where the material lives. The agent reads FileCA, FileServerCert and
// FileServerKey from its keys directory (the cluster's keys Secret mount).
// The CA's private key and the operator's client certificate and key must
// NOT be in that Secret: every BIND pod mounts it. They live in a Secret
// only the operator reads, under FileCAKey, FileClientCert and
// FileClientKey.
//
// The channel is TLS 1.3 only.

// File names of the agent's TLS material in the keys directory.
const (
	FileCA         = "agent-ca.crt" // the cluster's agent CA certificate (PEM)
	FileServerCert = "agent.crt"    // the agents' serving certificate (PEM)
	FileServerKey  = "agent.key"    // its private key (PEM)
)

// Keys of the operator-only Secret (never mounted into pods).
const (
	FileCAKey      = "agent-ca.key"
	FileClientCert = "agent-client.crt"
	FileClientKey  = "agent-client.key"
)

// ServerName is the DNS name in every agent serving certificate and the
// name the operator verifies, whatever address it dials.
const ServerName = "bind-agent"

// Default lifetimes. Rotation is the operator's job (pki.NeedsRenewal); the
// agent reloads rotated files without a restart.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultLeafValidity = 365 * 24 * time.Hour
)

// organization marks every certificate of the channel.
var organization = []string{"bind-operator"}

// NewCA creates a cluster's agent CA. commonName labels it (e.g. the
// cluster's namespace/name); validity <= 0 means DefaultCAValidity.
func NewCA(commonName string, validity time.Duration) (*pki.KeyPair, error) {
	if validity <= 0 {
		validity = DefaultCAValidity
	}
	return pki.NewCA(pkix.Name{CommonName: commonName, Organization: organization}, time.Now(), validity)
}

// IssueServer issues the agents' serving certificate for ServerName;
// validity <= 0 means DefaultLeafValidity.
func IssueServer(ca *pki.KeyPair, validity time.Duration) (*pki.KeyPair, error) {
	return issue(ca, pki.Leaf{
		Subject: pkix.Name{CommonName: ServerName, Organization: organization}, DNSNames: []string{ServerName},
		Usage: x509.ExtKeyUsageServerAuth,
	}, validity)
}

// IssueClient issues the operator's client certificate. commonName labels
// the client in the agent's logs (e.g. "bind-operator").
func IssueClient(ca *pki.KeyPair, commonName string, validity time.Duration) (*pki.KeyPair, error) {
	return issue(ca, pki.Leaf{Subject: pkix.Name{CommonName: commonName, Organization: organization}, Usage: x509.ExtKeyUsageClientAuth}, validity)
}

func issue(ca *pki.KeyPair, leaf pki.Leaf, validity time.Duration) (*pki.KeyPair, error) {
	if validity <= 0 {
		validity = DefaultLeafValidity
	}
	return ca.Issue(leaf, time.Now(), validity)
}

// ClientTLSConfig is the operator's side: trust only the cluster's CA,
// verify the agent as ServerName whatever address is dialled, and present
// the client certificate.
func ClientTLSConfig(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("agent: the CA bundle has no certificate")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, errors.New("agent: the client certificate and key do not parse or do not match")
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		RootCAs:      pool,
		ServerName:   ServerName,
		Certificates: []tls.Certificate{pair},
	}, nil
}
