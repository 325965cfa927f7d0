// Package pki issues and reads the operator's X.509 material: the admission
// webhook's CA and serving certificate (package certs) and the agent
// channel's CA and leaf certificates (package agent). Both go through this
// one implementation, so they share the key type, the serial numbers, the
// clock-skew allowance and the PEM forms.
//
// Keys are ECDSA P-256. New private keys are written as PKCS #8; SEC 1 ("EC
// PRIVATE KEY", what cert-manager and openssl write) is read too, and a key
// that was read is kept in the form it came in.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Backdate moves NotBefore into the past so a certificate issued on one
// node is already valid on a peer whose clock is slightly behind.
const Backdate = 5 * time.Minute

// KeyPair is a certificate and its private key. CertPEM and KeyPEM are the
// same material in PEM, as Secrets and files hold it.
type KeyPair struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte

	key *ecdsa.PrivateKey
}

// String never prints key material.
func (kp *KeyPair) String() string {
	if kp == nil || kp.Cert == nil {
		return "<no certificate>"
	}
	return fmt.Sprintf("certificate %q serial %s (key redacted)", kp.Cert.Subject.CommonName, kp.Cert.SerialNumber.Text(16))
}

// GoString masks %#v as well.
func (kp *KeyPair) GoString() string { return kp.String() }

// newKeyPair joins a certificate and its private key, refusing a key that
// is not the certificate's. keyPEM is kept as given, so material read from
// a Secret is written back byte for byte.
func newKeyPair(cert *x509.Certificate, key *ecdsa.PrivateKey, keyPEM []byte) (*KeyPair, error) {
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New("pki: the private key does not belong to the certificate")
	}
	return &KeyPair{Cert: cert, CertPEM: EncodeCerts(cert), KeyPEM: keyPEM, key: key}, nil
}

// MatchKey returns the first of certs whose private key keyPEM is (a CA
// bundle holds several certificates; its key belongs to one). Its errors
// never contain key bytes.
func MatchKey(certs []*x509.Certificate, keyPEM []byte) (*KeyPair, error) {
	key, err := DecodeKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: private key: %w", err)
	}
	for _, c := range certs {
		if kp, err := newKeyPair(c, key, keyPEM); err == nil {
			return kp, nil
		}
	}
	return nil, errors.New("pki: the private key belongs to none of the certificates")
}

// LoadKeyPair parses the first certificate of certPEM and its key in
// keyPEM.
func LoadKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	certs, err := DecodeCerts(certPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: certificate: %w", err)
	}
	return MatchKey(certs[:1], keyPEM)
}

// LoadCA is LoadKeyPair for a certificate that must be a CA.
func LoadCA(certPEM, keyPEM []byte) (*KeyPair, error) {
	ca, err := LoadKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if !ca.Cert.IsCA || !ca.Cert.BasicConstraintsValid {
		return nil, errors.New("pki: the certificate is not a CA")
	}
	return ca, nil
}

// IssuedAt is when the certificate was really created: NotBefore without
// the clock-skew allowance.
func (kp *KeyPair) IssuedAt() time.Time { return kp.Cert.NotBefore.Add(Backdate) }

// IssuedBy tells whether ca signed kp's certificate.
func (kp *KeyPair) IssuedBy(ca *KeyPair) bool { return kp.Cert.CheckSignatureFrom(ca.Cert) == nil }

// NewCA creates a self-signed CA, valid from now for validity, that may sign
// leaf certificates only (MaxPathLen 0): the operator never needs an
// intermediate.
func NewCA(subject pkix.Name, now time.Time, validity time.Duration) (*KeyPair, error) {
	return create(&x509.Certificate{
		Subject:               subject,
		NotBefore:             now.Add(-Backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}, nil)
}

// Leaf describes a certificate a CA issues.
type Leaf struct {
	Subject  pkix.Name
	DNSNames []string
	// IPAddresses are the addresses a server is reached at directly (a
	// Kubernetes API server at its ClusterIP and node address).
	IPAddresses []net.IP
	// Usage is the one thing the certificate is for: serving
	// (x509.ExtKeyUsageServerAuth) or calling (x509.ExtKeyUsageClientAuth).
	// One usage each, so a server's certificate cannot act as a client.
	Usage x509.ExtKeyUsage
}

// Issue creates a leaf certificate signed by ca, valid from now for
// validity but never beyond the CA: a leaf that outlives its issuer would
// be refused anyway.
func (ca *KeyPair) Issue(leaf Leaf, now time.Time, validity time.Duration) (*KeyPair, error) {
	if ca == nil || ca.key == nil {
		return nil, errors.New("pki: no CA key to sign with")
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	return create(&x509.Certificate{
		Subject:     leaf.Subject,
		DNSNames:    append([]string(nil), leaf.DNSNames...),
		IPAddresses: append([]net.IP(nil), leaf.IPAddresses...),
		NotBefore:   now.Add(-Backdate),
		NotAfter:    notAfter,
		// ECDSA keys sign the handshake; they never encipher a key, so
		// KeyEncipherment would be wrong here.
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{leaf.Usage},
		BasicConstraintsValid: true,
		IsCA:                  false,
	}, ca)
}

// create generates a key and signs tmpl with parent (nil: self-signed).
func create(tmpl *x509.Certificate, parent *KeyPair) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, err
	}
	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	return newKeyPair(cert, key, keyPEM)
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
