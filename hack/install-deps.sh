#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, only when
# something is missing:
#   BIND 9.18 (named, named-checkconf, rndc, dig, nsupdate, delv)  data-plane tests
#   iproute2, util-linux, nftables                                 the local cluster's network
#   containerd, runc, containernetworking-plugins                  the local cluster's node
#   buildah, debootstrap, curl                                     images, pushed to a registry
#
# It never stops, kills or reconfigures a service it did not start. Debian's
# packages start their services on install (named, containerd); the install
# runs with a policy-rc.d that tells invoke-rc.d and deb-systemd-invoke not
# to start anything, so a host's own named or containerd (Docker's, say) is
# left exactly as it was. The tests and the local cluster run their own
# instances, on their own sockets and folders.
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
want curl curl
[ ${#need[@]} -gt 0 ] || exit 0
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)

if ! command -v apt-get >/dev/null 2>&1; then
  echo "this is not a Debian-based host: install BIND 9.18 (named, named-checkconf, rndc, dig, nsupdate, delv), iproute2, nftables, containerd, runc, the CNI plugins, buildah, debootstrap and curl with your package manager (missing: ${need[*]})" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "missing ${need[*]}: run as root or install them with apt-get" >&2
  exit 1
fi

# policy-rc.d exit status 101 means "action forbidden": no service the
# packages bring is started. A host that already has one keeps it; ours is
# removed on exit.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  trap 'rm -f "$policy"' EXIT
  printf '#!/bin/sh\n# bind-operator hack/install-deps.sh: no service starts while it installs.\nexit 101\n' >"$policy"
  chmod 0755 "$policy"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
