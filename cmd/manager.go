package main

import (
	"flag"
	"os"
	"os/exec"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers"
	"git.unkin.net/unkin/bind-operator/render"
)

// managerOptions are the manager's command-line flags.
type managerOptions struct {
	metricsAddr    string
	probeAddr      string
	leaderElection bool
	cluster        controllers.ClusterOptions
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

func runManager(args []string) error {
	var o managerOptions
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.BoolVar(&o.leaderElection, "leader-elect", false, "elect a leader so only one manager reconciles at a time")
	fs.StringVar(&o.cluster.BindImage, "bind-image", controllers.DefaultBindImage, "BIND 9.18 image for clusters that set none")
	fs.StringVar(&o.cluster.AgentImage, "agent-image", controllers.DefaultAgentImage, "agent sidecar image (this operator's image) for clusters that set none")
	fs.StringVar(&o.cluster.OperatorNamespace, "operator-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the operator's pods, admitted to the agents' port by each cluster's NetworkPolicy")
	fs.StringVar(&o.cluster.NamedCheckconf, "named-checkconf", "named-checkconf", "named-checkconf binary that vets every render before it replaces a running config")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	setupLog := ctrl.Log.WithName("setup")
	o.cluster.OperatorPodLabels = map[string]string{"app.kubernetes.io/name": "bind-operator"}
	if path, err := exec.LookPath(o.cluster.NamedCheckconf); err == nil {
		o.cluster.NamedCheckconf = path
	} else {
		// The image ships named-checkconf; running without it means a
		// broken render is only caught when named fails to start.
		setupLog.Error(err, "named-checkconf not found: rendered configs will not be checked before they roll out")
		o.cluster.NamedCheckconf = ""
	}

	scheme, err := newScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress: o.probeAddr,
		LeaderElection:         o.leaderElection,
		LeaderElectionID:       "bind-operator.bind.unkin.net",
	})
	if err != nil {
		return err
	}
	if err := (&controllers.BindClusterReconciler{
		Client:  mgr.GetClient(),
		Options: o.cluster,
		Paths:   render.DefaultPaths(),
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controllers.BindTSIGKeyReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controllers.DNSRecordReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
