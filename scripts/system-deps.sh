#!/usr/bin/env bash
# Installs the Debian packages the end-to-end tests use (Chromium for the playground test, nginx for
# the load-balancing test, systemd for systemd-analyze), when missing and when we may; and unpacks promtool (Debian's `prometheus`
# package, extracted, never installed: no daemon) into .tools/prometheus for the alert-rule tests.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

# promtool: the package is downloaded by apt (no root needed for the download itself) and unpacked
promtool_dir="$ROOT/.tools/prometheus"
if [ ! -x "$promtool_dir/usr/bin/promtool" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  fetch() { (cd "$work" && apt-get download -q prometheus >/dev/null 2>&1); }
  if ! fetch; then
    if [ "$(id -u)" = 0 ]; then apt-get update -qq >/dev/null && fetch; else false; fi \
      || echo "could not download Debian's prometheus package (promtool); run apt-get update as root" >&2
  fi
  if ls "$work"/prometheus_*.deb >/dev/null 2>&1; then
    mkdir -p "$promtool_dir"
    dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
    install -m 755 "$work/root/usr/bin/promtool" -D "$promtool_dir/usr/bin/promtool"
  fi
fi

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)  # verifies deploy/systemd's units
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "missing Debian packages: ${need[*]} (install them as root: apt-get install ${need[*]})" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
