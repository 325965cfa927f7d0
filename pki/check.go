package pki

import (
	"bytes"
	"crypto/x509"
	"time"
)

// NeedsRenewal reports whether the first certificate in certPEM expires
// within the given window, or does not parse, so it is replaced before it
// expires.
func NeedsRenewal(certPEM []byte, within time.Duration) bool {
	certs, err := DecodeCerts(certPEM)
	if err != nil {
		return true
	}
	return time.Now().Add(within).After(certs[0].NotAfter)
}

// SignedBy tells whether the first certificate in certPEM chains to the CA
// in caPEM (and is not that CA itself).
func SignedBy(certPEM, caPEM []byte) bool {
	certs, err := DecodeCerts(certPEM)
	if err != nil {
		return false
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return false
	}
	_, err = certs[0].Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil && !bytes.Equal(certPEM, caPEM)
}
