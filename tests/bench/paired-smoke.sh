#!/bin/sh
# Suite bench-smoke: bench/modeb/run.py's sampled overhead in one process
# (paired.py) runs both workloads small on one interpreter and prints a
# line of figures for each; the sessions it opened wrote readable
# sampled traces.  Asserts nothing about timing.
#
#   paired-smoke.sh SOURCE-DIR BUILD-DIR   (PYTHON: the interpreter)
set -u
SRC=$1
BUILD=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(BENCH_PAIRS=2 PYTHONPATH="$BUILD/python" python3 -c '
import sys, os
sys.path.insert(0, os.path.join(sys.argv[1], "bench", "modeb"))
import run
run.paired(sys.argv[2], sys.argv[3], "0.01", sys.argv[4])
' "$SRC" "$PYTHON" "$BUILD" "$tmp" 2>&1) || {
    echo "FAIL: run.paired exited non-zero:"
    echo "$out"
    exit 1
}
echo "$out"
fail=0
num='[0-9]+\.[0-9]+'
for w in demo call-heavy; do
    echo "$out" | grep -qE "^  sampled in one process, $w: ${num}x untraced, cpu \(median of 2 paired chunks of [0-9]+ ms; quartiles $num-$num; the medians' ratio ${num}x\); target <= 1.05x: (met|NOT met)$" ||
        { echo "FAIL: no line of figures for $w"; fail=1; }
done
# the last session's trace (each session rewrites it) holds samples
"$BUILD/evalprof" info "$tmp/paired.evp" > "$tmp/info" 2>&1 ||
    { echo "FAIL: evalprof info of the last session's trace:"; cat "$tmp/info"; fail=1; }
grep -qE '^sampled: +[1-9][0-9,]* samples' "$tmp/info" ||
    { echo "FAIL: the session's trace holds no samples"; cat "$tmp/info"; fail=1; }
exit $fail
