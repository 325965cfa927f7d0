#!/usr/bin/env bash
# Builds the Kubernetes binaries the tests need (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy, kubelet, kubectl) from
# the Go module proxy, because no prebuilt release archive can be downloaded
# here. Each binary is built only
# when it is missing from the output folder, so a warm machine pays nothing.
#
# usage: hack/build-k8s-binaries.sh OUTDIR [binary...]
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl)

missing=()
for b in "${want[@]}"; do [ -x "$out/$b" ] || missing+=("$b"); done
[ ${#missing[@]} -gt 0 ] || exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
staging_minor="0.${K8S_VERSION#1.}"

build_etcd() {
  mkdir -p "$work/etcd" && cd "$work/etcd"
  cat > go.mod <<MOD
module local/etcd

go 1.26
MOD
  cat > main.go <<'SRC'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
SRC
  go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" >/dev/null
  go mod tidy >/dev/null
  CGO_ENABLED=0 go build -o "$out/etcd" .
}

build_k8s() {
  mkdir -p "$work/k8s" && cd "$work/k8s"
  # The kubernetes module pins its staging repos at v0.0.0 and replaces them
  # with local paths; a consumer must replace each one with the published tag.
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module local/k8s"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes v${K8S_VERSION}"
    echo
    echo "replace ("
    sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 v'"${staging_minor}"'#p' "$gomod"
    echo ")"
  } > go.mod
  {
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    for b in "$@"; do echo "	_ \"k8s.io/kubernetes/cmd/$b\""; done
    echo ")"
  } > tools.go
  go mod tidy -e >/dev/null 2>&1 || true
  # Without the version stamp the binaries report v0.0.0-master, which the
  # kubelet then registers as its version.
  local minor=${K8S_VERSION#1.}
  minor=${minor%%.*}
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"
  for b in "$@"; do
    echo "building $b v${K8S_VERSION} (minutes on 2 cores)" >&2
    CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$out/$b.tmp" "k8s.io/kubernetes/cmd/$b"
    mv "$out/$b.tmp" "$out/$b"
  done
}

k8s=()
for b in "${missing[@]}"; do
  case "$b" in
    etcd) echo "building etcd v${ETCD_VERSION}" >&2; build_etcd ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kube-proxy|kubelet|kubectl) k8s+=("$b") ;;
    *) echo "unknown binary $b" >&2; exit 2 ;;
  esac
done
[ ${#k8s[@]} -eq 0 ] || build_k8s "${k8s[@]}"
