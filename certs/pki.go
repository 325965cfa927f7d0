package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// backdate moves NotBefore into the past so a certificate issued on one node
// is already valid on a peer whose clock is slightly behind.
const backdate = 5 * time.Minute

// keyPair is a parsed certificate with its private key.
type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// issuedAt is when the certificate was really created (NotBefore without the
// clock-skew allowance); the CA handover is measured from it.
func (kp keyPair) issuedAt() time.Time { return kp.cert.NotBefore.Add(backdate) }

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// newSerial returns a random positive 128-bit serial number (RFC 5280 allows
// up to 20 octets; randomness keeps serials unique across replicas).
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	n, err := rand.Int(rand.Reader, limit)
	if err != nil {
		return nil, err
	}
	return n.Add(n, big.NewInt(1)), nil
}

// newCA creates a self-signed CA that may sign leaf certificates only
// (MaxPathLen 0): the operator never needs an intermediate.
func newCA(now time.Time, validity time.Duration) (keyPair, error) {
	key, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return keyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// The timestamp tells CAs apart when two are in the bundle.
		Subject:               pkix.Name{CommonName: fmt.Sprintf("bind-operator-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return keyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: cert, key: key}, nil
}

// newServing creates the webhook server's certificate, signed by ca. It never
// outlives its CA: a leaf valid past its issuer would be rejected anyway.
func newServing(ca keyPair, dnsNames []string, now time.Time, validity time.Duration) (keyPair, error) {
	if len(dnsNames) == 0 {
		return keyPair{}, errors.New("a serving certificate needs at least one DNS name")
	}
	key, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return keyPair{}, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: dnsNames[0]},
		DNSNames:     append([]string(nil), dnsNames...),
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		// ECDSA keys sign the handshake; they never encipher a key, so
		// KeyEncipherment would be wrong here.
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  false,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return keyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: cert, key: key}, nil
}
