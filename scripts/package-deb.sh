#!/usr/bin/env bash
# Builds the Debian package local-sa_<version>_<arch>.deb into target/deb/:
# both programs (release build), local-sa.service and local-sa.socket,
# local-sa-distributor.service (with /etc/local-sa/distributor.conf and
# /etc/default/local-sa-distributor), the
# man pages local-sa(8), lsaquery(8) and local-sa.toml(5), bash/zsh/fish
# completions (all written by the programs themselves: --generate), the
# commented sample /etc/local-sa/local-sa.toml and /etc/default/local-sa.
# Dependencies come from dpkg-shlibdeps. Prints the package's path.
#
#   scripts/package-deb.sh            build it
#   sudo dpkg -i target/deb/local-sa_*.deb
#   sudo systemctl disable --now ibacm.socket ibacm.service
#   sudo systemctl enable --now local-sa.socket local-sa.service
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(cargo pkgid -p local-sa | sed 's/.*[@#]//')
arch=$(dpkg --print-architecture)
# Absolute: dpkg-shlibdeps runs in a directory of its own.
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
cargo build --release --quiet -p local-sa -p lsaquery
bin="$target/release"

out="$target/deb"
root="$out/local-sa_${version}_${arch}"
rm -rf "$root"
dist=local-sa/daemon/dist
install -D -m 755 "$bin/local-sa" "$root/usr/sbin/local-sa"
install -D -m 755 "$bin/lsaquery" "$root/usr/sbin/lsaquery"
strip --strip-unneeded "$root/usr/sbin/local-sa" "$root/usr/sbin/lsaquery"
install -D -m 644 "$dist/local-sa.service" "$root/lib/systemd/system/local-sa.service"
install -D -m 644 "$dist/local-sa.socket" "$root/lib/systemd/system/local-sa.socket"
install -D -m 644 "$dist/local-sa-netlink.socket" "$root/lib/systemd/system/local-sa-netlink.socket"
install -D -m 644 "$dist/local-sa.toml" "$root/etc/local-sa/local-sa.toml"
install -D -m 644 "$dist/default" "$root/etc/default/local-sa"
install -D -m 644 "$dist/local-sa-distributor.service" "$root/lib/systemd/system/local-sa-distributor.service"
install -D -m 600 "$dist/distributor.conf" "$root/etc/local-sa/distributor.conf"
install -D -m 644 "$dist/distributor.default" "$root/etc/default/local-sa-distributor"

man="$root/usr/share/man"
mkdir -p "$man/man8" "$man/man5"
"$bin/local-sa" --config none --generate man | gzip -9n > "$man/man8/local-sa.8.gz"
"$bin/local-sa" --config none --generate config-man | gzip -9n > "$man/man5/local-sa.toml.5.gz"
"$bin/lsaquery" --generate man | gzip -9n > "$man/man8/lsaquery.8.gz"
for program in local-sa lsaquery; do
  extra=()
  [ "$program" = local-sa ] && extra=(--config none)
  install -d "$root/usr/share/bash-completion/completions" \
    "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
  "$bin/$program" "${extra[@]}" --generate bash > "$root/usr/share/bash-completion/completions/$program"
  "$bin/$program" "${extra[@]}" --generate zsh > "$root/usr/share/zsh/vendor-completions/_$program"
  "$bin/$program" "${extra[@]}" --generate fish > "$root/usr/share/fish/vendor_completions.d/$program.fish"
done

doc="$root/usr/share/doc/local-sa"
install -D -m 644 README.md "$doc/README.md"
install -m 644 docs/*.md "$doc/"
cat > "$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: local-sa
License: MIT OR Apache-2.0
COPYRIGHT

# The shared libraries the programs link, as Debian names their packages.
shlibs=$(mktemp -d)
trap 'rm -rf "$shlibs"' EXIT
mkdir -p "$shlibs/debian"
printf 'Source: local-sa\n\nPackage: local-sa\nArchitecture: any\n' > "$shlibs/debian/control"
depends=$(cd "$shlibs" && dpkg-shlibdeps -O -e"$root/usr/sbin/local-sa" -e"$root/usr/sbin/lsaquery" 2>"$shlibs/errors" |
  sed -n 's/^shlibs:Depends=//p') || {
  echo "package-deb: dpkg-shlibdeps could not work out the dependencies:" >&2
  cat "$shlibs/errors" >&2
  exit 1
}

install -d "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CONTROL
Package: local-sa
Version: $version
Architecture: $arch
Maintainer: local-sa maintainers <local-sa@example.invalid>
Section: net
Priority: optional
Depends: $depends
Suggests: infiniband-diags, opensm
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Description: per-node InfiniBand Subnet Administration agent
 local-sa answers SA PathRecord queries from a local cache filled from the
 master SA (OpenSM) or by SetTable loads, proxies notice subscriptions and
 multicast joins with one upstream registration per distinct request, and
 serves ibacm's client protocol (ib_acme, librdmacm) and the kernel's
 RDMA_NL_LS queries from the same cache: a drop-in for ibacm.
 .
 lsaquery is its saquery-style client.
CONTROL
printf '%s\n' /etc/local-sa/local-sa.toml /etc/default/local-sa \
  /etc/local-sa/distributor.conf /etc/default/local-sa-distributor > "$root/DEBIAN/conffiles"
cat > "$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
# Known to systemd, not started: it replaces ibacm, which the admin stops
# first (see local-sa(8)).
set -e
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
POSTINST
cat > "$root/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl stop local-sa-distributor.service local-sa.service local-sa.socket local-sa-netlink.socket || true
  systemctl disable local-sa-distributor.service local-sa.service local-sa.socket local-sa-netlink.socket || true
fi
PRERM
cat > "$root/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
if [ "$1" = purge ]; then
  rm -rf /etc/local-sa
fi
POSTRM
chmod 755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

dpkg-deb --build --root-owner-group "$root" "$out" >/dev/null
echo "$out/local-sa_${version}_${arch}.deb"
