#!/bin/sh
# Suite bench-smoke: bench/handover.sh runs the demo workload traced, alone
# and beside a competitor, and prints a hand-over share for every setting.
# Asserts nothing about timing.
#
#   handover-smoke.sh SOURCE-DIR BUILD-DIR
set -u
SRC=$1
BUILD=$2
out=$(BENCH_SCALE=0.002 BENCH_SETTINGS="8:wait 4:drop" \
    sh "$SRC/bench/handover.sh" "$BUILD" 2>&1) || {
    echo "FAIL: bench/handover.sh exited non-zero:"
    echo "$out"
    exit 1
}
echo "$out"
rows=$(echo "$out" | grep -cE '^   --buffers [0-9]+ (wait|drop) +[0-9.]+% ')
[ "$rows" -eq 4 ] || { echo "FAIL: $rows rows with a share, not 4"; exit 1; }
echo "$out" | grep -q '^-- competitor' || { echo "FAIL: no competitor run"; exit 1; }
exit 0
