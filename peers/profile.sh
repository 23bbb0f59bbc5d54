#!/usr/bin/env bash
# Profiles serialgate while benches/peers.rs drives it, by pointing the bench
# at a wrapper (SERIALGATE_BIN) that starts serialgate under the profiler:
#
#   peers/profile.sh perf      --only bulk --quick   # perf record, cpu-clock, DWARF call graphs
#   peers/profile.sh callgrind --only rtt --quick    # valgrind --tool=callgrind
#   peers/profile.sh massif    --only scale --quick  # valgrind --tool=massif (heap)
#
# Everything after the tool goes to the bench. The profiled binary is a
# release build with line tables, built into $PEERS_DIR/profile/target (not
# target/, which other builds share); PROFILE_BIN=/path/to/serialgate skips
# that build. Output lands in $PEERS_DIR/profile/ (default bench-out/profile/):
# perf-<pid>.data, callgrind.<pid>, massif.<pid>; read them with
#   perf report -i FILE --no-children      callgrind_annotate FILE      ms_print FILE
# The figures a profiled run prints are the profiler's, not serialgate's:
# quote only runs without this script.
set -euo pipefail

tool=${1:?usage: peers/profile.sh perf|callgrind|massif [bench args...]}
shift
crate_dir=$(cd "$(dirname "$0")/.." && pwd)
out=${PEERS_DIR:-$crate_dir/bench-out}/profile
mkdir -p "$out"
out=$(cd "$out" && pwd)

bin=${PROFILE_BIN:-}
if [[ -z $bin ]]; then
    (cd "$crate_dir" &&
        CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_TARGET_DIR=$out/target \
            cargo build --release --bin serialgate)
    bin=$out/target/release/serialgate
fi

case $tool in
perf) run="perf record -q -e cpu-clock -F 4999 --call-graph dwarf,32768 -o $out/perf-\$\$.data -- $bin" ;;
callgrind) run="valgrind -q --tool=callgrind --callgrind-out-file=$out/callgrind.%p -- $bin" ;;
massif) run="valgrind -q --tool=massif --massif-out-file=$out/massif.%p -- $bin" ;;
*)
    echo "unknown tool $tool: perf, callgrind or massif" >&2
    exit 2
    ;;
esac
wrapper=$out/serialgate-under-$tool
printf '#!/bin/sh\nexec %s "$@"\n' "$run" >"$wrapper"
chmod +x "$wrapper"

cd "$crate_dir"
SERIALGATE_BIN=$wrapper PEERS_OUT=$out/peers-$tool.json cargo bench --bench peers -- "$@"
echo
echo "profiles in $out:"
ls -t "$out" | grep -E '^(perf-.*\.data|callgrind\.|massif\.)' | head
