package certs

import (
	"errors"
	"fmt"
	"time"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Defaults follow cert-manager's: a serving certificate lives 90 days and is
// renewed with a third of its life left. The CA lives five years and is
// replaced half a year ahead, which must exceed RenewBefore (see Validate).
const (
	DefaultValidity       = 90 * 24 * time.Hour
	DefaultRenewBefore    = 30 * 24 * time.Hour
	DefaultCAValidity     = 5 * 365 * 24 * time.Hour
	DefaultCARenewBefore  = 180 * 24 * time.Hour
	DefaultCAHandover     = 15 * time.Minute
	DefaultResyncInterval = 10 * time.Minute
	DefaultClusterDomain  = bindv1alpha1.DefaultClusterDomain
	DefaultCertDir        = "/tmp/k8s-webhook-server/serving-certs"
)

// Options configure the self-managed certificate Manager.
type Options struct {
	// Namespace holds the Secret and the webhook Service.
	Namespace string
	// SecretName is the Secret that stores the CA and serving certificate.
	SecretName string
	// ServiceName is the webhook Service; the certificate is issued for
	// <svc>.<ns>.svc and <svc>.<ns>.svc.<ClusterDomain>.
	ServiceName string
	// MetricsServiceName is the metrics Service, whose names the
	// certificate carries too: the metrics server serves the same one, so
	// that Prometheus verifies it against ca.crt. Empty: none.
	MetricsServiceName string
	ClusterDomain      string
	// MutatingWebhookConfigurations and ValidatingWebhookConfigurations are
	// the configurations whose clientConfig.caBundle the Manager keeps set.
	MutatingWebhookConfigurations   []string
	ValidatingWebhookConfigurations []string
	// CertDir receives tls.crt, tls.key and ca.crt for the webhook server.
	CertDir string

	// Validity and RenewBefore govern the serving certificate.
	Validity    time.Duration
	RenewBefore time.Duration
	// CAValidity and CARenewBefore govern the CA.
	CAValidity    time.Duration
	CARenewBefore time.Duration
	// CAHandover is how long a new CA sits in the bundle before it signs
	// the served certificate, so every client learns it first.
	CAHandover time.Duration
	// ResyncInterval bounds the time between two checks even when nothing
	// changes, as a safety net under the watches.
	ResyncInterval time.Duration
}

// withDefaults fills every zero field.
func (o Options) withDefaults() Options {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&o.Validity, DefaultValidity)
	set(&o.RenewBefore, DefaultRenewBefore)
	set(&o.CAValidity, DefaultCAValidity)
	set(&o.CARenewBefore, DefaultCARenewBefore)
	set(&o.CAHandover, DefaultCAHandover)
	set(&o.ResyncInterval, DefaultResyncInterval)
	if o.ClusterDomain == "" {
		o.ClusterDomain = DefaultClusterDomain
	}
	if o.CertDir == "" {
		o.CertDir = DefaultCertDir
	}
	return o
}

// Validate rejects settings under which rotation could not work.
func (o Options) Validate() error {
	var errs []error
	for name, v := range map[string]string{"Namespace": o.Namespace, "SecretName": o.SecretName, "ServiceName": o.ServiceName} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	if len(o.MutatingWebhookConfigurations)+len(o.ValidatingWebhookConfigurations) == 0 {
		errs = append(errs, errors.New("name at least one webhook configuration to inject the CA into"))
	}
	if o.RenewBefore <= 0 || o.RenewBefore >= o.Validity {
		errs = append(errs, fmt.Errorf("RenewBefore (%s) must be positive and shorter than Validity (%s)", o.RenewBefore, o.Validity))
	}
	if o.CARenewBefore >= o.CAValidity {
		errs = append(errs, fmt.Errorf("CARenewBefore (%s) must be shorter than CAValidity (%s)", o.CARenewBefore, o.CAValidity))
	}
	// A serving certificate never outlives its CA. If the CA were renewed
	// later than the serving certificate, the serving certificate would be
	// due the moment it was issued and be re-issued on every check.
	if o.CARenewBefore <= o.RenewBefore+o.CAHandover {
		errs = append(errs, fmt.Errorf("CARenewBefore (%s) must exceed RenewBefore + CAHandover (%s)", o.CARenewBefore, o.RenewBefore+o.CAHandover))
	}
	if o.CAHandover < 0 || o.ResyncInterval <= 0 {
		errs = append(errs, errors.New("CAHandover must not be negative and ResyncInterval must be positive"))
	}
	return errors.Join(errs...)
}

// DNSNames are the names the API server may dial the webhook Service by,
// then those Prometheus verifies the metrics Service by.
func (o Options) DNSNames() []string {
	var names []string
	for _, svc := range []string{o.ServiceName, o.MetricsServiceName} {
		if svc == "" {
			continue
		}
		base := svc + "." + o.Namespace + ".svc"
		names = append(names, base, base+"."+o.ClusterDomain)
	}
	return names
}

func (o Options) policy() policy {
	return policy{
		dnsNames:      o.DNSNames(),
		validity:      o.Validity,
		renewBefore:   o.RenewBefore,
		caValidity:    o.CAValidity,
		caRenewBefore: o.CARenewBefore,
		caHandover:    o.CAHandover,
	}
}
