package e2e

import (
	"context"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/internal/version"
)

// TestOperatorMetricsVerifiedAgainstItsCA: every manager replica serves
// its metrics with the certificate that names the metrics Service, signed
// by the CA in the operator's certificate Secret, to a ServiceAccount
// bound to the shipped metrics-reader ClusterRole: what the shipped
// ServiceMonitor has Prometheus do, without skipping verification
// (docs/monitoring.md). Not parallel: it reads every replica, and the
// chaos tests kill them.
func TestOperatorMetricsVerifiedAgainstItsCA(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fams := managerMetrics(ctx, t, metricsReaderToken(ctx, t))
	if len(fams) == 0 {
		t.Fatal("no operator replica answered")
	}
	for pod, f := range fams {
		if _, ok := f[version.BuildInfoName]; !ok {
			t.Errorf("%s serves no %s", pod, version.BuildInfoName)
		}
	}
}
