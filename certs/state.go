package certs

import (
	"crypto/x509"
	"slices"
	"time"

	"git.unkin.net/unkin/bind-operator/pki"
)

// Keys of the Secret. tls.crt/tls.key make it a valid kubernetes.io/tls
// Secret (and the same layout cert-manager writes), ca.crt is the trust
// bundle injected into the webhook configurations, ca.key signs new serving
// certificates.
const (
	KeyTLSCert = "tls.crt"
	KeyTLSKey  = "tls.key"
	KeyCACert  = "ca.crt"
	KeyCAKey   = "ca.key"
)

// state is what the Secret holds, parsed. Unusable parts are nil rather than
// errors: a broken piece is simply replaced by the next plan.
type state struct {
	// signer is the CA whose key is in ca.key; its certificate is in the bundle.
	signer *pki.KeyPair
	// trusted is the bundle: the signer and earlier CAs still in overlap.
	trusted []*x509.Certificate
	serving *pki.KeyPair
}

func parseState(data map[string][]byte) state {
	var st state
	if certs, err := pki.DecodeCerts(data[KeyCACert]); err == nil {
		for _, c := range certs {
			if c.IsCA && c.BasicConstraintsValid {
				st.trusted = append(st.trusted, c)
			}
		}
	}
	if kp, err := pki.MatchKey(st.trusted, data[KeyCAKey]); err == nil {
		st.signer = kp
	}
	if kp, err := pki.LoadKeyPair(data[KeyTLSCert], data[KeyTLSKey]); err == nil {
		st.serving = kp
	}
	return st
}

// data renders the state into Secret data.
func (st state) data() map[string][]byte {
	return map[string][]byte{
		KeyTLSCert: st.serving.CertPEM,
		KeyTLSKey:  st.serving.KeyPEM,
		KeyCACert:  st.bundle(),
		KeyCAKey:   st.signer.KeyPEM,
	}
}

func (st state) bundle() []byte { return pki.EncodeCerts(st.trusted...) }

// pool is the bundle as a verifier sees it.
func (st state) pool() *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range st.trusted {
		p.AddCert(c)
	}
	return p
}

// orderBundle puts the signer first and the older CAs after it, newest
// first, dropping duplicates and CAs that have expired: an expired CA can no
// longer vouch for anything, so keeping it would only grow the bundle.
func orderBundle(signer *x509.Certificate, others []*x509.Certificate, now time.Time) []*x509.Certificate {
	out := []*x509.Certificate{signer}
	rest := slices.Clone(others)
	slices.SortStableFunc(rest, func(a, b *x509.Certificate) int { return b.NotAfter.Compare(a.NotAfter) })
	for _, c := range rest {
		if !now.Before(c.NotAfter) {
			continue
		}
		if slices.ContainsFunc(out, func(o *x509.Certificate) bool { return o.Equal(c) }) {
			continue
		}
		out = append(out, c)
	}
	return out
}
