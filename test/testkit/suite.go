package testkit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Every Eventually and Consistently of a suite run by Main is bounded by
// these unless it says otherwise.
const (
	EventuallyTimeout = 30 * time.Second
	PollingInterval   = 100 * time.Millisecond
)

// Options shape a suite.
type Options struct {
	// Requires names binaries the suite runs (named, named-checkconf); a
	// missing one fails the suite at once, saying how to install it.
	Requires []string
	// CRDs are installed beside the project's (e.g. cert-manager's).
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// AddToScheme adds kinds beside the built-in and the project's ones.
	AddToScheme func(*runtime.Scheme) error
	// Logger replaces the default, which is quiet unless TEST_VERBOSE is
	// set.
	Logger *logr.Logger
	// WebhookPaths are folders or files of webhook configurations to
	// install, pointed at a local serving address (Suite.Webhook) whose
	// CA the API server trusts.
	WebhookPaths []string
	// Benchmarks says the package has benchmarks that need the suite.
	// Without it, a run that selects no test (`make bench`: -run '^$')
	// starts nothing: an API server and managers brought up for nothing
	// only fill the benchmark output with their shutdown errors.
	Benchmarks bool
}

// Suite is the API server a package's tests run against.
type Suite struct {
	Config *rest.Config
	Scheme *runtime.Scheme
	// Client talks to the API server directly, never through a cache, so
	// a test reads what is stored.
	Client client.WithWatch
	// Webhook is where the API server calls the installed webhooks
	// (LocalServingHost, LocalServingPort, LocalServingCertDir); nil unless
	// Options.WebhookPaths is set.
	Webhook *envtest.WebhookInstallOptions

	ctx   context.Context
	stops []func() error
}

// Main is a package's TestMain: it starts an API server with the
// project's CRDs, runs setup (package variables, managers), runs the tests
// and stops everything, then exits with the tests' result.
//
//	func TestMain(m *testing.M) { testkit.Main(m, testkit.Options{}, setup) }
func Main(m *testing.M, opts Options, setup func(*Suite) error) {
	os.Exit(run(m, opts, setup))
}

func run(m *testing.M, opts Options, setup func(*Suite) error) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if runsNoTest() && (!opts.Benchmarks || flagValue("test.bench") == "") {
		return m.Run()
	}
	ctrl.SetLogger(logger(opts))
	gomega.SetDefaultEventuallyTimeout(EventuallyTimeout)
	gomega.SetDefaultEventuallyPollingInterval(PollingInterval)
	gomega.SetDefaultConsistentlyPollingInterval(PollingInterval)
	for _, bin := range opts.Requires {
		if _, err := exec.LookPath(bin); err != nil {
			fmt.Fprintf(os.Stderr, "%s not found: run `make deps` (BIND 9.18 from Debian)\n", bin)
			return 1
		}
	}
	env, err := NewEnvironment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.CRDs = append(env.CRDs, opts.CRDs...)
	env.WebhookInstallOptions.Paths = opts.WebhookPaths
	if opts.AddToScheme != nil {
		if err := opts.AddToScheme(env.Scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-apiserver and etcd: %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Suite{Config: cfg, Scheme: env.Scheme, ctx: ctx}
	if len(opts.WebhookPaths) > 0 {
		s.Webhook = &env.WebhookInstallOptions
	}
	defer func() {
		cancel()
		for _, stop := range s.stops {
			if err := stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
	}()
	if s.Client, err = client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := setup(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// StartManager runs a manager for the whole suite (see StartManager).
func (s *Suite) StartManager(opts ctrl.Options, setup func(ctrl.Manager) error) error {
	stop, err := StartManager(s.ctx, s.Config, opts, setup)
	if err != nil {
		return err
	}
	s.stops = append(s.stops, stop)
	return nil
}

// StartStoppableManager is StartManager for a suite whose tests stop the
// manager and start another (an operator restarted): stop may be called
// once or more, and the suite stops the manager when it ends unless a test
// did.
func (s *Suite) StartStoppableManager(opts ctrl.Options, setup func(ctrl.Manager) error) (stop func() error, err error) {
	stop, err = StartManager(s.ctx, s.Config, opts, setup)
	if err != nil {
		return nil, err
	}
	stop = sync.OnceValue(stop)
	s.stops = append(s.stops, stop)
	return stop, nil
}

// StartManagerAs runs a manager for the whole suite as another identity:
// cfg is usually the suite's Config with Impersonate set.
func (s *Suite) StartManagerAs(cfg *rest.Config, opts ctrl.Options, setup func(ctrl.Manager) error) error {
	stop, err := StartManager(s.ctx, cfg, opts, setup)
	if err != nil {
		return err
	}
	s.stops = append(s.stops, stop)
	return nil
}

// StartManager starts a manager against cfg with the reconcilers setup
// registers, and returns once its cache has synced. opts defaults to the
// suite's scheme and no metrics listener. stop (also when ctx ends) stops
// it and reports whether it stopped cleanly within 30 seconds.
func StartManager(ctx context.Context, cfg *rest.Config, opts ctrl.Options, setup func(ctrl.Manager) error) (stop func() error, err error) {
	if opts.Scheme == nil {
		opts.Scheme = Scheme()
	}
	if opts.Metrics.BindAddress == "" {
		opts.Metrics = metricsserver.Options{BindAddress: "0"}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := setup(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop = func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("the manager did not stop within 30s")
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		_ = stop()
		return nil, errors.New("the manager's cache did not sync")
	}
	return stop, nil
}

// Await is Eventually for code that has no test to fail: a suite's setup,
// or a helper that returns an error. It polls check every polling until it
// passes or timeout ends, and then returns gomega's failure message as the
// error. check may end the wait at once with gomega.StopTrying.
func Await(timeout, polling time.Duration, check func(g gomega.Gomega)) error {
	var failure string
	g := gomega.NewGomega(func(message string, _ ...int) { failure = message })
	if g.Eventually(check).WithTimeout(timeout).WithPolling(polling).Should(gomega.Succeed()) {
		return nil
	}
	return errors.New(failure)
}

// logger is the suite's logger: the code under test logs at every level,
// which buries a failure unless someone asks (TEST_VERBOSE).
func logger(opts Options) logr.Logger {
	if opts.Logger != nil {
		return *opts.Logger
	}
	level := zapcore.Level(2)
	if os.Getenv("TEST_VERBOSE") != "" {
		level = -1
	}
	return zap.New(zap.WriteTo(os.Stderr), zap.Level(level))
}

// runsNoTest reports whether -run selects no test at all, as `make bench`
// asks with -run '^$'.
func runsNoTest() bool {
	return flagValue("test.run") == "^$"
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
