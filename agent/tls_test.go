package agent

import (
	"crypto/tls"

	"git.unkin.net/unkin/bind-operator/pki"
)

// tlsPair is a server config for pair that does not ask for client
// certificates (the hostile agent does not care who calls).
func tlsPair(p *pki.KeyPair) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}
