#!/usr/bin/env bash
# Regenerates link/hot-text.ld, the list of functions a serving daemon runs,
# which build.rs gives the linker so that release builds keep them together
# (see bench/hot-text.py for why). It profiles the release binary with
# callgrind while the peer bench drives it over stdio (every phase, quick)
# and the load bench over streamable HTTP (small), then writes the script.
#
#   cargo build --release && bench/hot-text.sh && cargo build --release
#
# The second build links with the new list. Takes about 10 minutes here, most
# of it the benches' own release build and the daemon under valgrind.
# PROFILE_BIN=/path/to/serialgate profiles another build; profiles land in
# $PEERS_DIR/hot-text/ (default bench-out/hot-text/).
set -euo pipefail

crate_dir=$(cd "$(dirname "$0")/.." && pwd)
bin=${PROFILE_BIN:-$crate_dir/target/release/serialgate}
[[ -x $bin ]] || {
    echo "no $bin: run cargo build --release first" >&2
    exit 1
}
command -v valgrind >/dev/null || {
    echo "valgrind is needed: apt-get install valgrind" >&2
    exit 1
}
out=${PEERS_DIR:-$crate_dir/bench-out}/hot-text
rm -rf "$out"
mkdir -p "$out/no-peers"
out=$(cd "$out" && pwd)

wrapper=$out/serialgate-under-callgrind
printf '#!/bin/sh\nexec valgrind -q --tool=callgrind --demangle=no --dump-instr=no --callgrind-out-file=%s/callgrind.%%p -- %s "$@"\n' \
    "$out" "$bin" >"$wrapper"
chmod +x "$wrapper"

cd "$crate_dir"
# A daemon as systemd runs it: info-level logs, one switch, then SIGTERM.
"$bin" simulate cisco-ios --link "$out/switch" >"$out/switch.log" 2>&1 &
switch=$!
printf '[ports.sw1]\ndevice = "%s"\npreset = "cisco-ios"\n' "$out/switch" >"$out/one-port.toml"
for _ in $(seq 100); do [[ -e $out/switch ]] && break; sleep 0.1; done
mkfifo "$out/stdin"
SERIALGATE_LOG=info "$wrapper" serve --config "$out/one-port.toml" <"$out/stdin" 2>"$out/serve.log" &
served=$!
exec 3>"$out/stdin" # stdin stays open: no end-of-file shutdown
for _ in $(seq 300); do grep -q "opened" "$out/serve.log" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$served"
wait "$served" || true
exec 3>&-
kill "$switch" 2>/dev/null || true
# The peers are left out (an empty PEERS_DIR): only serialgate is profiled.
SERIALGATE_BIN=$wrapper PEERS_DIR=$out/no-peers PEERS_OUT=$out/peers.json \
    cargo bench --bench peers -- --quick >"$out/peers.log" 2>&1 ||
    echo "the peer bench failed under valgrind (see $out/peers.log); using what it profiled" >&2
SERIALGATE_BIN=$wrapper cargo bench --bench load -- --ports 4 --sessions 2 --secs 10 --rate 20 \
    >"$out/load.log" 2>&1 ||
    echo "the load bench failed under valgrind (see $out/load.log); using what it profiled" >&2

shopt -s nullglob
profiles=("$out"/callgrind.*)
((${#profiles[@]})) || {
    echo "no profiles in $out" >&2
    exit 1
}
python3 bench/hot-text.py "$bin" "${profiles[@]}" >link/hot-text.ld.new
mv link/hot-text.ld.new link/hot-text.ld
echo "link/hot-text.ld: $(grep -c '^    \*(' link/hot-text.ld) functions from ${#profiles[@]} profiles; now: cargo build --release"
