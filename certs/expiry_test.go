package certs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func expiries(t *testing.T, dir string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(ExpiryCollector(dir))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// The gauge reports the files the webhook server serves, as they are at
// each scrape: a renewal shows at once, a missing or broken file has no
// sample.
func TestExpiryGauge(t *testing.T) {
	dir := t.TempDir()
	if got := expiries(t, dir); len(got) != 0 {
		t.Fatalf("no files: want no samples, got %v", got)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	r := mustPlan(t, parseState(nil), testPolicy, now)
	if _, err := writeCertDir(dir, r.next.data()); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"serving": float64(r.next.serving.Cert.NotAfter.Unix()),
		"ca":      float64(r.next.signer.Cert.NotAfter.Unix()),
	}
	if got := expiries(t, dir); len(got) != 2 || got["serving"] != want["serving"] || got["ca"] != want["ca"] {
		t.Fatalf("got %v, want %v", got, want)
	}
	if want["serving"] != float64(now.Add(DefaultValidity).Unix()) {
		t.Fatalf("serving certificate expires at %v, want now + %s", want["serving"], DefaultValidity)
	}

	// Renewed near expiry: the next scrape reports the new certificate.
	later := r.next.serving.Cert.NotAfter.Add(-DefaultRenewBefore + time.Hour)
	renewed := mustPlan(t, roundTrip(t, r.next), testPolicy, later)
	if !renewed.changed {
		t.Fatal("no renewal inside the renewal window")
	}
	if _, err := writeCertDir(dir, renewed.next.data()); err != nil {
		t.Fatal(err)
	}
	if got := expiries(t, dir)["serving"]; got != float64(renewed.next.serving.Cert.NotAfter.Unix()) || got <= want["serving"] {
		t.Fatalf("after renewal serving = %v, want %v", got, renewed.next.serving.Cert.NotAfter.Unix())
	}

	if err := os.WriteFile(filepath.Join(dir, KeyTLSCert), []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := expiries(t, dir); len(got) != 1 || got["ca"] == 0 {
		t.Fatalf("broken tls.crt: want the CA sample only, got %v", got)
	}
	if n := testutil.CollectAndCount(ExpiryCollector(dir), ExpiryMetric); n != 1 {
		t.Fatalf("CollectAndCount = %d", n)
	}
}
