#!/usr/bin/env bash
# Reproduces "Against the peers" in BENCHMARKS.md: installs the peers into
# bench-out/, builds serialgate in release, runs benches/peers.rs.
# Arguments go to the bench: bench/run.sh --quick, bench/run.sh --only rtt.
set -euo pipefail
cd "$(dirname "$0")/.."
bench/install-peers.sh
cargo build --release
cargo bench --bench peers -- "$@"
