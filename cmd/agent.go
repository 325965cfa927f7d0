package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"git.unkin.net/unkin/bind-operator/agent/server"
	"git.unkin.net/unkin/bind-operator/internal/version"
	"git.unkin.net/unkin/bind-operator/render"
)

// parseAgentFlags reads the agent's flags. The defaults are the pod's:
// render.DefaultPaths, the StatefulSet's agent and metrics ports, and
// named's fixed loopback endpoints.
func parseAgentFlags(args []string) (server.Config, error) {
	def := render.DefaultPaths()
	var cfg server.Config
	var logLevel string
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.StringVar(&cfg.Paths.ConfigDir, "config-dir", def.ConfigDir, "the rendered ConfigMap mount")
	fs.StringVar(&cfg.Paths.KeysDir, "keys-dir", def.KeysDir, "the keys Secret mount: control.conf and the agent's TLS files")
	fs.StringVar(&cfg.Paths.DataDir, "data-dir", def.DataDir, "named's data volume, shared with named")
	fs.StringVar(&cfg.Listen, "listen", server.DefaultListen, "address of the HTTPS API (mutual TLS)")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", server.DefaultMetricsListen, "address of /metrics, /readyz and /healthz (plain HTTP)")
	fs.StringVar(&cfg.ControlAddr, "control-addr", fmt.Sprintf("127.0.0.1:%d", render.ControlPort), "named's control channel")
	fs.StringVar(&cfg.StatisticsURL, "statistics-url", fmt.Sprintf("http://127.0.0.1:%d/json/v1", render.StatisticsPort), "named's JSON statistics channel")
	fs.StringVar(&cfg.DNSAddr, "dns-addr", "127.0.0.1:53", "where readiness sends a DNS query to named")
	fs.DurationVar(&cfg.ReadyInterval, "ready-interval", time.Second, "period of readiness checks")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("agent: unexpected arguments %q", fs.Args())
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
		return cfg, fmt.Errorf("agent: --log-level: %w", err)
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	return cfg, nil
}

// runAgent runs the pod agent until SIGTERM or SIGINT, then shuts down
// gracefully: in-flight requests finish (bounded), sessions close.
func runAgent(args []string) error {
	cfg, err := parseAgentFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	a, err := server.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg.Logger.Info("agent starting", "version", version.Version(), "commit", version.Commit(),
		"listen", cfg.Listen, "metrics", cfg.MetricsListen, "data", cfg.Paths.DataDir)
	return a.Run(ctx)
}
