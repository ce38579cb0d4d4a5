#!/usr/bin/env bash
# Runs every fuzz target for the given number of seconds each (default 60),
# growing fuzz/corpus/<target>/. A crash stops the run and leaves the input
# in fuzz/artifacts/<target>/: copy it to fuzz/regressions/<target>/ with
# the fix, so `cargo test -p mad-codec` keeps replaying it.
#
# Usage: fuzz/run.sh [seconds-per-target] [target...]
# Uses nightly with AddressSanitizer when installed, else stable (with
# RUSTC_BOOTSTRAP for the sanitizer flags cargo-fuzz passes).
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(mad_parse mad_roundtrip sa_records rmpp_reassembly sa_core registry_ops memberships acm netlink path_engine kept_tables opensm_config)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz is not installed: cargo install cargo-fuzz --locked" >&2
  exit 1
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
else
  # cargo caches the failed probe of a run without RUSTC_BOOTSTRAP.
  rm -f target/.rustc_info.json
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  max_len=256
  [ "$t" = rmpp_reassembly ] && max_len=4096
  [ "$t" = sa_records ] && max_len=2048
  [ "$t" = sa_core ] && max_len=4096
  [ "$t" = memberships ] && max_len=1024
  [ "$t" = acm ] && max_len=2048
  [ "$t" = netlink ] && max_len=1024
  [ "$t" = path_engine ] && max_len=512
  [ "$t" = kept_tables ] && max_len=2048
  [ "$t" = opensm_config ] && max_len=4096
  echo "== $t: ${secs}s"
  "${fuzz[@]}" run "$t" "corpus/$t" -- -max_total_time="$secs" -max_len="$max_len" -print_final_stats=1 2>&1 \
    | grep -E '^(==|#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY|.*ERROR)' || true
  if ls "artifacts/$t"/crash-* >/dev/null 2>&1; then
    echo "crash found in $t: see fuzz/artifacts/$t" >&2
    exit 1
  fi
done
