#!/usr/bin/env bash
# Builds the Debian package local-sa_<version>_<arch>.deb into target/deb/
# (its files laid out by scripts/install-tree.sh, as the RPM's are):
# both programs (release build), local-sa.service, local-sa.socket and
# local-sa-netlink.socket, local-sa-distributor.service (with
# /etc/local-sa/distributor.conf and /etc/default/local-sa-distributor),
# the tmpfiles.d entry that links ibacm's TCP port files into local-sa's
# runtime directory, the man pages local-sa(8), lsaquery(8) and
# local-sa.toml(5), bash/zsh/fish completions (all written by the programs
# themselves: --generate), the commented sample /etc/local-sa/local-sa.toml
# and /etc/default/local-sa. Dependencies come from dpkg-shlibdeps, plus
# rdma-core as ibacm's package has it. The maintainer scripts do what
# dh_installsystemd's do: on install the sockets are enabled and started
# and the service enabled; an upgrade restarts a running local-sa
# (try-restart); remove stops everything, purge leaves nothing. Prints the
# package's path.
#
#   scripts/package-deb.sh            build it
#   sudo dpkg -i target/deb/local-sa_*.deb
#
# For tests: LOCAL_SA_DEB_BIN_DIR packages the programs found there
# instead of a release build, LOCAL_SA_DEB_VERSION sets the version and
# LOCAL_SA_DEB_OUT the output directory; LOCAL_SA_DEB_TREE_ONLY=1 stops
# before the archive (its compression takes most of the time) and prints
# the package's tree instead, each file where dpkg -i would put it, the
# maintainer scripts in DEBIAN/.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${LOCAL_SA_DEB_VERSION:-$(cargo pkgid -p local-sa | sed 's/.*[@#]//')}
arch=$(dpkg --print-architecture)
# Absolute: dpkg-shlibdeps runs in a directory of its own.
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
if [ -n "${LOCAL_SA_DEB_BIN_DIR:-}" ]; then
  bin=$(realpath "$LOCAL_SA_DEB_BIN_DIR")
else
  cargo build --release --quiet -p local-sa -p lsaquery
  bin="$target/release"
fi

out=$(realpath -m "${LOCAL_SA_DEB_OUT:-$target/deb}")
root="$out/local-sa_${version}_${arch}"
rm -rf "$root"
dist=local-sa/daemon/dist
# The files both packages have, where Debian puts them.
scripts/install-tree.sh --layout debian --bin "$bin" "$root"
strip --strip-unneeded "$root/usr/sbin/local-sa" "$root/usr/sbin/lsaquery"

doc="$root/usr/share/doc/local-sa"
cat > "$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: local-sa

Files: *
Copyright: 2026 local-sa contributors
License: MIT or Apache-2.0

License: MIT or Apache-2.0
 Licensed under either of the Apache License, Version 2.0, or the MIT
 license, at your option.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0,
 can be found in /usr/share/common-licenses/Apache-2.0.
 .
 Permission is hereby granted, free of charge, to any person obtaining a
 copy of this software and associated documentation files (the
 "Software"), to deal in the Software without restriction, including
 without limitation the rights to use, copy, modify, merge, publish,
 distribute, sublicense, and/or sell copies of the Software, and to permit
 persons to whom the Software is furnished to do so, subject to the
 following conditions:
 .
 The above copyright notice and this permission notice shall be included
 in all copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS
 OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
 MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN
 NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
 DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
 OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE
 USE OR OTHER DEALINGS IN THE SOFTWARE.
COPYRIGHT
# A native package's changelog: this build's version, dated by the last
# commit (the same tree gives the same file).
date=$(git log -1 --format=%aD 2>/dev/null || date -R)
printf 'local-sa (%s) unstable; urgency=medium\n\n  * Built from the local-sa source tree; see README.md.\n\n -- local-sa maintainers <local-sa@example.invalid>  %s\n' \
  "$version" "$date" | gzip -9n > "$doc/changelog.gz"
# What lintian says of the package that is meant so.
install -D -m 644 "$dist/debian/lintian-overrides" "$root/usr/share/lintian/overrides/local-sa"

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
Depends: rdma-core (>= 15), $depends
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
# The maintainer scripts, as dh_installsystemd and dh_installtmpfiles
# (debhelper 13) write them for ibacm's package.
cp "$dist/debian/postinst" "$dist/debian/prerm" "$dist/debian/postrm" "$root/DEBIAN/"
chmod 755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

if [ -n "${LOCAL_SA_DEB_TREE_ONLY:-}" ]; then
  echo "$root"
  exit 0
fi
dpkg-deb --build --root-owner-group "$root" "$out" >/dev/null
echo "$out/local-sa_${version}_${arch}.deb"
