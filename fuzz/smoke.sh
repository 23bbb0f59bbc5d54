#!/usr/bin/env bash
# Builds every fuzz target and runs each for a few seconds on the committed
# seeds: what CI does (.ci/run) so that a target that no longer builds, or
# that crashes on its seeds or soon after, is noticed. Not a fuzzing
# campaign (README.md says how to run one).
#
# Stable Rust, no cargo-fuzz: the targets are built as cargo-fuzz builds
# them with `-s none` (libFuzzer's coverage instrumentation, `--cfg
# fuzzing`, debug assertions and overflow checks), for the host target
# given explicitly so that build scripts and proc macros are built without
# the instrumentation (they would not link without libFuzzer). Unlike
# cargo-fuzz it builds the dev profile at opt-level 1 (FUZZ_PROFILE=release
# for cargo-fuzz's): a minute less to build in CI, and fast enough for
# seconds of fuzzing.
#
#   fuzz/smoke.sh            # 10 s a target
#   FUZZ_SECONDS=60 fuzz/smoke.sh
set -euo pipefail
cd "$(dirname "$0")"

seconds="${FUZZ_SECONDS:-10}"
host="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
--cfg fuzzing -Cdebug-assertions -Coverflow-checks"
profile="${FUZZ_PROFILE:-dev}"
if [ "$profile" = dev ]; then
    export CARGO_PROFILE_DEV_OPT_LEVEL=1 CARGO_PROFILE_DEV_DEBUG=0
fi
cargo build --locked --profile "$profile" --bins --target "$host"
[ "$profile" = dev ] && profile_dir=debug || profile_dir="$profile"
bin="target/$host/$profile_dir"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# run TARGET [libFuzzer options…]: a fresh corpus directory (where new
# inputs go) and the target's seeds, if it has any.
run() {
    local target="$1"
    shift
    local corpus=("$scratch/$target")
    mkdir -p "$scratch/$target"
    [ -d "seeds/$target" ] && corpus+=("seeds/$target")
    echo "fuzz: $target for ${seconds} s"
    "$bin/$target" -max_total_time="$seconds" -print_final_stats=1 \
        -rss_limit_mb=2048 -timeout=30 -artifact_prefix="$scratch/$target-" \
        "$@" "${corpus[@]}" 2>"$scratch/$target.log" || {
        tail -n 40 "$scratch/$target.log" >&2
        ls "$scratch/$target-"* >&2 2>/dev/null || true
        echo "fuzz: $target failed" >&2
        return 1
    }
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$scratch/$target.log" \
        | sed "s/^/fuzz: $target: /"
}

run log_pages
run matcher -max_len=2048 -len_control=0
run clean -dict=dicts/clean.dict -max_len=4096 -len_control=0
run config -dict=dicts/config.dict
