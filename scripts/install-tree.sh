#!/usr/bin/env bash
# Installs local-sa's files into a package root, each where the
# distribution's packages put such files: the one list both packages are
# made from (scripts/package-deb.sh for Debian, the RPM spec's %install,
# local-sa/daemon/dist/rpm/local-sa.spec).
#
#   scripts/install-tree.sh --layout debian|rpm --bin DIR ROOT
#
# DIR holds the built local-sa and lsaquery (they also write the man pages
# and completions: --generate). What differs between the layouts:
#
#                 debian                             rpm
#   units         /lib/systemd/system                /usr/lib/systemd/system
#   defaults      /etc/default/<name>                /etc/sysconfig/<name>
#   zsh           /usr/share/zsh/vendor-completions  /usr/share/zsh/site-functions
#
# The units name their defaults file, which is rewritten to the layout's.
# Both: /usr/sbin, /usr/lib/tmpfiles.d, /usr/share/man, bash and fish
# completions, /etc/local-sa, the documentation in /usr/share/doc/local-sa.
set -euo pipefail

layout="" bin=""
while [ $# -gt 1 ]; do
  case "$1" in
    --layout) layout=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) break ;;
  esac
done
root=${1:-}
case "$layout" in
  debian) units=/lib/systemd/system defaults=/etc/default zsh=/usr/share/zsh/vendor-completions ;;
  rpm) units=/usr/lib/systemd/system defaults=/etc/sysconfig zsh=/usr/share/zsh/site-functions ;;
  *) echo "install-tree: --layout debian or --layout rpm" >&2; exit 2 ;;
esac
if [ -z "$bin" ] || [ -z "$root" ] || [ $# -ne 1 ]; then
  echo "usage: install-tree.sh --layout debian|rpm --bin DIR ROOT" >&2
  exit 2
fi
bin=$(realpath "$bin")
root=$(realpath -m "$root")
cd "$(dirname "$0")/.."
dist=local-sa/daemon/dist

install -D -m 755 "$bin/local-sa" "$root/usr/sbin/local-sa"
install -D -m 755 "$bin/lsaquery" "$root/usr/sbin/lsaquery"

# The units as shipped, their defaults file where the layout keeps it.
for unit in local-sa.service local-sa.socket local-sa-netlink.socket local-sa-distributor.service; do
  install -d "$root$units"
  sed "s|/etc/default/|$defaults/|g" "$dist/$unit" > "$root$units/$unit"
  chmod 644 "$root$units/$unit"
done
install -D -m 644 "$dist/default" "$root$defaults/local-sa"
install -D -m 644 "$dist/distributor.default" "$root$defaults/local-sa-distributor"
install -D -m 644 "$dist/local-sa.toml" "$root/etc/local-sa/local-sa.toml"
# Holds the SA key: root's alone.
install -D -m 600 "$dist/distributor.conf" "$root/etc/local-sa/distributor.conf"
install -D -m 644 "$dist/local-sa.tmpfiles" "$root/usr/lib/tmpfiles.d/local-sa.conf"

man="$root/usr/share/man"
install -d "$man/man8" "$man/man5"
"$bin/local-sa" --config none --generate man | gzip -9n > "$man/man8/local-sa.8.gz"
"$bin/local-sa" --config none --generate config-man | gzip -9n > "$man/man5/local-sa.toml.5.gz"
"$bin/lsaquery" --generate man | gzip -9n > "$man/man8/lsaquery.8.gz"
install -d "$root/usr/share/bash-completion/completions" "$root$zsh" \
  "$root/usr/share/fish/vendor_completions.d"
for program in local-sa lsaquery; do
  extra=()
  [ "$program" = local-sa ] && extra=(--config none)
  "$bin/$program" "${extra[@]}" --generate bash > "$root/usr/share/bash-completion/completions/$program"
  "$bin/$program" "${extra[@]}" --generate zsh > "$root$zsh/_$program"
  "$bin/$program" "${extra[@]}" --generate fish > "$root/usr/share/fish/vendor_completions.d/$program.fish"
done

doc="$root/usr/share/doc/local-sa"
install -D -m 644 README.md "$doc/README.md"
install -m 644 docs/*.md "$doc/"
