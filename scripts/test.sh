#!/usr/bin/env bash
# Every check: installs what is missing, then formatting, lints, the whole
# test suite (unit tests, golden vectors, fuzz-corpus replay, and the tests
# against OpenSM and saquery on simulated fabrics; those under systemd once
# more on the RPM's layout), benchmarks compiled, the Debian package and
# the RPM built, installed, checked and removed, and a short fuzzing smoke
# run of every target.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh --fuzz

# Simulator processes whose test is gone (their parent died: adopted by
# PID 1). Another run's live fabrics are not this run's leftovers, nor are
# orphans that were here before it started.
orphaned_simulators() {
  local pid
  for pid in $(pgrep -x 'ibsim|opensm'); do
    [ "$(ps -o ppid= -p "$pid" | tr -d ' ')" = 1 ] && echo "$pid"
  done | sort
}
orphans_before=$(orphaned_simulators)

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== shellcheck"
shellcheck scripts/*.sh fuzz/run.sh .ci/run
echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo test"
if [ "$(id -u)" -eq 0 ]; then
  # The conformance tests build local-sa and lsaquery themselves.
  cargo test --workspace --quiet
else
  # Some tests need root (private mount namespaces, systemd as PID 1 of
  # one, another user's identity): everything is built as this user, and
  # only the test programs run as root, through sudo, so that nothing in
  # the tree comes to belong to root. They find the programs built here.
  cargo build --quiet -p local-sa -p lsaquery
  target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
  export LOCAL_SA_BIN="$target/debug/local-sa" LSAQUERY_BIN="$target/debug/lsaquery"
  host=$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z-' 'A-Z_')
  # By name, found in PATH: cargo splits a runner's path at spaces.
  export PATH="$PWD/scripts:$PATH" "CARGO_TARGET_${host}_RUNNER=as-root.sh"
  cargo test --workspace --quiet
fi
echo "== the tests under systemd again, on the RPM's layout"
LOCAL_SA_SYSTEMD_LAYOUT=rpm cargo test --quiet -p conformance \
  --test systemd --test sm_node_under_systemd --test standby_under_systemd
echo "== benchmarks compile"
cargo bench --workspace --no-run --quiet
echo "== Debian package: build, install, verify, purge"
scripts/check-deb.sh
echo "== RPM: build from its SRPM, rpmlint, install, verify, upgrade, erase"
scripts/check-rpm.sh
echo "== fuzz targets: ${FUZZ_SECONDS:=15}s each"
fuzz/run.sh "$FUZZ_SECONDS"
echo "== leftover simulator processes"
left=$(comm -13 <(echo "$orphans_before") <(orphaned_simulators))
if [ -n "$left" ]; then
  echo "the tests left ibsim or opensm running:" >&2
  for pid in $left; do ps -o pid=,args= -p "$pid" >&2 || true; done
  exit 1
fi
echo "all checks passed"
