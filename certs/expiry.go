package certs

import (
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"git.unkin.net/unkin/bind-operator/pki"
)

// ExpiryMetric is the gauge of when the webhook's certificates expire,
// read by the shipped alert BindOperatorCertificateExpiringSoon
// (config/monitoring/prometheusrule.yaml).
const ExpiryMetric = "bind_operator_certificate_expiry_timestamp_seconds"

var expiryDesc = prometheus.NewDesc(ExpiryMetric,
	"When the webhook's certificates in --webhook-cert-dir expire (Unix time): certificate=\"serving\" is tls.crt, the one the webhook server presents; certificate=\"ca\" is the latest-expiring CA of ca.crt, the bundle injected into the webhook configurations.",
	[]string{"certificate"}, nil)

// ExpiryCollector is the bind_operator_certificate_expiry_timestamp_seconds
// gauge, read from the files in dir at each scrape: the files the webhook
// server serves, whoever wrote them (the self-managed rotation or
// cert-manager's Secret mounted there), so a renewal shows at the next
// scrape. A file missing or unreadable has no sample (the webhook server
// then fails its readiness check).
func ExpiryCollector(dir string) prometheus.Collector { return expiryCollector{dir: dir} }

type expiryCollector struct{ dir string }

func (c expiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- expiryDesc }

func (c expiryCollector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range []struct{ file, label string }{{KeyTLSCert, "serving"}, {KeyCACert, "ca"}} {
		data, err := os.ReadFile(filepath.Join(c.dir, f.file))
		if err != nil {
			continue
		}
		certs, err := pki.DecodeCerts(data)
		if err != nil {
			continue
		}
		// The serving certificate is the leaf, first in tls.crt; of a CA
		// bundle (two CAs while one hands over to the next), the newest.
		notAfter := certs[0].NotAfter
		if f.label == "ca" {
			for _, c := range certs[1:] {
				if c.NotAfter.After(notAfter) {
					notAfter = c.NotAfter
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, float64(notAfter.Unix()), f.label)
	}
}
