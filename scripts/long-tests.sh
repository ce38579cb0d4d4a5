#!/usr/bin/env bash
# The long variants of the hardening tests, too slow or too heavy for every
# CI run: the figures RELIABILITY.md records. Run after scripts/test.sh has
# set the machine up (or scripts/setup-debian.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== 100,000 half-finished RMPP loads from one node"
FLOOD_COUNT=100000 cargo test -p conformance --test transfer_limits -- --nocapture
echo "long tests passed"
