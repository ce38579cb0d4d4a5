#!/usr/bin/env bash
# Runs a command as root in a private mount namespace whose root is an
# overlay of this machine's: what it writes lands in a scratch directory
# of its own, removed when it ends, and the machine itself is not
# touched. The packages' checks (check-deb.sh, check-rpm.sh) install,
# upgrade and remove their package there.
#
#   scripts/in-overlay-root.sh NAME COMMAND [ARG...]
#
# NAME names the scratch directory (under $TMPDIR, /tmp by default).
set -euo pipefail
name=$1
shift
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
work=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
trap '$sudo rm -rf "$work"' EXIT
# shellcheck disable=SC2016 # expanded by the inner shell
$sudo unshare --mount --propagation private sh -c '
  set -e
  work=$1; shift
  mkdir -p "$work/upper" "$work/overlay-work" "$work/root"
  mount -t overlay overlay -o "lowerdir=/,upperdir=$work/upper,workdir=$work/overlay-work" "$work/root"
  for api in proc dev sys; do mount --rbind "/$api" "$work/root/$api"; done
  exec chroot "$work/root" "$@"
' sh "$work" "$@"
