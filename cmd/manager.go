package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/certs"
	"git.unkin.net/unkin/bind-operator/controllers/catalogs"
	"git.unkin.net/unkin/bind-operator/controllers/clusters"
	"git.unkin.net/unkin/bind-operator/controllers/configstatus"
	"git.unkin.net/unkin/bind-operator/controllers/dnsrecords"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/controllers/tsigkeys"
	"git.unkin.net/unkin/bind-operator/controllers/zones"
	"git.unkin.net/unkin/bind-operator/internal/apiwait"
	"git.unkin.net/unkin/bind-operator/internal/imagepolicy"
	"git.unkin.net/unkin/bind-operator/internal/metricsauth"
	"git.unkin.net/unkin/bind-operator/internal/quota"
	"git.unkin.net/unkin/bind-operator/internal/version"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/webhooks"
)

// The webhooks derive the pod CIDRs from the Nodes when none are given.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// Metrics are served behind authentication and authorization.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// managerOptions are the manager's command-line flags.
type managerOptions struct {
	metricsAddr    string
	secureMetrics  bool
	probeAddr      string
	pprofAddr      string
	webhookPort    int
	leaderElection bool
	podCIDRs       string
	allowedImages  string
	cluster        clusters.ClusterOptions
	certs          certs.Flags
	zoneResync     time.Duration
	enableHTTP2    bool
	checkTimeout   time.Duration
	quota          quota.Limits
}

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := bindv1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

func parseManagerFlags(args []string) (*managerOptions, *zap.Options, error) {
	var o managerOptions
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "address of the Prometheus metrics endpoint; 0 disables it")
	fs.BoolVar(&o.secureMetrics, "metrics-secure", true, "serve metrics over HTTPS with Kubernetes authentication and authorization")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof endpoints (heap and CPU profiles), unauthenticated: bind it to 127.0.0.1 and port-forward; 0 disables it")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "port of the admission webhook server")
	fs.BoolVar(&o.leaderElection, "leader-elect", false, "elect a leader so only one manager reconciles at a time")
	fs.StringVar(&o.podCIDRs, "pod-cidrs", "", "comma-separated pod CIDRs; option statements naming an address inside them are rejected. Empty: read from the Nodes' spec.podCIDRs")
	fs.StringVar(&o.cluster.BindImage, "bind-image", version.BindImage(), "BIND 9.18 image of clusters that pin none (empty spec.image). The default is this release's, so such clusters move with the operator's upgrades")
	fs.StringVar(&o.cluster.AgentImage, "agent-image", version.OperatorImage(), "agent sidecar image of clusters that pin none (empty spec.agentImage). The default is this operator's own image, so such clusters move with its upgrades")
	fs.StringVar(&o.allowedImages, "allowed-images", "", "comma-separated prefixes a BindCluster's spec.image and spec.agentImage must start with, since its pods mount the cluster's keys: the webhook refuses others, and a cluster pinning one the list no longer allows is not rolled; \"*\" allows any image. Empty: the repositories of --bind-image and --agent-image, at any tag or digest")
	fs.StringVar(&o.cluster.OperatorNamespace, "operator-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the operator's pods, admitted to the agents' port by each cluster's NetworkPolicy")
	fs.Func("metrics-namespace-selector", "label selector of the namespaces whose pods (Prometheus) each cluster's NetworkPolicy admits to the agents' metrics port; \"\" admits every namespace. Default: bind.unkin.net/metrics=allowed", func(v string) error {
		sel, err := metav1.ParseToLabelSelector(v)
		if err != nil {
			return fmt.Errorf("not a label selector such as kubernetes.io/metadata.name=monitoring: %w", err)
		}
		o.cluster.MetricsNamespaces = sel
		return nil
	})
	fs.DurationVar(&o.zoneResync, "zone-resync-period", reconcileutil.DefaultResyncPeriod, "how often each BindZone and DNSRecord compares the records named serves with what it declares and repairs declared data (on a BindZone, annotation bind.unkin.net/resync forces one at once)")
	fs.StringVar(&o.cluster.NamedCheckconf, "named-checkconf", "named-checkconf", "named-checkconf binary that vets every render before it replaces a running config")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false, "serve HTTP/2 on the webhook and metrics servers; off by default because of the HTTP/2 Stream Cancellation and Rapid Reset CVEs (GHSA-qppj-fm5r-hxr3, GHSA-4374-p667-p6c8)")
	fs.DurationVar(&o.checkTimeout, "admission-config-check-timeout", webhooks.DefaultConfigCheckTimeout, "bound on the named-checkconf run of a BindCluster's candidate config in the validating webhook (webhook timeoutSeconds is 10); a check that does not finish is a warning")
	bindQuotaFlags(fs, &o.quota)
	o.certs.BindFlags(fs)
	zapOpts := &zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if err := checkQuotaFlags(o.quota); err != nil {
		return nil, nil, err
	}
	if err := o.certs.Complete(); err != nil {
		return nil, nil, err
	}
	o.cluster.AllowedImages = allowedImages(&o)
	return &o, zapOpts, nil
}

// bindQuotaFlags binds the quotas' flags to l, each defaulting to its
// quota.Default* (docs/behaviours.md, "Quotas"). The bytes take a
// Kubernetes quantity (16Mi) or a number of bytes.
func bindQuotaFlags(fs *flag.FlagSet, l *quota.Limits) {
	*l = quota.DefaultLimits()
	fs.Int64Var(&l.NamespaceObjects, quota.FlagNamespaceObjects, l.NamespaceObjects, "bind.unkin.net objects one namespace may hold; the webhooks refuse a create past it (0: no limit)")
	fs.Var((*byteQuantity)(&l.NamespaceBytes), quota.FlagNamespaceBytes, "bytes of spec (as JSON) the bind.unkin.net objects of one namespace may hold, e.g. 16Mi; the webhooks refuse a create or a growing update past it (0: no limit)")
	fs.Int64Var(&l.ZoneRecords, quota.FlagZoneRecords, l.ZoneRecords, "record sets one BindZone may hold: its spec.records and the DNSRecords it admits (0: no limit)")
	fs.Var((*byteQuantity)(&l.ZoneBytes), quota.FlagZoneBytes, "bytes of those record sets one BindZone may hold, e.g. 8Mi (0: no limit)")
}

// checkQuotaFlags refuses a negative limit.
func checkQuotaFlags(l quota.Limits) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{quota.FlagNamespaceObjects, l.NamespaceObjects}, {quota.FlagNamespaceBytes, l.NamespaceBytes}, {quota.FlagZoneRecords, l.ZoneRecords}, {quota.FlagZoneBytes, l.ZoneBytes}} {
		if f.v < 0 {
			return fmt.Errorf("--%s is %d: a limit is 0 (none) or more", f.name, f.v)
		}
	}
	return nil
}

// byteQuantity is a flag of bytes written as a Kubernetes quantity.
type byteQuantity int64

func (b *byteQuantity) String() string {
	if b == nil {
		return "0"
	}
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *byteQuantity) Set(s string) error {
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not a number of bytes such as 16Mi or 16777216: %w", err)
	}
	v, ok := q.AsInt64()
	if !ok {
		return fmt.Errorf("%s is not a whole number of bytes", s)
	}
	*b = byteQuantity(v)
	return nil
}

// apiConfig is how the manager talks to the API server: without gzip.
// Since Kubernetes 1.37 (WatchListCompression) the API server compresses
// each event of an informer's watch as a gzip member of its own, for each
// watcher: a compressor reset and a deflate per event on the API server,
// whose CPU is what the operator's throughput waits on, and a gzip reader
// per watch here (2.6 MiB of the manager's live heap at 10,000
// DNSRecords). The manager runs next to the API server; the bytes saved
// are not worth that (docs/behaviours.md, "the manager's memory").
func apiConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
	return cfg
}

func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("--pod-cidrs: %q is not a CIDR prefix such as 10.244.0.0/16", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func runManager(args []string) error {
	o, zapOpts, err := parseManagerFlags(args)
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(zapOpts), zap.RawZapOpts(uberzap.WrapCore(func(c zapcore.Core) zapcore.Core { return lazyFields{c} }))))
	setupLog := ctrl.Log.WithName("setup")
	if err := announce(setupLog, crmetrics.Registry, o); err != nil {
		return err
	}
	podCIDRs, err := parsePrefixes(o.podCIDRs)
	if err != nil {
		return err
	}
	o.cluster.OperatorPodLabels = map[string]string{"app.kubernetes.io/name": "bind-operator"}
	if path, err := exec.LookPath(o.cluster.NamedCheckconf); err == nil {
		o.cluster.NamedCheckconf = path
	} else {
		// The image ships named-checkconf; without it a broken render is
		// only caught when named fails to start.
		setupLog.Error(err, "named-checkconf not found: rendered configs will not be checked before they roll out")
		o.cluster.NamedCheckconf = ""
	}

	scheme, err := newScheme()
	if err != nil {
		return err
	}
	cfg := apiConfig(ctrl.GetConfigOrDie())
	ctx := ctrl.SetupSignalHandler()
	// The manager's cache is built from the API's discovery: wait out an
	// API server restart here instead of exiting into the kubelet's
	// crash-loop back-off.
	if err := apiwait.Ready(ctx, cfg, 2*time.Minute, setupLog); err != nil {
		return err
	}
	// HTTP/2 is off unless asked for (certs.ServingTLSOptions).
	tlsOpts := certs.ServingTLSOptions(o.enableHTTP2)
	metrics := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics, TLSOpts: tlsOpts}
	if o.secureMetrics {
		metrics.FilterProvider = metricsauth.Filter
		// The webhooks' certificate, which also names the metrics Service
		// (self-managed: --metrics-service-name; cert-manager: the
		// Certificate's dnsNames): Prometheus verifies it against the
		// Secret's ca.crt instead of skipping verification. certwatcher
		// reloads it when it is renewed.
		metrics.CertDir = o.certs.Options.CertDir
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metrics,
		HealthProbeBindAddress: o.probeAddr,
		PprofBindAddress:       o.pprofAddr,
		LeaderElection:         o.leaderElection,
		LeaderElectionID:       "bind-operator.bind.unkin.net",
		WebhookServer:          webhook.NewServer(webhook.Options{Port: o.webhookPort, CertDir: o.certs.Options.CertDir, TLSOpts: tlsOpts}),
		// Only the operator's own (labelled) Secrets, ConfigMaps, Services,
		// StatefulSets, PDBs, NetworkPolicies and Pods are cached; anything
		// else the controllers read (imported TSIG Secrets, an object in a
		// NameConflict) comes from the API server on demand.
		Cache:     reconcileutil.CacheOptions(cfg),
		NewClient: reconcileutil.NewClient,
	})
	if err != nil {
		return err
	}
	if o.certs.SelfManaged() {
		// The webhook server reads its certificate when it starts, before
		// any other runnable: issue (or reuse) it first.
		c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return err
		}
		m, err := certs.New(c, o.certs.Options)
		if err != nil {
			return err
		}
		if err := m.Bootstrap(ctx); err != nil {
			return fmt.Errorf("self-managed webhook certificates: %w", err)
		}
		if err := mgr.Add(m); err != nil {
			return err
		}
	}

	webhookOpts := webhooks.Options{
		PodCIDRs:                podCIDRs,
		DerivePodCIDRsFromNodes: len(podCIDRs) == 0,
		AllowedImages:           o.cluster.AllowedImages,
		NamedCheckconf:          o.cluster.NamedCheckconf,
		ConfigCheckTimeout:      o.checkTimeout,
		Quota:                   quota.NewTracker(o.quota),
	}
	rechecks, err := newRechecks(webhookOpts, crmetrics.Registry, mgr.GetCache())
	if err != nil {
		return err
	}
	if err := registerAlertMetrics(crmetrics.Registry, mgr.GetCache(), o.certs.Options.CertDir); err != nil {
		return err
	}
	if err := setupControllers(mgr, o, rechecks); err != nil {
		return err
	}
	if err := webhooks.SetupWithManager(mgr, webhookOpts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhooks", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// announce says once which release starts and with which default images,
// and exports the release as bind_operator_build_info on reg (the
// registry controller-runtime serves at --metrics-bind-address).
func announce(log logr.Logger, reg prometheus.Registerer, o *managerOptions) error {
	log.Info("starting", "version", version.Version(), "commit", version.Commit(), "go", goruntime.Version(),
		"bindImage", o.cluster.BindImage, "agentImage", o.cluster.AgentImage,
		"quotaNamespaceObjects", o.quota.NamespaceObjects, "quotaNamespaceBytes", o.quota.NamespaceBytes,
		"quotaZoneRecords", o.quota.ZoneRecords, "quotaZoneBytes", o.quota.ZoneBytes)
	return version.Register(reg)
}

// newRechecks is how the controllers re-check stored objects: the
// webhooks' rules that need nothing but the object (webhooks.Rechecker),
// with the same policy rules and pod CIDRs as the webhooks, and the
// bind_operator_invalid_objects gauge on reg, counted from reader
// (docs/behaviours.md, "Stored objects are re-checked").
func newRechecks(opts webhooks.Options, reg prometheus.Registerer, reader client.Reader) (*reconcileutil.Rechecks, error) {
	rc, err := webhooks.NewRechecker(opts)
	if err != nil {
		return nil, err
	}
	rechecks := reconcileutil.NewRechecks(rc.Recheck)
	if err := reg.Register(rechecks.Collector(reader)); err != nil {
		return nil, fmt.Errorf("registering %s: %w", reconcileutil.InvalidObjectsMetric, err)
	}
	return rechecks, nil
}

// registerAlertMetrics exports on reg what the shipped alerts read besides
// controller-runtime's own metrics (config/monitoring/prometheusrule.yaml):
// bind_operator_conditions, counted from reader, and
// bind_operator_certificate_expiry_timestamp_seconds, read from the
// webhook server's certDir.
func registerAlertMetrics(reg prometheus.Registerer, reader client.Reader, certDir string) error {
	if err := reg.Register(reconcileutil.ConditionsCollector(reader)); err != nil {
		return fmt.Errorf("registering %s: %w", reconcileutil.ConditionsMetric, err)
	}
	if err := reg.Register(certs.ExpiryCollector(certDir)); err != nil {
		return fmt.Errorf("registering %s: %w", certs.ExpiryMetric, err)
	}
	return nil
}

func setupControllers(mgr ctrl.Manager, o *managerOptions, rechecks *reconcileutil.Rechecks) error {
	// DNSRecords and inline records share one UPDATE batcher and its
	// kept connections.
	updates := batch.NewUpdates(0, 0)
	// Deleted DNSRecords' sets stay owned until their data is gone.
	deleted := dnsrecords.NewDeletedRecords()
	for _, r := range []interface{ SetupWithManager(ctrl.Manager) error }{
		&clusters.BindClusterReconciler{Client: mgr.GetClient(), Options: o.cluster, Paths: render.DefaultPaths(), Rechecks: rechecks},
		&tsigkeys.BindTSIGKeyReconciler{Client: mgr.GetClient(), Rechecks: rechecks},
		&dnsrecords.DNSRecordReconciler{Client: mgr.GetClient(), Updates: updates, Deleted: deleted, ResyncPeriod: o.zoneResync, Rechecks: rechecks},
		&zones.BindZoneReconciler{Client: mgr.GetClient(), Updates: updates, Deleted: deleted, Paths: render.DefaultPaths(), ResyncPeriod: o.zoneResync, ClusterDomain: o.certs.Options.ClusterDomain, Rechecks: rechecks},
		&catalogs.BindCatalogZoneReconciler{Client: mgr.GetClient(), Rechecks: rechecks},
		&configstatus.ConfigStatusReconciler{Client: mgr.GetClient(), Rechecks: rechecks},
	} {
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

// allowedImages is --allowed-images as a list, which the webhook and the
// BindCluster controller both get; unset, the repositories of the default
// images.
func allowedImages(o *managerOptions) []string {
	if strings.TrimSpace(o.allowedImages) == "" {
		return imagepolicy.DefaultAllowed(o.cluster.BindImage, o.cluster.AgentImage)
	}
	var out []string
	for _, p := range strings.Split(o.allowedImages, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
