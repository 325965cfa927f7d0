package certs

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// Certificate modes chosen with --webhook-cert-mode.
const (
	// ModeExternal: something else (cert-manager, in config/default) puts
	// tls.crt and tls.key into the certificate folder and injects the CA.
	ModeExternal = "external"
	// ModeSelfManaged: the operator runs Manager itself.
	ModeSelfManaged = "self-managed"
)

// Flags are the manager's command-line settings for webhook certificates.
// The defaults match the names config/default produces (namePrefix
// "bind-operator-" on kubebuilder's webhook names).
type Flags struct {
	Mode    string
	Options Options
}

// BindFlags registers the flags on fs.
func (f *Flags) BindFlags(fs *flag.FlagSet) {
	o := &f.Options
	fs.StringVar(&f.Mode, "webhook-cert-mode", ModeExternal,
		"who provides the webhook TLS certificate: "+ModeExternal+" (cert-manager or any tool that fills --webhook-cert-dir) or "+ModeSelfManaged+" (the operator issues, injects and rotates it)")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", DefaultCertDir, "folder holding the webhook server's tls.crt and tls.key")
	fs.StringVar(&o.Namespace, "webhook-cert-namespace", "", "namespace of the certificate Secret and webhook Service (self-managed); defaults to $POD_NAMESPACE")
	fs.StringVar(&o.SecretName, "webhook-cert-secret", "webhook-server-cert", "Secret that stores the CA and serving certificate (self-managed)")
	fs.StringVar(&o.ServiceName, "webhook-service-name", "bind-operator-webhook-service", "webhook Service the certificate is issued for (self-managed)")
	fs.StringVar(&o.MetricsServiceName, "metrics-service-name", "bind-operator-controller-manager-metrics-service", "metrics Service whose names the serving certificate also carries, so that Prometheus can verify the metrics endpoint against ca.crt (self-managed; \"\": none)")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", DefaultClusterDomain, "cluster DNS domain of <svc>.<ns>.svc.<domain> names: the webhook certificate's (self-managed) and the SOA MNAME of BindZones that name none")
	fs.Func("webhook-mutating-configurations", "comma-separated MutatingWebhookConfigurations to inject the CA into (self-managed; default bind-operator-mutating-webhook-configuration)",
		func(s string) error { o.MutatingWebhookConfigurations = splitList(s); return nil })
	fs.Func("webhook-validating-configurations", "comma-separated ValidatingWebhookConfigurations to inject the CA into (self-managed; default bind-operator-validating-webhook-configuration)",
		func(s string) error { o.ValidatingWebhookConfigurations = splitList(s); return nil })
	fs.DurationVar(&o.Validity, "webhook-cert-validity", DefaultValidity, "lifetime of the serving certificate (self-managed)")
	fs.DurationVar(&o.RenewBefore, "webhook-cert-renew-before", DefaultRenewBefore, "renew the serving certificate this long before it expires (self-managed)")
	fs.DurationVar(&o.CAValidity, "webhook-ca-validity", DefaultCAValidity, "lifetime of the CA (self-managed)")
	fs.DurationVar(&o.CARenewBefore, "webhook-ca-renew-before", DefaultCARenewBefore, "replace the CA this long before it expires; the old CA stays trusted until it expires (self-managed)")
}

// Complete validates the flags after parsing and fills the defaults that
// depend on the environment.
func (f *Flags) Complete() error {
	switch f.Mode {
	case ModeExternal:
		return nil
	case ModeSelfManaged:
	default:
		return fmt.Errorf("--webhook-cert-mode must be %q or %q, not %q", ModeExternal, ModeSelfManaged, f.Mode)
	}
	o := &f.Options
	if o.Namespace == "" {
		// Set from the downward API in config/manager.
		o.Namespace = os.Getenv("POD_NAMESPACE")
	}
	if o.MutatingWebhookConfigurations == nil {
		o.MutatingWebhookConfigurations = []string{"bind-operator-mutating-webhook-configuration"}
	}
	if o.ValidatingWebhookConfigurations == nil {
		o.ValidatingWebhookConfigurations = []string{"bind-operator-validating-webhook-configuration"}
	}
	*o = o.withDefaults()
	return o.Validate()
}

// SelfManaged reports whether the operator must run Manager.
func (f *Flags) SelfManaged() bool { return f.Mode == ModeSelfManaged }

func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
