#!/bin/sh
# Runs the fleet bench N times (its argument; 20 without), each a full
# run with its own NATS servers and gateways, and prints each run's time
# added by the fleet (the p50 through the fleet less the p50 of the local
# call), then the median over the runs and how many were within the
# 0.5 ms goal. One run says how fast the machine was in its minute; many
# say how the fleet does. Build first: cargo build --release.
#
#   benches/fleet-runs.sh 40 > /tmp/fleet-runs.txt
set -eu
runs=${1:-20}
out=$(mktemp)
log=$(mktemp)
trap 'rm -f "$out" "$log"' EXIT
i=0
while [ "$i" -lt "$runs" ]; do
    i=$((i + 1))
    if ! cargo bench --locked --bench fleet > "$log" 2>&1; then
        echo "run $i of the fleet bench failed; the end of its output:" >&2
        tail -n 20 "$log" >&2
        exit 1
    fi
    grep '^{' "$log" >> "$out"
done
python3 - "$out" <<'PY'
import json, statistics, sys

runs = [json.loads(line) for line in open(sys.argv[1])]
added = []
for n, run in enumerate(runs, 1):
    a = run["remote_p50_ms"] - run["local_p50_ms"]
    added.append(a)
    print(
        f"run {n}: added {a:.3f} ms (through the fleet {run['remote_p50_ms']:.3f}, "
        f"local {run['local_p50_ms']:.3f}, NATS alone {run['nats_floor_p50_ms']:.3f}; "
        f"CPU of the local call at the serving gateway {run['local_cpu_serving_us']:.0f} us); "
        f"list_ports of {run['list_ports']} ports {run['list_full_p50_ms']:.1f} ms"
    )
within = sum(a <= 0.5 for a in added)
print(
    f"{len(added)} runs: added median {statistics.median(added):.3f} ms, "
    f"from {min(added):.3f} to {max(added):.3f}; {within} within 0.5 ms"
)
PY
