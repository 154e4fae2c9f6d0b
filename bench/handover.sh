#!/bin/sh
# Hand-over benchmark: how much of the traced time the program spends
# handing full buffers to the recorder's writer thread (the "recorder"
# row of evalprof summary --sort total), for the demo workload
# (examples/workload, mode B), alone and beside a CPU-bound competitor
# process, with the previous default ring (8 buffers a thread, wait),
# the current default (32 buffers, wait) and --on-overflow drop, all
# measured in the same run.  Never fails on time.
#
#   sh bench/handover.sh [BUILD]
#
# Environment: PYTHON (default python3), BENCH_SCALE (workload size,
# default 0.05), BENCH_SETTINGS (default "8:wait 32:wait 32:drop").
set -eu
BUILD=${1:-build}
PYTHON=${PYTHON:-python3}
SCALE=${BENCH_SCALE:-0.05}
SETTINGS=${BENCH_SETTINGS:-8:wait 32:wait 32:drop}
cd "$(dirname "$0")/.."
evalprof="$BUILD/evalprof"
[ -x "$evalprof" ] || { echo "handover: $evalprof is missing" >&2; exit 1; }
tmp=$(mktemp -d)
competitor=
trap '[ -z "$competitor" ] || kill "$competitor" 2>/dev/null; rm -rf "$tmp"' EXIT

# One run: the recorder row's share of traced time, its count and the
# events dropped.
run() { # BUFFERS MODE
    "$evalprof" record -q -o "$tmp/t.evp" --buffers "$1" --on-overflow "$2" \
        -- "$PYTHON" examples/workload/main.py --scale "$SCALE" \
        >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
    "$evalprof" summary --sort total "$tmp/t.evp" | awk '
        $1 == "recorder" { n = $2; share = $NF }
        $1 == "dropped:" { d = $2 }
        END { printf "%8s %9s %12s", share ? share : "0.0%", n ? n : 0,
              d ? d : "none" }'
    size=$(du -m "$tmp/t.evp" | cut -f1)
    printf " %6s MB\n" "$size"
}

echo "== hand-over share of traced time, examples/workload --scale $SCALE" \
    "on $($PYTHON -c 'import platform; print("CPython", platform.python_version())')," \
    "$(nproc) CPUs"
for load in alone competitor; do
    if [ "$load" = competitor ]; then
        sh -c 'while :; do :; done' &
        competitor=$!
    fi
    echo "-- $load"
    printf "   %-16s %8s %9s %12s %9s\n" setting share handoffs dropped trace
    for s in $SETTINGS; do
        b=${s%%:*} m=${s#*:}
        printf "   %-16s " "--buffers $b $m"
        run "$b" "$m"
    done
    if [ -n "$competitor" ]; then
        kill "$competitor"
        wait "$competitor" 2>/dev/null || true
        competitor=
    fi
done
