#!/bin/sh
# Suite bench-smoke: bench/modeb/run.py's sampled overhead in one process
# (paired.py) runs both workloads small on one interpreter and prints a
# line of figures for each; the sessions it opened wrote readable
# sampled traces; bench/cpython/forked.py runs on the same interpreter
# with its writer thread free of the main thread's CPU.  Asserts nothing
# about timing.
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
# bench/cpython/forked.py measures a stock interpreter alike (sampled.py
# --forked --stock): a session through the API, an untraced forked child,
# the parent's threads but its main one on every CPU (the session starts
# its writer after the main thread is pinned, and again after the fork)
cpu=$(python3 -c 'import os; print(sorted(os.sched_getaffinity(0))[-1])')
env -u EVALPROF_SAMPLE_RATE EVALPROF="$tmp/f.evp" EVALPROF_MODE=sample PYTHONPATH="$BUILD/python" \
    "$PYTHON" "$SRC/bench/cpython/forked.py" callheavy 0.01 2 "$cpu" > "$tmp/f.json" 2> "$tmp/f.err" ||
    { echo "FAIL: forked.py on $PYTHON:"; cat "$tmp/f.err"; fail=1; }
python3 - "$tmp/f.json" "$cpu" <<'PYEOF' || { echo "FAIL: forked.py's figures on $PYTHON: $(cat "$tmp/f.json")"; fail=1; }
import json, os, sys
d = json.load(open(sys.argv[1]))
every = sorted(os.sched_getaffinity(0))
assert d["producer"] == "extension", d
assert len(d["child"]) == 2 and len(d["parent"]) == 2, d
t = d["threads"]
assert t["main"] == [int(sys.argv[2])], t
others = [v for k, v in t.items() if k != "main"]
assert others and all(v == every for v in others), (t, every)
print("forked.py on a stock interpreter: threads", t)
PYEOF
"$BUILD/evalprof" info "$tmp/f.evp" 2>&1 | grep -qE '^sampled: +[1-9][0-9,]* samples' ||
    { echo "FAIL: forked.py's session wrote no samples"; fail=1; }
ls "$tmp"/f.evp.* > /dev/null 2>&1 && { echo "FAIL: forked.py's child wrote a trace"; fail=1; }
exit $fail
