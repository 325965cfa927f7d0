#!/usr/bin/env bash
# make demo: a real one-node cluster (test/localcluster) with a registry,
# the checkout built as a release (VERSION, default hack/version.sh) and
# installed with `helm install` of its chart, the node pulling its images
# from the registry; config/samples applied, dig answers; runs until
# Ctrl-C, then removes everything. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "make demo runs a kubelet, containerd and kube-proxy: run it as root" >&2
  exit 1
fi
hack/install-deps.sh
hack/build-k8s-binaries.sh bin/k8s
# The demo needs the registry and helm, not promtool (make test's).
hack/build-tools.sh bin/tools registry helm
export VERSION=${VERSION:-$(hack/version.sh)}
# Built, then exec'd: `go run` exits 1 when interrupted whatever the
# program returns, and Ctrl-C is how the demo ends.
go build -o bin/demo ./hack/demo
exec bin/demo
