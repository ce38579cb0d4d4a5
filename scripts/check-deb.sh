#!/usr/bin/env bash
# Builds the Debian package, has lintian check it, installs it with dpkg on
# this machine, checks what it installed (the programs run, the man pages
# open, systemd accepts the units, the sample config is good), then purges
# it and checks that nothing is left. Needs root (sudo otherwise). Part of
# scripts/test.sh; install, upgrade and purge under a running systemd are
# conformance/tests/systemd_package.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

deb=$(scripts/package-deb.sh)
# Debian's own checks; what remains is explained in the package's
# lintian overrides.
lintian --fail-on error,warning --pedantic "$deb" ||
  { echo "check-deb: lintian finds fault with $deb" >&2; exit 1; }
if dpkg-query -W -f='${Status}' local-sa 2>/dev/null | grep -q "install ok installed"; then
  echo "check-deb: local-sa is already installed on this machine; not touching it" >&2
  exit 1
fi
files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$')
cleanup() { $sudo dpkg --purge local-sa >/dev/null 2>&1 || true; }
trap cleanup EXIT

$sudo dpkg -i "$deb" >/dev/null
local-sa --version
lsaquery --version
# The packaged sample is a good configuration, as shipped.
local-sa --check-config >/dev/null
for page in local-sa.8 lsaquery.8 local-sa.toml.5; do
  name=${page%.*} section=${page##*.}
  man -P cat "$section" "$name" 2>/dev/null | grep -q "^NAME" ||
    { echo "check-deb: man $section $name does not open" >&2; exit 1; }
done
# systemd's own checks of the units (the man pages they name included);
# it only warns about a setting it cannot parse, so any output fails.
verify=$(systemd-analyze verify /lib/systemd/system/local-sa.socket /lib/systemd/system/local-sa-netlink.socket \
  /lib/systemd/system/local-sa.service /lib/systemd/system/local-sa-distributor.service 2>&1) || true
# The distributor's settings hold the SA key: root's alone.
[ "$(stat -c %a /etc/local-sa/distributor.conf)" = 600 ] ||
  { echo "check-deb: /etc/local-sa/distributor.conf is not mode 600" >&2; exit 1; }
if [ -n "$verify" ]; then
  echo "check-deb: systemd-analyze verify: $verify" >&2
  exit 1
fi

$sudo dpkg --purge local-sa >/dev/null
trap - EXIT
left=()
for f in $files /etc/local-sa; do
  [ -e "$f" ] && left+=("$f")
done
if [ ${#left[@]} -gt 0 ]; then
  echo "check-deb: left behind after purge: ${left[*]}" >&2
  exit 1
fi
echo "check-deb: $deb installs, runs, verifies and purges cleanly"
