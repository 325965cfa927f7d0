#!/usr/bin/env bash
# Builds the container images the local cluster runs, without a registry or
# a Docker engine, and saves each as a docker-archive that containerd
# imports (`ctr images import`):
#
#   pause          the pods' sandbox image (hack/images/pause)
#   bind9          docker.io/internetsystemsconsortium/bind9:9.18, the operator's
#                  default BIND image, from Debian's bind9 (hack/images/bind9)
#   bind-operator  git.unkin.net/unkin/bind-operator:latest from the project's
#                  own Dockerfile, unchanged
#   bind-operator-next  (only when named) git.unkin.net/unkin/bind-operator:next,
#                  a "next release" whose render differs by one comment line,
#                  for the e2e test of an upgrade (test/e2e/upgrade_test.go);
#                  written to OUTDIR/next/, which the local cluster does not
#                  import when it starts
#
# The Dockerfiles start FROM debian:bookworm-slim and golang:1.26. Neither
# can be pulled here, so both are made locally under those names first:
# Debian's minbase from debootstrap plus this machine's CA bundle, and that
# base plus the host's Go toolchain.
#
# Everything is cached in OUTDIR (bin/images): an archive is rebuilt only
# when its inputs change (for bind-operator: any file of the build context),
# and buildah's own storage (OUTDIR/.buildah: a dot folder, so `go ./...`
# skips the Go sources inside the golang image) keeps the base images. Builds
# mount the host's Go module and build caches, so a rebuild after a code
# change takes about a minute.
#
# usage: hack/build-images.sh OUTDIR [pause|bind9|bind-operator|bind-operator-next ...]
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(pause bind9 bind-operator)

if [ "$(id -u)" != 0 ]; then
  echo "building images needs root (buildah with chroot isolation): run as root" >&2
  exit 1
fi
for cmd in buildah debootstrap; do
  command -v "$cmd" >/dev/null 2>&1 || { echo "$cmd is missing: run make deps" >&2; exit 1; }
done

# One storage of buildah's own for these builds, so nothing lands in
# /var/lib/containers. vfs works on any filesystem (no overlay mounts).
storage=(--root "$out/.buildah/storage" --runroot "$out/.buildah/run" --storage-driver vfs)
bah() { buildah "${storage[@]}" "$@"; }
has_image() { bah inspect --type image "$1" >/dev/null 2>&1; }

work=$(mktemp -d)
cleanup() {
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

# fresh NAME KEY: true when OUTDIR holds NAME's archive built from KEY.
fresh() { [ -f "$out/$1.tar" ] && [ "$(cat "$out/$1.key" 2>/dev/null)" = "$2" ]; }

save() { # save NAME IMAGE KEY
  rm -f "$out/$1.tar.tmp"
  bah push --quiet "$2" "docker-archive:$out/$1.tar.tmp:$2" >/dev/null
  mv "$out/$1.tar.tmp" "$out/$1.tar"
  echo "$3" >"$out/$1.key"
  echo "images: $2 -> $out/$1.tar" >&2
}

build_pause() {
  local key
  key=$(sha256sum hack/images/pause/main.go | cut -c1-16)
  fresh pause "$key" && return
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/pause" ./hack/images/pause
  local c
  c=$(bah from scratch)
  bah copy "$c" "$work/pause" /pause >/dev/null
  bah config --entrypoint '["/pause"]' --user 65535:65535 "$c"
  bah commit --quiet "$c" localhost/bind-localcluster/pause:1 >/dev/null
  bah rm "$c" >/dev/null
  save pause localhost/bind-localcluster/pause:1 "$key"
}

build_bind9() {
  local key
  key=$(sha256sum hack/images/bind9/Dockerfile | cut -c1-16)
  fresh bind9 "$key" && return
  debian_base
  echo "images: building docker.io/internetsystemsconsortium/bind9:9.18 from Debian's bind9" >&2
  bah bud --quiet --isolation chroot --pull=never -t docker.io/internetsystemsconsortium/bind9:9.18 \
    -f hack/images/bind9/Dockerfile hack/images/bind9 >/dev/null
  save bind9 docker.io/internetsystemsconsortium/bind9:9.18 "$key"
}

build_operator() {
  # The build context is the checkout minus what .dockerignore leaves out;
  # hash what git sees (tracked and untracked, not ignored).
  local key
  key=$(git ls-files -z --cached --others --exclude-standard | LC_ALL=C sort -z \
    | xargs -0 sha256sum 2>/dev/null | sha256sum | cut -c1-16)
  fresh bind-operator "$key" && return
  golang_base
  echo "images: building git.unkin.net/unkin/bind-operator:latest from ./Dockerfile" >&2
  local modcache gocache
  modcache=$(go env GOMODCACHE)
  gocache=$(go env GOCACHE)
  mkdir -p "$modcache" "$gocache"
  bah bud --quiet --isolation chroot --pull=never -t git.unkin.net/unkin/bind-operator:latest \
    -v "$modcache:/go/pkg/mod" -v "$gocache:/root/.cache/go-build" \
    -f Dockerfile . >/dev/null
  save bind-operator git.unkin.net/unkin/bind-operator:latest "$key"
}

# The next release: the same image with /bind-operator rebuilt on the host
# from the same sources, except that the comment at the head of every
# named.conf gains two words (`go build -overlay`: the checkout is not
# touched). Any render change rolls every cluster; this one changes nothing
# else, so the upgrade test sees only what an operator upgrade does.
build_operator_next() {
  build_operator
  local key src marker text
  key=$(cat "$out/bind-operator.key")
  fresh next/bind-operator "$key" && return
  src=render/namedconf.go
  marker="do not edit, changes are overwritten."
  text=$(cat "$src")
  if [ "${text/"$marker"/}" = "$text" ]; then
    echo "images: $src no longer holds \"$marker\": point build_operator_next at a line of the render" >&2
    exit 1
  fi
  printf '%s\n' "${text/"$marker"/"$marker Next release."}" >"$work/namedconf.go"
  printf '{"Replace":{"%s":"%s"}}\n' "$root/$src" "$work/namedconf.go" >"$work/overlay.json"
  echo "images: building git.unkin.net/unkin/bind-operator:next (one render change)" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -overlay "$work/overlay.json" -o "$work/bind-operator" ./cmd
  local c
  c=$(bah from --pull=never git.unkin.net/unkin/bind-operator:latest)
  bah copy "$c" "$work/bind-operator" /bind-operator >/dev/null
  bah commit --quiet "$c" git.unkin.net/unkin/bind-operator:next >/dev/null
  bah rm "$c" >/dev/null
  mkdir -p "$out/next"
  save next/bind-operator git.unkin.net/unkin/bind-operator:next "$key"
}

for img in "${want[@]}"; do
  case "$img" in
    pause) build_pause ;;
    bind9) build_bind9 ;;
    bind-operator) build_operator ;;
    bind-operator-next) build_operator_next ;;
    *) echo "unknown image $img (pause, bind9, bind-operator, bind-operator-next)" >&2; exit 2 ;;
  esac
done
# Old layers of rebuilt images only take space.
bah rmi --prune >/dev/null 2>&1 || true
