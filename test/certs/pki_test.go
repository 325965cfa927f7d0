package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// The tests build their own certificates (independently of package certs)
// to plant specific situations: a serving certificate about to expire, a CA
// inside its renewal window.

type testPair struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

func issue(t *testing.T, parent *testPair, cn string, dnsNames []string, notAfter time.Time) *testPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		DNSNames:              dnsNames,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
	}
	signerCert, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA = true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	} else {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &testPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// secretData lays out a CA and serving pair the way package certs stores them.
func secretData(ca, leaf *testPair) map[string][]byte {
	return map[string][]byte{"tls.crt": leaf.certPEM, "tls.key": leaf.keyPEM, "ca.crt": ca.certPEM, "ca.key": ca.keyPEM}
}

func parseCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

// verifyServing checks that the PEM serving certificate is accepted by a
// client trusting bundle, for every DNS name.
func verifyServing(t *testing.T, certPEM, bundle []byte, dnsNames ...string) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		t.Fatal("CA bundle holds no certificate")
	}
	leaf := parseCerts(t, certPEM)
	if len(leaf) == 0 {
		t.Fatal("no serving certificate")
	}
	for _, n := range dnsNames {
		if _, err := leaf[0].Verify(x509.VerifyOptions{DNSName: n, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Fatalf("serving certificate not valid for %s against the bundle: %v", n, err)
		}
	}
}

// servedCertificate does a TLS handshake and returns the leaf the server
// presented. Verification is the caller's business: the point is to see
// which certificate is served.
func servedCertificate(addr string) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&netDialer, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // inspecting, not trusting
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0], nil
}
