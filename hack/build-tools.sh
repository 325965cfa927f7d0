#!/usr/bin/env bash
# Builds the release tools the local cluster and `make release` need from
# the Go module proxy, because no prebuilt archive can be downloaded here:
#
#   registry  the CNCF distribution registry (github.com/distribution/
#             distribution/v3): the local cluster's OCI registry, which
#             `make images` and `make release` push to and the node pulls from
#   helm      Helm v4 (helm.sh/helm/v4): `helm lint`, `helm package`, and
#             `helm install` of the chart in the end-to-end tests and the demo
#   promtool  Prometheus' promtool (github.com/prometheus/prometheus):
#             `promtool check rules` and `promtool test rules` over the
#             shipped PrometheusRule's alerts (test/monitoring)
#   prometheus  the Prometheus server of the same release, with only its
#             Kubernetes service discovery: the end-to-end test that scrapes
#             the node as the shipped monitors say and watches an alert
#             fire and clear (test/e2e TestPrometheusAlertsOnAFrozenSecondary)
#
# Each is built only when missing from the output folder (about 5 minutes
# for registry and helm on two cores, cold, and about 5 more for promtool),
# so a warm machine pays nothing.
#
# usage: hack/build-tools.sh OUTDIR [registry|helm|promtool ...]
set -euo pipefail

REGISTRY_VERSION=${REGISTRY_VERSION:-3.1.2}
HELM_VERSION=${HELM_VERSION:-4.3.2}
# The Go module v0.316.0 is Prometheus v3.16.0.
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-0.316.0}
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(registry helm promtool prometheus)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# build MAIN-PACKAGE MODULE@VERSION OUT [LDFLAGS [TAGS]]: builds one
# command of a module in a throwaway module of its own, so its
# dependencies never reach the project's go.mod.
build() {
  local pkg=$1 mod=$2 bin=$3 ldflags=${4:-} tags=${5:-}
  local dir=$work/$bin
  mkdir -p "$dir" && cd "$dir"
  printf 'module local/%s\n\ngo 1.26\n' "$bin" >go.mod
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" >tools.go
  go get "$mod" >/dev/null 2>&1 || { go get "$mod"; exit 1; }
  go mod tidy -e >/dev/null 2>&1 || true
  CGO_ENABLED=0 go build -trimpath -tags="$tags" -ldflags="-s -w $ldflags" -o "$out/$bin.tmp" "$pkg"
  mv "$out/$bin.tmp" "$out/$bin"
}

for b in "${want[@]}"; do
  [ -x "$out/$b" ] && continue
  case "$b" in
    registry)
      echo "building the distribution registry v${REGISTRY_VERSION} (about 2 minutes on 2 cores)" >&2
      build github.com/distribution/distribution/v3/cmd/registry \
        "github.com/distribution/distribution/v3@v${REGISTRY_VERSION}" registry \
        "-X github.com/distribution/distribution/v3/version.version=v${REGISTRY_VERSION}" ;;
    helm)
      # Without the version stamp helm reports only its minor ("v4.3").
      echo "building helm v${HELM_VERSION} (about 3 minutes on 2 cores)" >&2
      build helm.sh/helm/v4/cmd/helm "helm.sh/helm/v4@v${HELM_VERSION}" helm \
        "-X helm.sh/helm/v4/internal/version.version=v${HELM_VERSION}" ;;
    promtool)
      # Prometheus v3.X.Y is the Go module v0.3XX.Y: stamp the release.
      # remove_all_sd leaves out every service discovery (cloud SDKs,
      # client-go), which rule checks and rule tests never use: half the
      # build.
      minor=${PROMETHEUS_VERSION#0.3}
      echo "building promtool of github.com/prometheus/prometheus v${PROMETHEUS_VERSION} (about 5 minutes on 2 cores)" >&2
      build github.com/prometheus/prometheus/cmd/promtool \
        "github.com/prometheus/prometheus@v${PROMETHEUS_VERSION}" promtool \
        "-X github.com/prometheus/common/version.Version=3.${minor#0}" remove_all_sd ;;
    prometheus)
      # Kubernetes discovery only (client-go, which the project builds
      # anyway): the shipped PodMonitor and ServiceMonitor discover their
      # targets from the API server. The web UI's assets are left out
      # (builtinassets): the test reads the HTTP API.
      minor=${PROMETHEUS_VERSION#0.3}
      echo "building prometheus of github.com/prometheus/prometheus v${PROMETHEUS_VERSION} (about 3 minutes more on 2 cores)" >&2
      build github.com/prometheus/prometheus/cmd/prometheus \
        "github.com/prometheus/prometheus@v${PROMETHEUS_VERSION}" prometheus \
        "-X github.com/prometheus/common/version.Version=3.${minor#0}" remove_all_sd,enable_kubernetes_sd ;;
    *) echo "unknown tool $b (registry, helm, promtool, prometheus)" >&2; exit 2 ;;
  esac
done
