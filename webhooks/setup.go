package webhooks

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/imagepolicy"
	"git.unkin.net/unkin/bind-operator/internal/quota"
	"git.unkin.net/unkin/bind-operator/internal/recordindex"
	"git.unkin.net/unkin/bind-operator/internal/version"
)

// Options configure the webhooks. The zero value works: the release's
// image repositories allowed, pod CIDRs derived from Nodes only when
// DerivePodCIDRsFromNodes is set.
type Options struct {
	// PodCIDRs are the cluster's pod address ranges. Option statements that
	// name an address inside them are rejected (docs/behaviours.md, "No pod
	// IP in restart-scoped config").
	PodCIDRs []netip.Prefix
	// DerivePodCIDRsFromNodes reads Nodes' spec.podCIDRs at admission when
	// PodCIDRs is empty. Needs list on nodes.
	DerivePodCIDRsFromNodes bool
	// AllowedImages are the prefixes a BindCluster's images must start
	// with; the manager gives the BindCluster controller the same list.
	// Nil: the repositories of this release's images
	// (imagepolicy.DefaultAllowed of version.BindImage and
	// version.OperatorImage); []string{imagepolicy.AllowAny}: any image.
	AllowedImages []string
	// Rules replace the policy rules for option statements. Nil: PodIPRules.
	Rules []Rule
	// Reader reads referenced objects, Pods and Nodes. Nil: this API
	// group's objects from the manager's cache with the API server as
	// fallback, everything else from the API server (see cacheFirst).
	Reader client.Reader
	// NamedCheckconf is the named-checkconf binary the BindCluster webhook
	// runs on each candidate render. Empty: no check at admission.
	NamedCheckconf string
	// ConfigCheckTimeout bounds one such check. Zero:
	// DefaultConfigCheckTimeout.
	ConfigCheckTimeout time.Duration
	// SecretAccess answers whether the user behind a BindTSIGKey request
	// may read the Secret it imports. Nil: SubjectAccessReviews through
	// the manager's client.
	SecretAccess SecretAccess
	// Quota keeps what each namespace and zone holds and the limits they
	// are held to (docs/behaviours.md, "Quotas"); SetupWithManager feeds
	// it from the manager's informers. Nil: a tracker with
	// quota.DefaultLimits(). Limits of 0 turn the quotas off.
	Quota *quota.Tracker
}

// SetupWithManager registers the defaulting and validating webhooks of all
// nine kinds on mgr's webhook server.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.SecretAccess == nil {
		opts.SecretAccess = SubjectAccessReviews{Client: mgr.GetClient()}
	}
	ws, err := newWebhooks(cacheFirst{cache: mgr.GetCache(), api: mgr.GetAPIReader(), scheme: mgr.GetScheme()}, opts)
	if err != nil {
		return err
	}
	// DNSRecords by zone and name, from the cache the controllers keep
	// warm: the CNAME rule across DNSRecords looks up one name per call.
	names, err := recordindex.Names(context.Background(), mgr.GetCache())
	if err != nil {
		return fmt.Errorf("indexing DNSRecords for the webhooks: %w", err)
	}
	if opts.Reader == nil {
		ws.record.Index = names
	}
	tracker := opts.Quota
	if tracker == nil {
		tracker = quota.NewTracker(quota.DefaultLimits())
	}
	if err := tracker.Watch(context.Background(), mgr.GetCache()); err != nil {
		return fmt.Errorf("counting what namespaces and zones hold for the quotas: %w", err)
	}
	ws.quotas = &quotas{tracker: tracker, reader: ws.reader}
	return ws.register(mgr)
}

// webhooks is the set of per-kind webhooks sharing one reader and engine.
type webhooks struct {
	cluster *BindClusterWebhook
	zone    *BindZoneWebhook
	record  *DNSRecordWebhook
	view    *BindViewWebhook
	key     *BindTSIGKeyWebhook
	acl     *BindACLWebhook
	catalog *BindCatalogZoneWebhook
	policy  *BindPolicyWebhook
	dnssec  *BindDNSSECPolicyWebhook
	// reader is the one the webhooks read other objects with.
	reader client.Reader
	// quotas, when set, is asked by every validator (withQuota).
	quotas *quotas
}

func newWebhooks(r client.Reader, opts Options) (*webhooks, error) {
	if opts.Reader != nil {
		r = opts.Reader
	}
	rules := opts.Rules
	if rules == nil {
		rules = PodIPRules
	}
	engine, err := NewPolicyEngine(rules)
	if err != nil {
		return nil, fmt.Errorf("compiling webhook policy rules: %w", err)
	}
	allowed := opts.AllowedImages
	if allowed == nil {
		allowed = imagepolicy.DefaultAllowed(version.BindImage(), version.OperatorImage())
	}
	checker := NewConfigChecker(opts.NamedCheckconf, opts.ConfigCheckTimeout)
	w := &webhooks{
		cluster: &BindClusterWebhook{Reader: r, Engine: engine, AllowedImages: allowed,
			PodNetwork: podNetworkSource{r: r, cidrs: opts.PodCIDRs, deriveFromNode: opts.DerivePodCIDRsFromNodes},
			Checker:    checker},
		zone:    &BindZoneWebhook{Reader: r},
		record:  &DNSRecordWebhook{Reader: r},
		view:    &BindViewWebhook{Reader: r},
		key:     &BindTSIGKeyWebhook{Reader: r, Access: opts.SecretAccess},
		acl:     &BindACLWebhook{Reader: r},
		catalog: &BindCatalogZoneWebhook{Reader: r},
		policy:  &BindPolicyWebhook{Reader: r},
		dnssec:  &BindDNSSECPolicyWebhook{Checker: checker},
		reader:  r,
	}
	return w, nil
}

func (w *webhooks) register(mgr ctrl.Manager) error {
	for _, f := range []func() error{
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.BindCluster{}).WithDefaulter(w.cluster).WithValidator(withQuota[*v1alpha1.BindCluster](w.cluster, "BindCluster", w.quotas)).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.BindZone{}).WithDefaulter(w.zone).WithValidator(withQuota[*v1alpha1.BindZone](w.zone, "BindZone", w.quotas)).Complete()
		},
		func() error {
			// One call for the kind created by the thousand (oneCall).
			mgr.GetWebhookServer().Register(dnsRecordPath, withOneCall(func() *v1alpha1.DNSRecord { return &v1alpha1.DNSRecord{} }, w.record, withQuota[*v1alpha1.DNSRecord](w.record, "DNSRecord", w.quotas)))
			return nil
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.BindView{}).WithDefaulter(w.view).WithValidator(withQuota[*v1alpha1.BindView](w.view, "BindView", w.quotas)).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.BindTSIGKey{}).WithDefaulter(w.key).WithValidator(withQuota[*v1alpha1.BindTSIGKey](w.key, "BindTSIGKey", w.quotas)).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.BindACL{}).WithDefaulter(w.acl).WithValidator(withQuota[*v1alpha1.BindACL](w.acl, "BindACL", w.quotas)).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.BindCatalogZone{}).WithDefaulter(w.catalog).WithValidator(withQuota[*v1alpha1.BindCatalogZone](w.catalog, "BindCatalogZone", w.quotas)).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.BindPolicy{}).WithDefaulter(w.policy).WithValidator(withQuota[*v1alpha1.BindPolicy](w.policy, "BindPolicy", w.quotas)).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.BindDNSSECPolicy{}).WithDefaulter(w.dnssec).WithValidator(withQuota[*v1alpha1.BindDNSSECPolicy](w.dnssec, "BindDNSSECPolicy", w.quotas)).Complete()
		},
	} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}
