#!/usr/bin/env bash
# The long variants of the hardening tests, too slow or too heavy for every
# CI run: the figures RELIABILITY.md records. Run after scripts/test.sh has
# set the machine up (or scripts/setup-debian.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== 100,000 half-finished RMPP loads from one node"
FLOOD_COUNT=100000 cargo test -p conformance --test local_sa_loads half_finished -- --nocapture
echo "== 100,000-record loads through 5 % and 10 % packet loss"
for loss in 5 10; do
  LOSS_RECORDS=100000 LOSS_PERCENT=$loss cargo test -p conformance --test local_sa_loads lossy -- --nocapture
done
echo "== soak: 1,000,000 connect-resolve-close cycles on each socket, 100,000 subscriptions, 1,000 loads, SIGHUPs"
SOAK_SCALE=1 cargo test --release -p conformance --test soak -- --nocapture
echo "long tests passed"
