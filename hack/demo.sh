#!/usr/bin/env bash
# make demo: the local cluster with BIND pods, the operator and the samples.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/install-deps.sh
hack/build-k8s-binaries.sh bin/k8s etcd kube-apiserver kube-controller-manager kubectl
exec go run ./hack/demo
