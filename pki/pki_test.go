package pki

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"
)

func newCA(t *testing.T, validity time.Duration) *KeyPair {
	t.Helper()
	ca, err := NewCA(pkix.Name{CommonName: "test-ca"}, time.Now(), validity)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestCertificateShapes(t *testing.T) {
	now := time.Now()
	ca := newCA(t, 24*time.Hour)
	leaf, err := ca.Issue(Leaf{Subject: pkix.Name{CommonName: "svc"}, DNSNames: []string{"svc.ns.svc"}, Usage: x509.ExtKeyUsageServerAuth}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, l := ca.Cert, leaf.Cert
	if !c.IsCA || !c.BasicConstraintsValid || !c.MaxPathLenZero || c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA: IsCA=%v MaxPathLenZero=%v KeyUsage=%b", c.IsCA, c.MaxPathLenZero, c.KeyUsage)
	}
	if l.IsCA || l.KeyUsage != x509.KeyUsageDigitalSignature || len(l.ExtKeyUsage) != 1 || l.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("leaf: IsCA=%v KeyUsage=%b ExtKeyUsage=%v", l.IsCA, l.KeyUsage, l.ExtKeyUsage)
	}
	if l.PublicKeyAlgorithm != x509.ECDSA || c.PublicKeyAlgorithm != x509.ECDSA {
		t.Error("keys must be ECDSA")
	}
	if c.SerialNumber.Cmp(l.SerialNumber) == 0 {
		t.Error("serials must differ")
	}
	if !l.NotBefore.Equal(now.Add(-Backdate).Truncate(time.Second)) || !leaf.IssuedAt().Equal(now.Truncate(time.Second)) {
		t.Errorf("NotBefore %s, want %s minus the clock-skew allowance", l.NotBefore, now)
	}
	if !leaf.IssuedBy(ca) || ca.IssuedBy(leaf) {
		t.Error("IssuedBy")
	}
	if !SignedBy(leaf.CertPEM, ca.CertPEM) || SignedBy(ca.CertPEM, ca.CertPEM) || SignedBy(leaf.CertPEM, newCA(t, time.Hour).CertPEM) {
		t.Error("SignedBy")
	}
}

func TestLoadCAAndRenewal(t *testing.T) {
	ca := newCA(t, time.Hour)
	back, err := LoadCA(ca.CertPEM, ca.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	p, err := back.Issue(Leaf{Usage: x509.ExtKeyUsageClientAuth}, time.Now(), 48*time.Hour) // capped at the CA's expiry
	if err != nil {
		t.Fatal(err)
	}
	if !p.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("leaf expires %s, after its CA (%s)", p.Cert.NotAfter, ca.Cert.NotAfter)
	}
	if !NeedsRenewal(p.CertPEM, 2*time.Hour) || NeedsRenewal(p.CertPEM, time.Minute) || !NeedsRenewal([]byte("garbage"), 0) {
		t.Fatal("NeedsRenewal")
	}
	if _, err := LoadCA(p.CertPEM, p.KeyPEM); err == nil {
		t.Fatal("leaf loaded as CA")
	}
	if _, err := LoadKeyPair(p.CertPEM, ca.KeyPEM); err == nil {
		t.Fatal("a certificate loaded with another certificate's key")
	}
	if s := fmt.Sprintf("%v %+v %#v %s", ca, p, p, p); strings.Contains(s, "PRIVATE") {
		t.Fatalf("key material printed: %s", s)
	}
}

// Keys written by others (cert-manager, openssl) come as SEC 1; both forms
// load and are kept in their form, and errors never echo the key.
func TestDecodeKeyForms(t *testing.T) {
	ca := newCA(t, time.Hour)
	sec1, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		t.Fatal(err)
	}
	for name, keyPEM := range map[string][]byte{
		"PKCS #8": ca.KeyPEM,
		"SEC 1":   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}),
	} {
		back, err := LoadCA(ca.CertPEM, keyPEM)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !bytes.Equal(back.KeyPEM, keyPEM) {
			t.Errorf("%s: a loaded key is written back in another form", name)
		}
	}
	broken := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte("secret-bytes")})
	if _, err := DecodeKey(broken); err == nil || strings.Contains(err.Error(), "secret-bytes") {
		t.Errorf("broken key: %v", err)
	}
	if _, err := DecodeCerts(append(ca.CertPEM, ca.KeyPEM...)); err == nil {
		t.Error("a key block in a certificate bundle was accepted")
	}
}
