#!/usr/bin/env bash
# Builds the images of one version with buildah (no Docker engine) and
# pushes the product images to a real OCI registry, from which the local
# cluster's node pulls them by tag, as a user's node pulls a release:
#
#   bind-operator        $REGISTRY/bind-operator:$VERSION from ./Dockerfile:
#                        the manager, and the agent sidecar of every BIND pod
#   bind9                $REGISTRY/bind-operator-bind9:$VERSION from
#                        images/bind9/Dockerfile: BIND 9.18 from Debian, the
#                        default image of BindClusters
#   pause                the pods' sandbox image (hack/images/pause), a test
#                        fixture saved as OUTDIR/pause.tar, which the local
#                        cluster imports into containerd by hand
#
# VERSION defaults to hack/version.sh, REGISTRY to git.unkin.net/unkin.
# The push goes to PUSH_REGISTRY (host:port of a running registry, plain
# HTTP) when it is set; otherwise to the project's own registry: the CNCF
# distribution registry (bin/tools/registry, make tools), started on a
# loopback port for the push and stopped after it, on the storage folder
# REGISTRY_STORAGE (default bin/registry) that the local cluster's registry
# serves (test/localcluster). A registry that does not answer fails the
# build with its address; every push is bounded in time.
#
# The Dockerfiles start FROM debian:bookworm-slim and golang:1.26. Neither
# can be pulled here, so both are made locally under those names first:
# Debian's minbase from debootstrap plus this machine's CA bundle, and that
# base plus the host's Go toolchain. buildah's own storage lives in
# OUTDIR/.buildah (a dot folder, so `go ./...` skips the Go sources inside
# the golang image). An image is rebuilt only when its inputs change; builds
# mount the host's Go module and build caches, so a rebuild after a code
# change takes about a minute.
#
# usage: hack/build-images.sh OUTDIR [pause|bind9|bind-operator ...]
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(pause bind9 bind-operator)

VERSION=${VERSION:-$(hack/version.sh)}
REGISTRY=${REGISTRY:-git.unkin.net/unkin}
COMMIT=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || true)}
operator_ref=$REGISTRY/bind-operator:$VERSION
bind_ref=$REGISTRY/bind-operator-bind9:$VERSION

if [ "$(id -u)" != 0 ]; then
  echo "building images needs root (buildah with chroot isolation): run as root" >&2
  exit 1
fi
for cmd in buildah debootstrap curl; do
  command -v "$cmd" >/dev/null 2>&1 || { echo "$cmd is missing: run make deps" >&2; exit 1; }
done

# One storage of buildah's own for these builds, so nothing lands in
# /var/lib/containers. vfs works on any filesystem (no overlay mounts).
storage=(--root "$out/.buildah/storage" --runroot "$out/.buildah/run" --storage-driver vfs)
bah() { buildah "${storage[@]}" "$@"; }
has_image() { bah inspect --type image "$1" >/dev/null 2>&1; }

work=$(mktemp -d)
registry_pid=
cleanup() {
  if [ -n "$registry_pid" ]; then kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true; fi
  # A failed build can leave working containers (and their mounts) behind.
  bah rm --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

ca_bundle=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}

debian_base() {
  local name=docker.io/library/debian:bookworm-slim
  has_image "$name" && return
  echo "images: making $name with debootstrap (about a minute)" >&2
  local rootfs=$work/rootfs
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  # Images fetch Debian packages (http) and Go modules (https) while they
  # build: they need the CAs this machine trusts.
  mkdir -p "$rootfs/etc/ssl/certs"
  cp "$ca_bundle" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  local c
  c=$(bah from scratch)
  bah copy "$c" "$rootfs/" / >/dev/null
  bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/bash "$c"
  bah commit --quiet "$c" "$name" >/dev/null
  bah rm "$c" >/dev/null
}

golang_base() {
  local name=docker.io/library/golang:1.26
  has_image "$name" && return
  debian_base
  echo "images: making $name from the host's Go toolchain" >&2
  local goroot c
  goroot=$(go env GOROOT)
  c=$(bah from --pull=never docker.io/library/debian:bookworm-slim)
  bah copy "$c" "$goroot" /usr/local/go >/dev/null
  bah config --env GOPATH=/go --env GOTOOLCHAIN=local --env GOFLAGS=-buildvcs=false \
    --env PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --workingdir /go "$c"
  bah commit --quiet "$c" "$name" >/dev/null
  bah rm "$c" >/dev/null
}

# built REF KEY: true when buildah holds REF built from KEY.
keyfile() { echo "$out/keys/$(echo "$1" | tr '/:@' '___').key"; }
built() { has_image "$1" && [ "$(cat "$(keyfile "$1")" 2>/dev/null)" = "$2" ]; }
mark() { mkdir -p "$out/keys"; echo "$2" >"$(keyfile "$1")"; }

build_pause() {
  local key
  key=$(sha256sum hack/images/pause/main.go | cut -c1-16)
  [ -f "$out/pause.tar" ] && [ "$(cat "$out/pause.key" 2>/dev/null)" = "$key" ] && return
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/pause" ./hack/images/pause
  local c
  c=$(bah from scratch)
  bah copy "$c" "$work/pause" /pause >/dev/null
  bah config --entrypoint '["/pause"]' --user 65535:65535 "$c"
  bah commit --quiet "$c" localhost/bind-localcluster/pause:1 >/dev/null
  bah rm "$c" >/dev/null
  rm -f "$out/pause.tar.tmp"
  bah push --quiet localhost/bind-localcluster/pause:1 "docker-archive:$out/pause.tar.tmp:localhost/bind-localcluster/pause:1" >/dev/null
  mv "$out/pause.tar.tmp" "$out/pause.tar"
  echo "$key" >"$out/pause.key"
  echo "images: localhost/bind-localcluster/pause:1 -> $out/pause.tar" >&2
}

build_bind9() {
  local dkey key
  dkey=$(sha256sum images/bind9/Dockerfile | cut -c1-16)
  key="$dkey $VERSION"
  built "$bind_ref" "$key" && return
  # The package layer does not depend on the version: a new version of an
  # unchanged Dockerfile only gets its own label and tag.
  local base=localhost/bind-operator-bind9-build:$dkey
  if ! has_image "$base"; then
    debian_base
    echo "images: building $bind_ref from images/bind9/Dockerfile (Debian's bind9)" >&2
    bah bud --quiet --isolation chroot --pull=never --build-arg "VERSION=$VERSION" -t "$base" \
      -f images/bind9/Dockerfile images/bind9 >/dev/null
  fi
  local c
  c=$(bah from --pull=never "$base")
  bah config --label "org.opencontainers.image.version=$VERSION" "$c"
  bah commit --quiet "$c" "$bind_ref" >/dev/null
  bah rm "$c" >/dev/null
  mark "$bind_ref" "$key"
  echo "images: $bind_ref" >&2
}

build_operator() {
  # The build context is the checkout minus what .dockerignore leaves out;
  # hash what git sees (tracked and untracked, not ignored), and what the
  # build stamps into the binary.
  local key
  key=$(git ls-files -z --cached --others --exclude-standard | LC_ALL=C sort -z \
    | xargs -0 sha256sum 2>/dev/null | sha256sum | cut -c1-16)
  key="$key $VERSION $REGISTRY $COMMIT"
  built "$operator_ref" "$key" && return
  golang_base
  echo "images: building $operator_ref from ./Dockerfile" >&2
  local modcache gocache
  modcache=$(go env GOMODCACHE)
  gocache=$(go env GOCACHE)
  mkdir -p "$modcache" "$gocache"
  bah bud --quiet --isolation chroot --pull=never -t "$operator_ref" \
    --build-arg "VERSION=$VERSION" --build-arg "COMMIT=$COMMIT" --build-arg "REGISTRY=$REGISTRY" \
    -v "$modcache:/go/pkg/mod" -v "$gocache:/root/.cache/go-build" \
    -f Dockerfile . >/dev/null
  mark "$operator_ref" "$key"
  echo "images: $operator_ref" >&2
}

# registry_addr: host:port of the registry to push to, started when needed.
registry_addr=
registry_up() {
  [ -z "$registry_addr" ] || return 0
  if [ -n "${PUSH_REGISTRY:-}" ]; then
    curl -fsS --max-time 5 -o /dev/null "http://$PUSH_REGISTRY/v2/" \
      || { echo "images: the registry at http://$PUSH_REGISTRY/v2/ (PUSH_REGISTRY) does not answer: start it, or unset PUSH_REGISTRY to push to bin/registry" >&2; exit 1; }
    registry_addr=$PUSH_REGISTRY
    return
  fi
  local bin=${REGISTRY_BIN:-$root/bin/tools/registry} dir=${REGISTRY_STORAGE:-$root/bin/registry} port
  [ -x "$bin" ] || { echo "images: $bin is missing: run make tools (hack/build-tools.sh bin/tools registry)" >&2; exit 1; }
  mkdir -p "$dir"
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    [ -z "$(ss -Htln "sport = :$port" 2>/dev/null)" ] && break
  done
  cat >"$work/registry.yml" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
YAML
  "$bin" serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
  registry_pid=$!
  for _ in $(seq 1 100); do
    curl -fsS --max-time 1 -o /dev/null "http://127.0.0.1:$port/v2/" 2>/dev/null && { registry_addr=127.0.0.1:$port; return; }
    kill -0 "$registry_pid" 2>/dev/null || break
    sleep 0.2
  done
  echo "images: the registry at http://127.0.0.1:$port/v2/ (storage $dir) did not answer within 20 s:" >&2
  tail -20 "$work/registry.log" >&2
  exit 1
}

# push REF KEY: pushes REF to the registry under its path (the reference
# without its registry host), unless it holds that build already.
push() {
  local ref=$1 key=$2 path=${1#*/} stamp
  stamp="$out/pushed/$(echo "$ref" | tr '/:@' '___')"
  if [ -z "${PUSH_REGISTRY:-}" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$key" ]; then
    local repo=${path%:*} tag=${path##*:}
    [ -f "${REGISTRY_STORAGE:-$root/bin/registry}/docker/registry/v2/repositories/$repo/_manifests/tags/$tag/current/link" ] && return
  fi
  registry_up
  timeout 600 buildah "${storage[@]}" push --quiet --tls-verify=false --retry 2 "$ref" "docker://$registry_addr/$path" >/dev/null \
    || { echo "images: pushing $ref to http://$registry_addr/$path failed or took over 10 minutes" >&2; exit 1; }
  mkdir -p "$out/pushed"
  echo "$key" >"$stamp"
  echo "images: pushed $ref to http://$registry_addr/$path" >&2
}

# A registry given from outside must answer before minutes go into a build.
case " ${want[*]} " in
  *" bind9 "*|*" bind-operator "*) [ -z "${PUSH_REGISTRY:-}" ] || registry_up ;;
esac

# Archives of product images from before they went through the registry.
rm -rf "$out/bind9.tar" "$out/bind9.key" "$out/bind-operator.tar" "$out/bind-operator.key" "$out/next"

for img in "${want[@]}"; do
  case "$img" in
    pause) build_pause ;;
    bind9) build_bind9; push "$bind_ref" "$(cat "$(keyfile "$bind_ref")")" ;;
    bind-operator) build_operator; push "$operator_ref" "$(cat "$(keyfile "$operator_ref")")" ;;
    *) echo "unknown image $img (pause, bind9, bind-operator)" >&2; exit 2 ;;
  esac
done

# Keep the newest four versions of each product image: enough for an
# upgrade test's two and a rebuild of the last ones, without vfs copies of
# every version ever built filling the disk.
for repo in "$REGISTRY/bind-operator" "$REGISTRY/bind-operator-bind9"; do
  bah images --format '{{.CreatedAtRaw}} {{.Name}}:{{.Tag}}' --filter "reference=$repo" 2>/dev/null \
    | sort -r | awk 'NR > 4 { print $NF }' | while read -r old; do bah rmi "$old" >/dev/null 2>&1 || true; done
done
bah rmi --prune >/dev/null 2>&1 || true
