#!/usr/bin/env bash
# The demo: installs what is missing, builds, brings up a simulated
# 100-host fat tree with OpenSM, and queries it through local-sa's
# transport next to saquery. Everything it starts stops when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
cargo build --release --quiet -p local-sa --bins
cargo build --release --quiet -p conformance --bin demo
exec target/release/demo
