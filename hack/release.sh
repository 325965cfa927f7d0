#!/usr/bin/env bash
# Builds the release artifacts of one version, all naming the same images:
#
#   dist/crds.yaml                    the CRDs alone (kept when the operator is removed)
#   dist/install.yaml                 the operator, self-managed webhook TLS
#   dist/install-cert-manager.yaml    the operator, webhook TLS from cert-manager
#   dist/bind-operator-X.Y.Z.tgz      the Helm chart (charts/bind-operator)
#   dist/bind-operator-vX.Y.Z-linux-{amd64,arm64} and .sha256
#                                     the binary (`bind-operator import`
#                                     runs where the old server's files are)
#
# The install files are config/default-selfmanaged and config/default with
# the images of this version set, and --agent-image and --bind-image
# written out as the chart writes them; test/chart proves the chart
# renders the same objects. The CRDs are not in the install files, so
# `kubectl delete -f install.yaml` (or a GitOps prune of it) never deletes
# a zone or a record.
#
# usage: hack/release.sh manifests|chart|binaries VERSION OUTDIR
#   IMG       the operator image (default $REGISTRY/bind-operator:VERSION)
#   BIND_IMG  the BIND image (default $REGISTRY/bind-operator-bind9:VERSION)
#   REGISTRY  default git.unkin.net/unkin
#   KUBECTL   default bin/k8s/kubectl, else kubectl (for its kustomize)
#   HELM      default bin/tools/helm
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

what=${1:?usage: hack/release.sh manifests|chart|binaries VERSION OUTDIR}
version=${2:?missing VERSION (vX.Y.Z)}
out=$(mkdir -p "${3:?missing OUTDIR}" && cd "$3" && pwd)
case "$version" in
  v[0-9]*.[0-9]*.[0-9]*) ;;
  *) echo "VERSION $version is not a release version such as v0.1.0 (SemVer with a leading v)" >&2; exit 2 ;;
esac
REGISTRY=${REGISTRY:-git.unkin.net/unkin}
IMG=${IMG:-$REGISTRY/bind-operator:$version}
BIND_IMG=${BIND_IMG:-$REGISTRY/bind-operator-bind9:$version}

# The project's own kubectl (make envtest) first: its kustomize is the one
# the tests compare the chart with.
kubectl_bin() {
  if [ -n "${KUBECTL:-}" ]; then echo "$KUBECTL"
  elif [ -x "$root/bin/k8s/kubectl" ]; then echo "$root/bin/k8s/kubectl"
  elif command -v kubectl >/dev/null 2>&1; then command -v kubectl
  else echo "kubectl is missing (its kustomize renders the install files): install it or run make envtest" >&2; exit 1
  fi
}

# split REF: "repo tag" of an image reference (a digest stays in the tag
# field, prefixed by @).
split() {
  local ref=$1 repo tag
  if [[ $ref == *@* ]]; then repo=${ref%@*}; tag=@${ref#*@}
  elif [[ ${ref##*/} == *:* ]]; then repo=${ref%:*}; tag=${ref##*:}
  else echo "image $ref names no tag or digest: releases never run an implied :latest" >&2; exit 2
  fi
  echo "$repo $tag"
}

# overlay BASE DIR: a kustomization in DIR that installs BASE with this
# version's images.
overlay() {
  local base=$1 dir=$2 repo tag image
  read -r repo tag < <(split "$IMG")
  if [[ $tag == @* ]]; then image="  digest: ${tag#@}"; else image="  newTag: $tag"; fi
  mkdir -p "$dir"
  cat >"$dir/kustomization.yaml" <<YAML
resources:
- $(realpath --relative-to="$dir" "$root/$base")
images:
- name: git.unkin.net/unkin/bind-operator
  newName: $repo
$image
labels:
- pairs:
    app.kubernetes.io/version: $version
patches:
- target:
    group: apps
    version: v1
    kind: Deployment
    name: bind-operator-controller-manager
  patch: |-
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: --agent-image=$IMG
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: --bind-image=$BIND_IMG
YAML
}

manifests() {
  local kubectl work
  kubectl=$(kubectl_bin)
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  {
    echo "# bind-operator $version: the CRDs. Apply them before install.yaml:"
    echo "#   kubectl apply --server-side -f crds.yaml"
    "$kubectl" kustomize "$root/config/crd"
  } >"$out/crds.yaml.tmp"
  overlay config/default-selfmanaged "$work/selfmanaged"
  overlay config/default "$work/certmanager"
  {
    echo "# bind-operator $version, webhook TLS issued by the operator itself (no cert-manager)."
    echo "#   kubectl apply --server-side -f crds.yaml -f install.yaml"
    "$kubectl" kustomize "$work/selfmanaged"
  } >"$out/install.yaml.tmp"
  {
    echo "# bind-operator $version, webhook TLS from cert-manager (install cert-manager first)."
    echo "#   kubectl apply --server-side -f crds.yaml -f install-cert-manager.yaml"
    "$kubectl" kustomize "$work/certmanager"
  } >"$out/install-cert-manager.yaml.tmp"
  for f in crds install install-cert-manager; do mv "$out/$f.yaml.tmp" "$out/$f.yaml"; done
  echo "release: $out/crds.yaml, install.yaml, install-cert-manager.yaml ($IMG, $BIND_IMG)" >&2
}

chart() {
  local helm=${HELM:-$root/bin/tools/helm} work
  [ -x "$helm" ] || { echo "helm is missing at $helm: run hack/build-tools.sh bin/tools helm" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  cp -r "$root/charts/bind-operator" "$work/"
  # The chart's version is the release's without the "v"; its appVersion
  # (the images' tag) keeps it.
  sed -i -e "s/^version:.*/version: ${version#v}/" -e "s/^appVersion:.*/appVersion: \"$version\"/" "$work/bind-operator/Chart.yaml"
  "$helm" lint --strict "$work/bind-operator" >/dev/null
  "$helm" package "$work/bind-operator" -d "$out" >/dev/null
  echo "release: $out/bind-operator-${version#v}.tgz" >&2
}

# binaries: the one binary for Linux on both architectures the images are
# built for, stamped with the version and the default images as `make
# build` stamps it, and their SHA-256 sums.
binaries() {
  local pkg=git.unkin.net/unkin/bind-operator/internal/version commit platform goos goarch name
  commit=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || true)}
  for platform in linux/amd64 linux/arm64; do
    goos=${platform%/*} goarch=${platform#*/}
    name=bind-operator-$version-$goos-$goarch
    CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath \
      -ldflags "-s -w -X $pkg.version=$version -X $pkg.commit=$commit -X $pkg.repository=$REGISTRY" \
      -o "$out/$name.tmp" ./cmd
    mv "$out/$name.tmp" "$out/$name"
  done
  (cd "$out" && sha256sum "bind-operator-$version"-linux-* >"bind-operator-$version.sha256")
  echo "release: $out/bind-operator-$version-linux-{amd64,arm64}, bind-operator-$version.sha256" >&2
}

case "$what" in
  manifests) manifests ;;
  chart) chart ;;
  binaries) binaries ;;
  *) echo "unknown step $what (manifests, chart, binaries)" >&2; exit 2 ;;
esac
