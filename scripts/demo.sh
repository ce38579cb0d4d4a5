#!/usr/bin/env bash
# The demo: installs what is missing, builds, brings up a simulated
# 100-host fat tree with OpenSM as the master SA, starts local-sa on one
# host and asks it and OpenSM the same questions with lsaquery (Gets,
# tables, a load, a host unplugged), then has several consumers subscribe
# to notices and join a multicast group through local-sa's local API and
# shows OpenSM holding one registration for all of them. Everything it
# starts stops when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
cargo build --release --quiet -p local-sa -p lsaquery
cargo build --release --quiet -p conformance --bin demo
exec target/release/demo
