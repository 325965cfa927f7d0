package certs

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"time"

	"git.unkin.net/unkin/bind-operator/pki"
)

// newCA creates the webhook CA. The timestamp in its name tells CAs apart
// when two are in the bundle during a rotation.
func newCA(now time.Time, validity time.Duration) (*pki.KeyPair, error) {
	return pki.NewCA(pkix.Name{CommonName: fmt.Sprintf("bind-operator-webhook-ca@%d", now.Unix())}, now, validity)
}

// newServing creates the webhook server's certificate, signed by ca, for
// every name the API server may dial.
func newServing(ca *pki.KeyPair, dnsNames []string, now time.Time, validity time.Duration) (*pki.KeyPair, error) {
	if len(dnsNames) == 0 {
		return nil, errors.New("a serving certificate needs at least one DNS name")
	}
	return ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: dnsNames[0]}, DNSNames: dnsNames, Usage: x509.ExtKeyUsageServerAuth}, now, validity)
}
