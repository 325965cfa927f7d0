#!/usr/bin/env bash
# Installs the Debian packages the tests need, only when something is missing:
# BIND 9.18 (named, named-checkconf, rndc, dig, nsupdate) and iproute2.
# The package's own named service is stopped: tests start their own servers.
set -euo pipefail

need=()
for cmd in named named-checkconf named-checkzone rndc dig nsupdate; do
  command -v "$cmd" >/dev/null 2>&1 || need=(bind9 bind9-utils bind9-dnsutils)
done
command -v ip >/dev/null 2>&1 || need+=(iproute2)
[ ${#need[@]} -gt 0 ] || exit 0

if [ "$(id -u)" != 0 ]; then
  echo "missing ${need[*]}: run as root or install them with apt-get" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian starts named on install; the tests run their own instances.
if command -v systemctl >/dev/null 2>&1; then systemctl stop named >/dev/null 2>&1 || true; fi
if command -v service >/dev/null 2>&1; then service named stop >/dev/null 2>&1 || true; fi
pkill -x named >/dev/null 2>&1 || true
