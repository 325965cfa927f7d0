#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, only when
# something is missing:
#   BIND 9.18 (named, named-checkconf, rndc, dig, nsupdate, delv)  data-plane tests
#   iproute2, util-linux, nftables                                 the local cluster's network
#   containerd, runc, containernetworking-plugins                  the local cluster's node
#   buildah, debootstrap                                           images without a registry
# Services the packages start on install (named, containerd) are stopped:
# the tests run their own instances.
set -euo pipefail

need=()
want() { command -v "$1" >/dev/null 2>&1 || need+=("$2"); }
for cmd in named named-checkconf named-checkzone rndc; do want "$cmd" bind9; done
want named-checkconf bind9-utils
for cmd in dig nsupdate delv; do want "$cmd" bind9-dnsutils; done
want ip iproute2
want nsenter util-linux
want nft nftables
want containerd containerd
want runc runc
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
want buildah buildah
want debootstrap debootstrap
[ ${#need[@]} -gt 0 ] || exit 0
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)

if [ "$(id -u)" != 0 ]; then
  echo "missing ${need[*]}: run as root or install them with apt-get" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian starts named and containerd on install; the tests run their own.
for svc in named containerd; do
  if command -v systemctl >/dev/null 2>&1; then systemctl stop "$svc" >/dev/null 2>&1 || true; fi
  if command -v service >/dev/null 2>&1; then service "$svc" stop >/dev/null 2>&1 || true; fi
done
pkill -x named >/dev/null 2>&1 || true
pkill -x containerd >/dev/null 2>&1 || true
