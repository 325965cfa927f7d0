package certs

import (
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	"git.unkin.net/unkin/bind-operator/pki"
)

// policy is the part of Options the plan needs: lifetimes and DNS names.
type policy struct {
	dnsNames      []string
	validity      time.Duration
	renewBefore   time.Duration
	caValidity    time.Duration
	caRenewBefore time.Duration
	caHandover    time.Duration
}

// planResult says what to store and when to look again.
type planResult struct {
	next    state
	changed bool
	// reasons are human-readable and never contain key material.
	reasons []string
	// wake is when the plan could next decide differently.
	wake time.Time
}

// plan decides, purely from the stored state and the clock, whether to keep
// the certificates or issue new ones. It is the whole rotation policy:
//
//   - The CA is replaced caRenewBefore ahead of its expiry. The old CA stays
//     in the bundle until it expires, so anything still trusting only the
//     old bundle or still serving an old-CA certificate keeps working.
//   - A new CA signs serving certificates only after caHandover: first the
//     bundle carrying both CAs reaches the webhook configurations, then the
//     served certificate changes. Switching both at once would break calls
//     from API servers that had not yet seen the new bundle.
//   - The serving certificate is replaced renewBefore ahead of its expiry, or
//     at once when it is missing, does not match the DNS names, or does not
//     chain to the bundle.
func plan(st state, p policy, now time.Time) (planResult, error) {
	r := planResult{next: st}

	signer := st.signer
	if reason := caProblem(signer, p, now); reason != "" {
		ca, err := newCA(now, p.caValidity)
		if err != nil {
			return r, fmt.Errorf("creating CA: %w", err)
		}
		r.reasons = append(r.reasons, reason)
		signer = ca
		r.changed = true
	}
	trusted := orderBundle(signer.Cert, st.trusted, now)
	if !slices.EqualFunc(trusted, st.trusted, func(a, b *x509.Certificate) bool { return a.Equal(b) }) {
		r.changed = true
	}
	r.next = state{signer: signer, trusted: trusted, serving: st.serving}

	handoverEnd := signer.IssuedAt().Add(p.caHandover)
	serving := st.serving
	reason := servingProblem(serving, r.next, p, now)
	if reason == "" && serving != nil && !serving.IssuedBy(signer) {
		// Still valid, but from the previous CA: move to the new CA once the
		// new bundle has had time to reach every client.
		if !now.Before(handoverEnd) {
			reason = "serving certificate is from the previous CA and the handover time has passed"
		}
	}
	if reason != "" && serving != nil && now.Before(handoverEnd) && !serving.IssuedBy(signer) &&
		stillUsable(serving, r.next, p, now) && serving.Cert.NotAfter.After(handoverEnd) {
		// Due for renewal during a CA handover, but still good: renewing now
		// would use the new CA before clients trust it. Wait for the handover.
		reason = ""
	}
	if reason != "" {
		leaf, err := newServing(signer, p.dnsNames, now, p.validity)
		if err != nil {
			return r, fmt.Errorf("creating serving certificate: %w", err)
		}
		r.reasons = append(r.reasons, reason)
		r.next.serving = leaf
		r.changed = true
	}

	// Wake at the earliest moment a later plan would act.
	r.wake = r.next.signer.Cert.NotAfter.Add(-p.caRenewBefore)
	if t := r.next.serving.Cert.NotAfter.Add(-p.renewBefore); t.Before(r.wake) {
		r.wake = t
	}
	if !r.next.serving.IssuedBy(r.next.signer) && handoverEnd.Before(r.wake) {
		r.wake = handoverEnd
	}
	for _, c := range r.next.trusted[1:] {
		// An expired CA leaves the bundle.
		if c.NotAfter.Before(r.wake) {
			r.wake = c.NotAfter
		}
	}
	return r, nil
}

func caProblem(signer *pki.KeyPair, p policy, now time.Time) string {
	switch {
	case signer == nil:
		return "no usable CA in the Secret"
	case now.Before(signer.Cert.NotBefore):
		return "CA is not yet valid"
	case !now.Before(signer.Cert.NotAfter.Add(-p.caRenewBefore)):
		return fmt.Sprintf("CA expires at %s, within the renewal window", signer.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ""
}

func servingProblem(kp *pki.KeyPair, st state, p policy, now time.Time) string {
	if kp == nil {
		return "no usable serving certificate in the Secret"
	}
	if !stillUsable(kp, st, p, now) {
		return "serving certificate does not verify against the CA bundle for the webhook DNS names"
	}
	if !now.Before(kp.Cert.NotAfter.Add(-p.renewBefore)) {
		return fmt.Sprintf("serving certificate expires at %s, within the renewal window", kp.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ""
}

// stillUsable reports whether a client trusting the bundle would accept kp for
// every DNS name, right now.
func stillUsable(kp *pki.KeyPair, st state, p policy, now time.Time) bool {
	for _, name := range p.dnsNames {
		_, err := kp.Cert.Verify(x509.VerifyOptions{
			DNSName:     name,
			Roots:       st.pool(),
			CurrentTime: now,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			return false
		}
	}
	return true
}
