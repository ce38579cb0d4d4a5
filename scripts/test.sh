#!/usr/bin/env bash
# Every check: installs what is missing, then formatting, lints, the whole
# test suite (unit tests, golden vectors, fuzz-corpus replay, and the tests
# against OpenSM and saquery on simulated fabrics), benchmarks compiled, the
# Debian package built, installed, checked and purged, and a short fuzzing
# smoke run of every target.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh --fuzz

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo test"
# The conformance tests build local-sa and lsaquery themselves.
cargo test --workspace --quiet
echo "== benchmarks compile"
cargo bench --workspace --no-run --quiet
echo "== Debian package: build, install, verify, purge"
scripts/check-deb.sh
echo "== fuzz targets: ${FUZZ_SECONDS:=15}s each"
fuzz/run.sh "$FUZZ_SECONDS"
echo "== leftover simulator processes"
if pgrep -x ibsim >/dev/null || pgrep -x opensm >/dev/null; then
  echo "the tests left ibsim or opensm running:" >&2
  pgrep -a -x ibsim >&2 || true
  pgrep -a -x opensm >&2 || true
  exit 1
fi
echo "all checks passed"
