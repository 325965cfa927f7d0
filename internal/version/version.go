// Package version is the release this binary was built as. One version
// names everything a release ships: the operator's image, the BIND image
// its clusters run unless they pin another, the build-info metric and the
// version subcommand. The release build sets it with the linker:
//
//	-X git.unkin.net/unkin/bind-operator/internal/version.version=$(VERSION)
//	-X git.unkin.net/unkin/bind-operator/internal/version.commit=$(COMMIT)
//	-X git.unkin.net/unkin/bind-operator/internal/version.repository=$(REGISTRY)
//
// A plain go build gets the defaults: v0.0.0-dev from git.unkin.net/unkin,
// images no registry holds, so a development build never passes for a
// release.
package version

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// Set by the linker (-X); vars, not consts, for that reason.
var (
	version    = "v0.0.0-dev"
	commit     = ""
	repository = "git.unkin.net/unkin"
)

// Image names under Repository(), one per image a release builds.
const (
	operatorImageName = "bind-operator"
	bindImageName     = "bind-operator-bind9"
)

// Version is the release, e.g. v0.1.0; v0.0.0-dev for a development build.
func Version() string { return version }

// Commit is the git commit the binary was built from; empty when the
// build did not say.
func Commit() string { return commit }

// Repository is the registry path the release's images are pushed under,
// e.g. git.unkin.net/unkin.
func Repository() string { return repository }

// OperatorImage is this release's operator image, which also runs each
// BIND pod's agent sidecar: the manager's --agent-image default.
func OperatorImage() string {
	return repository + "/" + operatorImageName + ":" + version
}

// BindImage is this release's BIND 9.18 image, built from Debian's bind9
// alongside the operator's: the manager's --bind-image default, so a
// cluster that pins no image moves with the operator.
func BindImage() string {
	return repository + "/" + bindImageName + ":" + version
}

// String is one line for humans and logs:
// bind-operator v0.1.0 (commit abc1234, go1.26.8, linux/amd64).
func String() string {
	c := commit
	if c == "" {
		c = "unknown"
	}
	return fmt.Sprintf("bind-operator %s (commit %s, %s, %s/%s)", version, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// BuildInfoName is the metric NewCollector exports.
const BuildInfoName = "bind_operator_build_info"

// NewCollector is a gauge that is always 1, labelled with the version,
// the commit and the Go version: joined on these labels, dashboards and
// alerts tell which release each manager and agent runs (a rollout that
// stalled half-way shows two versions).
func NewCollector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: BuildInfoName,
		Help: "Always 1; its labels are the bind-operator release the process runs, the commit it was built from and its Go version.",
		ConstLabels: prometheus.Labels{
			"version":   version,
			"commit":    commit,
			"goversion": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}

// Register registers the build-info gauge on reg. reg holding it already
// is no error: the labels are fixed at link time, so the one registered
// says the same. Another metric of that name is.
func Register(reg prometheus.Registerer) error {
	err := reg.Register(NewCollector())
	if errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		return nil
	}
	return err
}
