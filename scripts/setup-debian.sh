#!/usr/bin/env bash
# Installs what local-sa needs on Debian 12 beyond a Rust toolchain: the
# simulated fabric (ibsim, OpenSM, saquery), the headers rdma-sys builds
# against, and cargo-fuzz when asked (--fuzz). Idempotent; installs only what
# is missing. Runs apt-get as root, through sudo when not root.
set -euo pipefail

packages=(
  ibsim-utils libumad2sim0 opensm infiniband-diags   # the simulated fabric
  libibverbs-dev librdmacm-dev pkg-config             # rdma-sys links these
  libclang1-14 libclang-common-14-dev                 # rdma-sys runs bindgen
  util-linux                                          # setpriv: no stray processes; unshare: private namespaces
  iproute2                                            # ip: the address watch's test changes addresses in its own namespace
  gcc libc6-dev                                       # the tests' C programs (librdmacm probe, C agent)
  ibacm                                               # ib_acme: the ibacm door's real client
  libibumad-dev                                       # fabric-bench's C agent: the floor of answering a MAD
  systemd                                             # systemd-socket-activate; systemd as PID 1 of a namespace in the package tests
  dpkg-dev man-db lintian                             # the Debian package: dpkg-shlibdeps; its man pages checked; lintian
  rpm rpmlint xz-utils                                # the RPM: rpmbuild, rpm, rpmspec; rpmlint; its crates' tarball
  init-system-helpers                                 # deb-systemd-helper/-invoke: the package's maintainer scripts
  shellcheck                                          # the scripts' quoting: a tree may be anywhere, spaces and all
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ "${1:-}" = "--fuzz" ] && ! cargo fuzz --version >/dev/null 2>&1; then
  echo "setup: installing cargo-fuzz"
  cargo install cargo-fuzz --locked --quiet
fi
