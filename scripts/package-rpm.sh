#!/usr/bin/env bash
# Builds local-sa's source RPM and, from it, the binary RPM into
# target/rpm/ (rpmbuild's tree there), as a RHEL-family build host would:
# the source tarball of this tree and a tarball of its crates (cargo
# vendor of Cargo.lock), so that the build itself needs no network; the
# spec is local-sa/daemon/dist/rpm/local-sa.spec. Prints the SRPM's path,
# then the RPM's.
#
#   scripts/package-rpm.sh
#   sudo dnf install target/rpm/RPMS/x86_64/local-sa-*.rpm
#
# On a RHEL-family machine: dnf install rpm-build cargo rust clang-devel
# rdma-core-devel systemd-rpm-macros (or `dnf builddep` the SRPM). On
# Debian (Debian's rpm package gives rpmbuild): rpm's database there knows
# no BuildRequires, so they are not checked (--nodeps: the programs' own
# build needs what scripts/setup-debian.sh installs), and the systemd
# macros it lacks come from dist/rpm/macros.fallback.
#
# LOCAL_SA_RPM_RELEASE sets the release (default 1; another makes an
# upgrade to test). The build's cargo works in target/rpm/cargo-target,
# kept: a second build of the same tree only links again (on a build host
# the spec's cargo works in its build directory).
set -euo pipefail
cd "$(dirname "$0")/.."

spec=local-sa/daemon/dist/rpm/local-sa.spec
version=$(cargo pkgid -p local-sa | sed 's/.*[@#]//')
spec_version=$(sed -n 's/^Version:[[:space:]]*//p' "$spec")
if [ "$version" != "$spec_version" ]; then
  echo "package-rpm: $spec says Version $spec_version, Cargo.toml $version: make them the same" >&2
  exit 1
fi
release=${LOCAL_SA_RPM_RELEASE:-1}
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
top="$target/rpm"
mkdir -p "$top/SOURCES" "$top/SPECS"

# The source tarball: the tree's files (committed, changed and new; not
# what git ignores), under local-sa-<version>/.
name="local-sa-$version"
list=$(mktemp)
vendor=$(mktemp -d)
trap 'rm -rf "$list" "$vendor"' EXIT
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard > "$list"
else
  find . \( -path ./target -o -path ./fuzz/target -o -path ./.git \) -prune -o -type f -print0 |
    sed -z 's|^\./||' > "$list"
fi
tar --null --files-from="$list" --ignore-failed-read --sort=name --owner=0 --group=0 \
  --transform "s|^|$name/|" -czf "$top/SOURCES/$name.tar.gz"

# The crates: every package of Cargo.lock, from cargo's cache when it has
# them.
cargo vendor --quiet --locked --versioned-dirs --manifest-path "$PWD/Cargo.toml" "$vendor/vendor" >/dev/null
# Windows' import libraries (two thirds of the crates' bytes) are never
# built on Linux: dropped, and with them the files their checksums list
# (the crate's own checksum, which Cargo.lock pins, stays), as Fedora's
# vendored packages drop them.
for crate in "$vendor"/vendor/winapi-*-pc-windows-gnu-* "$vendor"/vendor/windows_*; do
  [ -d "$crate/lib" ] || continue
  rm -rf "${crate:?}/lib"
  sum=$(sed -n 's/.*"package":"\([0-9a-f]*\)".*/\1/p' "$crate/.cargo-checksum.json")
  printf '{"files":{},"package":"%s"}' "$sum" > "$crate/.cargo-checksum.json"
done
XZ_OPT=-T0 tar -C "$vendor" --sort=name --owner=0 --group=0 -cJf "$top/SOURCES/$name-vendor.tar.xz" vendor
cp "$spec" "$top/SPECS/"

# rpm's macros do not quote the paths they expand: a topdir with a blank
# in it (a checkout under "~/my builds") breaks %prep. rpmbuild works
# through a link without one, and the paths it prints are given back as
# under target/.
rpmtop=$top
case $top in
  *[[:space:]]*)
    rpmtop=$(mktemp -u "${TMPDIR:-/tmp}/local-sa-rpmtop.XXXXXX")
    ln -s "$top" "$rpmtop"
    trap 'rm -rf "$list" "$vendor" "$rpmtop"' EXIT
    ;;
esac
args=(--define "_topdir $rpmtop" --define "local_sa_release $release")
if [ -z "$(rpm --eval '%{?_unitdir}')" ]; then
  args+=(--load local-sa/daemon/dist/rpm/macros.fallback)
fi
if ! rpm -q rpm >/dev/null 2>&1; then
  args+=(--nodeps)
fi
srpm=$(rpmbuild "${args[@]}" -bs "$rpmtop/SPECS/local-sa.spec" | sed -n 's/^Wrote: //p')
log="$top/build.log"
if ! CARGO_TARGET_DIR="$rpmtop/cargo-target" rpmbuild "${args[@]}" --rebuild "$srpm" > "$log" 2>&1; then
  tail -40 "$log" >&2
  echo "package-rpm: rpmbuild --rebuild $srpm failed (whole log: $log)" >&2
  exit 1
fi
rpm=$(sed -n 's/^Wrote: \(.*\.rpm\)$/\1/p' "$log" | grep -v '\.src\.rpm$' | grep -v -- '-debug' | head -1)
echo "$top${srpm#"$rpmtop"}"
echo "$top${rpm#"$rpmtop"}"
