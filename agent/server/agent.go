// Package server is the pod agent: the HTTPS API the operator calls
// (mutual TLS; package agent describes the trust model), readiness and
// liveness for the kubelet, and Prometheus metrics, all backed by named's
// control channel, DNS and statistics channel on loopback.
//
// Two listeners:
//
//   - the API (default :8453): HTTPS, client certificate from the cluster's
//     agent CA required; the endpoints of package agent;
//   - metrics (default :9119): plain HTTP for the kubelet and Prometheus:
//     GET /readyz, GET /healthz, GET /metrics. Nothing there changes state.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"git.unkin.net/unkin/bind-operator/agent/bindstats"
	"git.unkin.net/unkin/bind-operator/internal/version"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/rndc"
)

// Default listen addresses: the StatefulSet's agent and metrics ports.
const (
	DefaultListen        = ":8453"
	DefaultMetricsListen = ":9119"
)

// Config configures an Agent. Zero fields take the pod's defaults.
type Config struct {
	Paths render.Paths
	// Listen and MetricsListen are the API and metrics addresses (Run only).
	Listen, MetricsListen string
	// ControlAddr is named's control channel (default 127.0.0.1:953).
	ControlAddr string
	// ControlKeyFile holds the control key (default KeysDir/control.conf).
	ControlKeyFile string
	// StatisticsURL is named's JSON statistics (default
	// http://127.0.0.1:8053/json/v1).
	StatisticsURL string
	// DNSAddr is where readiness queries named (default 127.0.0.1:53).
	DNSAddr string
	// ReadyInterval is the period of readiness checks (default 1 s).
	ReadyInterval time.Duration
	// TLS replaces the API's TLS config read from KeysDir (tests).
	TLS *tls.Config
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Agent is one pod's agent.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	store   *store
	owners  *owners
	api     *session // API requests
	probe   *session // readiness: never queued behind a large batch
	ready   *readiness
	metrics *agentMetrics
	reg     *prometheus.Registry
	tls     *tls.Config

	// opMu serialises zone changes: an ensure is several commands
	// (addzone, showzone, modzone) that must not interleave with another
	// ensure or delete of the same zone.
	opMu sync.Mutex
}

// New prepares an agent: loads the expected-zone list and the TLS material
// (so a pod with missing files fails at start, visibly).
func New(cfg Config) (*Agent, error) {
	if cfg.Paths == (render.Paths{}) {
		cfg.Paths = render.DefaultPaths()
	}
	if !filepath.IsAbs(cfg.Paths.DataDir) {
		return nil, fmt.Errorf("agent: data dir %q must be absolute", cfg.Paths.DataDir)
	}
	if cfg.ControlAddr == "" {
		cfg.ControlAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(render.ControlPort))
	}
	if cfg.ControlKeyFile == "" {
		cfg.ControlKeyFile = filepath.Join(cfg.Paths.KeysDir, render.FileControl)
	}
	if cfg.StatisticsURL == "" {
		cfg.StatisticsURL = fmt.Sprintf("http://127.0.0.1:%d/json/v1", render.StatisticsPort)
	}
	if cfg.DNSAddr == "" {
		cfg.DNSAddr = "127.0.0.1:53"
	}
	if cfg.ReadyInterval <= 0 {
		cfg.ReadyInterval = time.Second
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.MetricsListen == "" {
		cfg.MetricsListen = DefaultMetricsListen
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	st, err := openStore(cfg.Paths.DataDir)
	if err != nil {
		return nil, err
	}
	own, err := openOwners(cfg.Paths.DataDir)
	if err != nil {
		return nil, err
	}
	// A clean-up: what it cannot remove stays, and the agent serves.
	n, err := sweepStaged(cfg.Paths.DataDir)
	if n > 0 {
		cfg.Logger.Info("removed files staged by an earlier run", "count", n)
	}
	if err != nil {
		cfg.Logger.Warn("some files staged by an earlier run are left", "error", err)
	}
	tlsCfg := cfg.TLS
	if tlsCfg == nil {
		st, err := newTLSFiles(cfg.Paths.KeysDir)
		if err != nil {
			return nil, fmt.Errorf("agent: TLS material in %s: %w", cfg.Paths.KeysDir, err)
		}
		tlsCfg = st.config()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(bindstats.New(bindstats.Options{URL: cfg.StatisticsURL}))
	// The release this agent runs, as the manager exports it: a cluster
	// whose pods still run the previous release shows two versions.
	reg.MustRegister(version.NewCollector())
	a := &Agent{
		cfg:     cfg,
		log:     cfg.Logger,
		store:   st,
		owners:  own,
		api:     &session{addr: cfg.ControlAddr, keyFile: cfg.ControlKeyFile, dialer: rndc.Dialer{Timeout: 30 * time.Second}},
		probe:   &session{addr: cfg.ControlAddr, keyFile: cfg.ControlKeyFile, dialer: rndc.Dialer{Timeout: 5 * time.Second}},
		ready:   newReadiness(),
		metrics: newAgentMetrics(reg, st.len),
		reg:     reg,
		tls:     tlsCfg,
	}
	return a, nil
}

// APIHandler is the API without TLS (the listener adds it).
func (a *Agent) APIHandler() http.Handler { return a.apiHandler() }

// MetricsHandler serves /readyz, /healthz and /metrics.
func (a *Agent) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := a.ready.status(time.Now(), a.maxReadyAge())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write([]byte(reason + "\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             20 * time.Second,
	}))
	return mux
}

func (a *Agent) maxReadyAge() time.Duration {
	return max(5*a.cfg.ReadyInterval, 15*time.Second)
}

// Run listens on the configured addresses and serves until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	var lc net.ListenConfig
	apiLn, err := lc.Listen(ctx, "tcp", a.cfg.Listen)
	if err != nil {
		return err
	}
	metricsLn, err := lc.Listen(ctx, "tcp", a.cfg.MetricsListen)
	if err != nil {
		apiLn.Close()
		return err
	}
	return a.Serve(ctx, apiLn, metricsLn)
}

// Serve serves the API on apiLn (wrapped in TLS) and metrics on
// metricsLn, runs the readiness loop, and shuts everything down
// gracefully (in-flight requests finish, bounded) when ctx ends.
func (a *Agent) Serve(ctx context.Context, apiLn, metricsLn net.Listener) error {
	errLog := slog.NewLogLogger(a.log.Handler(), slog.LevelDebug) // TLS handshake noise from refused clients
	apiSrv := &http.Server{
		Handler:           a.apiHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      batchTimeout + time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          errLog,
	}
	metricsSrv := &http.Server{
		Handler:           a.MetricsHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          errLog,
	}
	ownersLn, err := a.listenOwners(ctx)
	if err != nil {
		apiLn.Close()
		metricsLn.Close()
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() { errs <- apiSrv.Serve(tls.NewListener(apiLn, a.tls)) })
	wg.Go(func() { errs <- metricsSrv.Serve(metricsLn) })
	wg.Go(func() { a.readyLoop(ctx) })
	wg.Go(func() { a.serveOwners(ownersLn) })

	select {
	case <-ctx.Done():
	case err = <-errs:
		cancel()
	}
	a.log.Info("agent shutting down")
	shutCtx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	_ = apiSrv.Shutdown(shutCtx)
	_ = metricsSrv.Shutdown(shutCtx)
	ownersLn.Close() // also removes the socket file
	wg.Wait()
	a.api.close()
	a.probe.close()
	a.store.close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (a *Agent) readyLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.ReadyInterval)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, max(10*time.Second, 2*a.cfg.ReadyInterval))
		a.checkReady(rctx)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
