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
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  deb=$(scripts/package-deb.sh)
  # Debian's own checks; what remains is explained in the package's
  # lintian overrides.
  lintian --fail-on error,warning --pedantic "$deb" ||
    { echo "check-deb: lintian finds fault with $deb" >&2; exit 1; }
  work=$(mktemp -d "${TMPDIR:-/tmp}/local-sa-check-deb.XXXXXX")
  trap '$sudo rm -rf "$work"' EXIT
  # shellcheck disable=SC2016 # expanded by the inner shell
  $sudo unshare --mount --propagation private sh -c '
    set -e
    work=$1; shift
    mkdir -p "$work/upper" "$work/overlay-work" "$work/root"
    mount -t overlay overlay -o "lowerdir=/,upperdir=$work/upper,workdir=$work/overlay-work" "$work/root"
    for api in proc dev sys; do mount --rbind "/$api" "$work/root/$api"; done
    exec chroot "$work/root" "$@"
  ' sh "$work" /bin/bash "$PWD/scripts/check-deb.sh" --inside "$deb"
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
if [ -n "$verify" ]; then
  echo "check-deb: systemd-analyze verify: $verify" >&2
  exit 1
fi
# The distributor's settings hold the SA key: root's alone.
[ "$(stat -c %a /etc/local-sa/distributor.conf)" = 600 ] ||
  { echo "check-deb: /etc/local-sa/distributor.conf is not mode 600" >&2; exit 1; }

dpkg --purge local-sa >/dev/null
left=$(comm -13 <(echo "$before") <(present | sort))
if [ -n "$left" ]; then
  echo "check-deb: left behind after purge:" "${left//$'\n'/ }" >&2
  exit 1
fi
if [ -n "$before" ]; then
  echo "check-deb: already here before the install, left as found:" "${before//$'\n'/ }"
fi
