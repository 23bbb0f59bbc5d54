#!/usr/bin/env bash
# Reproduces "Against the peers" in BENCHMARKS.md: installs the peers into
# bench-out/, builds serialgate in release, runs benches/peers.rs.
# Arguments go to the bench: peers/run.sh --quick, peers/run.sh --only rtt.
set -euo pipefail
cd "$(dirname "$0")/.."
peers/install-peers.sh
cargo build --release
cargo bench --bench peers -- "$@"
