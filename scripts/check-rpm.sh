#!/usr/bin/env bash
# Builds the RPM (scripts/package-rpm.sh) twice, releases 1 and 2, has
# rpmlint check the SRPM and the RPM, then, in a private mount namespace
# whose root is an overlay of this machine's (what rpm writes lands in a
# directory of its own, removed at the end), installs release 1, checks
# it (rpm -V clean, the programs run, the man pages open, systemd accepts
# the units, the tmpfiles entry's links, the sample config is good),
# edits its configuration, upgrades to release 2 (the edit kept), erases
# it and checks that nothing is left. Needs root (sudo otherwise). Part of
# scripts/test.sh, beside scripts/check-deb.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != --inside ]; then
  built=$(LOCAL_SA_RPM_RELEASE=1 scripts/package-rpm.sh) ||
    { echo "check-rpm: release 1 did not build (above)" >&2; exit 1; }
  mapfile -t first <<< "$built"
  built=$(LOCAL_SA_RPM_RELEASE=2 scripts/package-rpm.sh) ||
    { echo "check-rpm: release 2 did not build (above)" >&2; exit 1; }
  mapfile -t second <<< "$built"
  srpm=${first[0]} rpm=${first[1]} upgrade=${second[1]}
  # Every warning rpmlint may give is named and explained in the filters;
  # any other, or any error, fails.
  rpmlint --strict --config local-sa/daemon/dist/rpm/rpmlint.toml "$srpm" "$rpm" ||
    { echo "check-rpm: rpmlint finds fault with $srpm or $rpm" >&2; exit 1; }
  scripts/in-overlay-root.sh local-sa-check-rpm /bin/bash "$PWD/scripts/check-rpm.sh" --inside "$rpm" "$upgrade"
  echo "check-rpm: $rpm lints clean, installs, verifies, upgrades keeping an edited configuration and erases cleanly"
  exit 0
fi

# Inside the namespace, as root.
rpm=$2 upgrade=$3
fail() {
  echo "check-rpm: $*" >&2
  exit 1
}
# Debian's rpm installs only when told that it is meant; rpm's database
# there knows none of the packages the RPM requires (rdma-core, systemd).
opts=(--nodeps)
if rpm --help 2>&1 | grep -q -- --force-debian; then
  opts+=(--force-debian)
fi
# rpm, without the two lines Debian's says at each --force-debian.
rpm() {
  command rpm "$@" 2> >(grep -v -e 'use Alien instead' -e 'assuming you know what you are doing' >&2)
}
files=$(rpm -qlp "$rpm")
# What the package may leave behind, and which of it was here before: only
# what the package added and did not take away is its fault.
present() {
  for f in $files /etc/local-sa /run/ibacm.port /run/ibacm-tcp.port; do
    if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi
  done
  find /etc/systemd/system -name '*local-sa*' 2>/dev/null
}
before=$(present | sort)

rpm -i "${opts[@]}" "$rpm"
verified=$(rpm -V "${opts[@]}" local-sa) || fail "rpm -V after the install: $verified"
units=/usr/lib/systemd/system
scripts/check-installed.sh check-rpm "$units"
grep -q '^EnvironmentFile=-/etc/sysconfig/local-sa$' "$units/local-sa.service" ||
  fail "local-sa.service does not read /etc/sysconfig/local-sa"
[ "$(readlink /run/ibacm.port)" = /run/local-sa/ibacm.port ] ||
  fail "the tmpfiles entry did not link /run/ibacm.port into /run/local-sa"

# An administrator's settings survive an upgrade (%config(noreplace)).
edited="refresh-interval = 600"
echo "$edited" >> /etc/local-sa/local-sa.toml
echo 'LOCAL_SA_OPTIONS="--ca mlx5_0"' > /etc/sysconfig/local-sa
rpm -U "${opts[@]}" "$upgrade"
[ "$(rpm -q --qf '%{RELEASE}' local-sa)" = 2 ] || fail "the upgrade did not install release 2"
tail -1 /etc/local-sa/local-sa.toml | grep -qx "$edited" || fail "the upgrade lost the edited local-sa.toml"
grep -q mlx5_0 /etc/sysconfig/local-sa || fail "the upgrade lost the edited /etc/sysconfig/local-sa"
# rpm -V names the two files edited, as configuration, and nothing else.
changed=$(rpm -V "${opts[@]}" local-sa | grep -v ' c /etc/local-sa/local-sa.toml$' |
  grep -v ' c /etc/sysconfig/local-sa$' || true)
[ -z "$changed" ] || fail "rpm -V after the upgrade: $changed"

rpm -e "${opts[@]}" local-sa
# The edited configuration is kept as .rpmsave, as rpm does with any
# changed %config file; nothing else stays.
for kept in /etc/local-sa/local-sa.toml.rpmsave /etc/sysconfig/local-sa.rpmsave; do
  [ -e "$kept" ] || fail "$kept: the edited configuration was not kept on erase"
  rm -f "$kept"
done
rmdir /etc/local-sa 2>/dev/null || true
left=$(comm -13 <(echo "$before") <(present | sort))
[ -z "$left" ] || fail "left behind after erase: ${left//$'\n'/ }"
if [ -n "$before" ]; then
  echo "check-rpm: already here before the install, left as found:" "${before//$'\n'/ }"
fi
