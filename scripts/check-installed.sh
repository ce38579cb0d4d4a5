#!/usr/bin/env bash
# What the packages' checks (check-deb.sh, check-rpm.sh) ask of an
# installed package, whichever it is: both programs run, the packaged
# sample is a good configuration as shipped, the man pages open, systemd
# accepts the units, and the distributor's settings (they hold the SA
# key) are root's alone. Run as root where the package is installed.
#
#   scripts/check-installed.sh WHO UNIT_DIR
#
# WHO starts each complaint; UNIT_DIR is where the package put its units.
set -euo pipefail
who=$1 units=$2
fail() {
  echo "$who: $*" >&2
  exit 1
}
local-sa --version
lsaquery --version
local-sa --check-config >/dev/null || fail "the packaged configuration does not check"
for page in local-sa.8 lsaquery.8 local-sa.toml.5; do
  name=${page%.*} section=${page##*.}
  man -P cat "$section" "$name" 2>/dev/null | grep -q "^NAME" ||
    fail "man $section $name does not open"
done
# systemd's own checks of the units (the man pages they name included);
# it only warns about a setting it cannot parse, so any output fails.
verify=$(systemd-analyze verify "$units/local-sa.socket" "$units/local-sa-netlink.socket" \
  "$units/local-sa.service" "$units/local-sa-distributor.service" 2>&1) || true
[ -z "$verify" ] || fail "systemd-analyze verify: $verify"
[ "$(stat -c %a /etc/local-sa/distributor.conf)" = 600 ] ||
  fail "/etc/local-sa/distributor.conf is not mode 600"
