#!/usr/bin/env bash
# Builds the Debian package, has lintian check it, then installs it with
# dpkg in a private mount namespace whose root is an overlay of this
# machine's (what dpkg writes lands in a directory of its own, removed at
# the end: this machine's /etc, /run and dpkg database are not touched),
# checks what it installed (the programs run, the man pages open, systemd
# accepts the units, the sample config is good), then purges it and checks
# that nothing is left. Needs root (sudo otherwise). Part of
# scripts/test.sh; install, upgrade and purge under a running systemd are
# conformance/tests/systemd_package.rs.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != --inside ]; then
  deb=$(scripts/package-deb.sh)
  # Debian's own checks; what remains is explained in the package's
  # lintian overrides.
  lintian --fail-on error,warning --pedantic "$deb" ||
    { echo "check-deb: lintian finds fault with $deb" >&2; exit 1; }
  scripts/in-overlay-root.sh local-sa-check-deb /bin/bash "$PWD/scripts/check-deb.sh" --inside "$deb"
  echo "check-deb: $deb installs, runs, verifies and purges cleanly"
  exit 0
fi

# Inside the namespace, as root.
deb=$2
files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$')
# What the package may leave behind, and which of it was here before
# (say an earlier run that crashed, or ibacm's port files): only what the
# package added and did not take away is its fault.
present() {
  for f in $files /etc/local-sa /run/ibacm.port /run/ibacm-tcp.port; do
    if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi
  done
  find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled -name '*local-sa*' 2>/dev/null
}
before=$(present | sort)
dpkg -i "$deb" >/dev/null
scripts/check-installed.sh check-deb /lib/systemd/system

dpkg --purge local-sa >/dev/null
left=$(comm -13 <(echo "$before") <(present | sort))
if [ -n "$left" ]; then
  echo "check-deb: left behind after purge:" "${left//$'\n'/ }" >&2
  exit 1
fi
if [ -n "$before" ]; then
  echo "check-deb: already here before the install, left as found:" "${before//$'\n'/ }"
fi
