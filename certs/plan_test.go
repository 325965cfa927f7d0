package certs

import (
	"crypto/x509"
	"testing"
	"time"
)

var testPolicy = Options{Namespace: "ns", ServiceName: "svc"}.withDefaults().policy()

// roundTrip stores and re-reads a state, as a restart would.
func roundTrip(t *testing.T, st state) state {
	t.Helper()
	return parseState(st.data())
}

func mustPlan(t *testing.T, st state, p policy, now time.Time) planResult {
	t.Helper()
	r, err := plan(st, p, now)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPlanIssuesFromNothingAndThenKeeps(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	r := mustPlan(t, parseState(nil), testPolicy, now)
	if !r.changed || r.next.signer == nil || r.next.serving == nil {
		t.Fatalf("empty Secret: want a new CA and serving certificate, got changed=%v", r.changed)
	}
	if !stillUsable(r.next.serving, r.next, testPolicy, now) {
		t.Fatal("the new serving certificate does not verify against the new bundle")
	}
	st := roundTrip(t, r.next)
	again := mustPlan(t, st, testPolicy, now.Add(time.Hour))
	if again.changed {
		t.Fatalf("valid Secret re-issued: %v", again.reasons)
	}
	wantWake := st.serving.Cert.NotAfter.Add(-testPolicy.renewBefore)
	if !again.wake.Equal(wantWake) {
		t.Fatalf("wake = %s, want the serving renewal time %s", again.wake, wantWake)
	}
}

func TestIssuedCertificatesHaveTheRightShape(t *testing.T) {
	now := time.Now()
	r := mustPlan(t, parseState(nil), testPolicy, now)
	ca, leaf := r.next.signer.Cert, r.next.serving.Cert
	if !ca.IsCA || !ca.BasicConstraintsValid || !ca.MaxPathLenZero || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA: IsCA=%v MaxPathLenZero=%v KeyUsage=%b", ca.IsCA, ca.MaxPathLenZero, ca.KeyUsage)
	}
	if leaf.IsCA || leaf.KeyUsage != x509.KeyUsageDigitalSignature ||
		len(leaf.ExtKeyUsage) != 1 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("leaf: IsCA=%v KeyUsage=%b ExtKeyUsage=%v", leaf.IsCA, leaf.KeyUsage, leaf.ExtKeyUsage)
	}
	want := []string{"svc.ns.svc", "svc.ns.svc.cluster.local"}
	if len(leaf.DNSNames) != 2 || leaf.DNSNames[0] != want[0] || leaf.DNSNames[1] != want[1] {
		t.Errorf("leaf DNS names %v, want %v", leaf.DNSNames, want)
	}
	if leaf.PublicKeyAlgorithm != x509.ECDSA || ca.PublicKeyAlgorithm != x509.ECDSA {
		t.Error("keys must be ECDSA")
	}
	if got := leaf.NotAfter.Sub(now); got > testPolicy.validity || got < testPolicy.validity-time.Minute {
		t.Errorf("leaf lives %s, want %s", got, testPolicy.validity)
	}
	if ca.SerialNumber.Cmp(leaf.SerialNumber) == 0 {
		t.Error("serials must differ")
	}
}

func TestPlanRenewsServingCertificateNearExpiry(t *testing.T) {
	now := time.Now()
	st := roundTrip(t, mustPlan(t, parseState(nil), testPolicy, now).next)
	due := st.serving.Cert.NotAfter.Add(-testPolicy.renewBefore).Add(time.Second)
	r := mustPlan(t, st, testPolicy, due)
	if !r.changed || r.next.serving.Cert.Equal(st.serving.Cert) {
		t.Fatal("serving certificate inside its renewal window was kept")
	}
	if !r.next.signer.Cert.Equal(st.signer.Cert) || len(r.next.trusted) != 1 {
		t.Fatal("renewing the serving certificate must not touch the CA")
	}
	// One second earlier nothing is due.
	if r := mustPlan(t, st, testPolicy, due.Add(-2*time.Second)); r.changed {
		t.Fatalf("renewed early: %v", r.reasons)
	}
}

func TestPlanRotatesCAWithOverlapAndHandover(t *testing.T) {
	p := testPolicy
	p.caValidity = 400 * 24 * time.Hour // short enough to walk through
	t0 := time.Now()
	st := roundTrip(t, mustPlan(t, parseState(nil), p, t0).next)
	oldCA := st.signer.Cert
	t1 := oldCA.NotAfter.Add(-p.caRenewBefore).Add(time.Second)
	// The serving certificate has been renewed on schedule until just
	// before the CA's renewal window.
	st = roundTrip(t, mustPlan(t, st, p, t1.Add(-time.Hour)).next)
	if st.serving.Cert.CheckSignatureFrom(oldCA) != nil || !st.signer.Cert.Equal(oldCA) {
		t.Fatal("setup: expected a fresh serving certificate from the first CA")
	}

	// Step 1: the CA enters its renewal window. A new CA joins the bundle,
	// but the served certificate stays (nothing trusts the new CA yet).
	r1 := mustPlan(t, st, p, t1)
	if !r1.changed || r1.next.signer.Cert.Equal(oldCA) {
		t.Fatal("CA inside its renewal window was kept")
	}
	if len(r1.next.trusted) != 2 || !r1.next.trusted[0].Equal(r1.next.signer.Cert) || !r1.next.trusted[1].Equal(oldCA) {
		t.Fatal("bundle must be [new CA, old CA]")
	}
	if !r1.next.serving.Cert.Equal(st.serving.Cert) {
		t.Fatal("served certificate replaced although it was not due")
	}
	if !stillUsable(r1.next.serving, r1.next, p, t1) {
		t.Fatal("after CA rotation the served certificate no longer verifies")
	}
	if !r1.wake.Equal(r1.next.signer.IssuedAt().Add(p.caHandover)) {
		t.Fatalf("wake %s, want the end of the handover", r1.wake)
	}
	st2 := roundTrip(t, r1.next)
	if r := mustPlan(t, st2, p, t1.Add(p.caHandover-time.Second)); r.changed {
		t.Fatalf("changed during the handover: %v", r.reasons)
	}

	// Step 2: after the handover the served certificate moves to the new CA;
	// the old CA stays trusted.
	t2 := t1.Add(p.caHandover)
	r2 := mustPlan(t, st2, p, t2)
	if !r2.changed || r2.next.serving.Cert.CheckSignatureFrom(st2.signer.Cert) != nil {
		t.Fatal("served certificate not moved to the new CA after the handover")
	}
	if len(r2.next.trusted) != 2 {
		t.Fatal("old CA dropped from the bundle before it expired")
	}

	// Step 3: once the old CA expires it leaves the bundle.
	st3 := roundTrip(t, r2.next)
	r3 := mustPlan(t, st3, p, oldCA.NotAfter.Add(time.Second))
	if len(r3.next.trusted) != 1 || !r3.next.trusted[0].Equal(st3.signer.Cert) {
		t.Fatalf("expired CA still in the bundle (%d CAs)", len(r3.next.trusted))
	}
}

func TestPlanReplacesBrokenOrForeignMaterial(t *testing.T) {
	now := time.Now()
	good := mustPlan(t, parseState(nil), testPolicy, now).next.data()
	other := testPolicy
	other.dnsNames = []string{"other.ns.svc"}
	foreign := mustPlan(t, parseState(nil), other, now).next.data()
	for name, mutate := range map[string]func(d map[string][]byte){
		"garbage tls.crt":              func(d map[string][]byte) { d[KeyTLSCert] = []byte("not pem") },
		"tls.key of another cert":      func(d map[string][]byte) { d[KeyTLSKey] = foreign[KeyTLSKey] },
		"serving cert for other names": func(d map[string][]byte) { d[KeyTLSCert], d[KeyTLSKey] = foreign[KeyTLSCert], foreign[KeyTLSKey] },
		"missing ca.key":               func(d map[string][]byte) { delete(d, KeyCAKey) },
	} {
		t.Run(name, func(t *testing.T) {
			d := map[string][]byte{}
			for k, v := range good {
				d[k] = v
			}
			mutate(d)
			r := mustPlan(t, parseState(d), testPolicy, now)
			if !r.changed {
				t.Fatal("kept broken material")
			}
			if !stillUsable(r.next.serving, r.next, testPolicy, now) {
				t.Fatal("result does not verify")
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	base := Options{Namespace: "ns", SecretName: "s", ServiceName: "svc", ValidatingWebhookConfigurations: []string{"v"}}.withDefaults()
	if err := base.Validate(); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	for name, mutate := range map[string]func(o *Options){
		"no namespace":                      func(o *Options) { o.Namespace = "" },
		"no webhook configurations":         func(o *Options) { o.ValidatingWebhookConfigurations = nil },
		"renew before longer than validity": func(o *Options) { o.RenewBefore = o.Validity },
		"CA renewed after the leaf":         func(o *Options) { o.CARenewBefore = o.RenewBefore },
	} {
		o := base
		mutate(&o)
		if o.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPlanPostponesRenewalDuringHandover(t *testing.T) {
	p := testPolicy
	t0 := time.Now()
	st := roundTrip(t, mustPlan(t, parseState(nil), p, t0).next)
	// A second CA has just joined the bundle (as after a CA rotation) ...
	next, err := newCA(t0, p.caValidity)
	if err != nil {
		t.Fatal(err)
	}
	st.trusted = orderBundle(next.Cert, st.trusted, t0)
	st.signer = next
	st = roundTrip(t, st)
	// ... and the serving certificate from the old CA falls due right now.
	due := st.serving.Cert.NotAfter.Add(-p.renewBefore).Add(time.Second)
	p.caHandover = due.Sub(next.IssuedAt()) + time.Hour
	r := mustPlan(t, st, p, due)
	if r.changed {
		t.Fatalf("renewed during the handover with a CA nobody trusts yet: %v", r.reasons)
	}
	r = mustPlan(t, st, p, due.Add(time.Hour))
	if !r.changed || r.next.serving.Cert.CheckSignatureFrom(next.Cert) != nil {
		t.Fatal("not renewed from the new CA after the handover")
	}
}
