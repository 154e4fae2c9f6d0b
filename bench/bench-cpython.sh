#!/bin/sh
# Instrumented CPython against its plain baseline (mode A): workload
# times with tracing off, op events only and every event, each with its
# ratio to the plain build of the same source measured in the same run;
# the cost per event, trace MB/s; and the shares of a traced
# `python -c pass`; the sampled mode's overhead at several rates
# (bench/cpython/sampled.py, across processes and in forked pairs) and
# one signal's cost (bench/signal).
# Builds the interpreters first when missing (reused when their source
# and hooks are unchanged).  Never fails on time.
#
#   sh bench/bench-cpython.sh BUILD      (EVP_BENCH_QUICK=1: fewer runs)
BUILD=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
versions=${EVP_BENCH_CPYTHON:-3.13 3.11}
ok=""
for v in $versions; do
    if sh cpython/build.sh --version "$v" --build-dir "$BUILD" > "${TMPDIR:-/tmp}/evp-bench-build-$v.log" 2>&1; then
        ok="$ok,$v"
    else
        echo "CPython $v: not benchmarked: $(grep '^evalprof-cpython: ' "${TMPDIR:-/tmp}/evp-bench-build-$v.log" | tail -n 1)"
    fi
done
[ -n "$ok" ] || exit 1
reps=5
[ -n "${EVP_BENCH_QUICK:-}" ] && reps=3
python3 bench/cpython/bench.py "$BUILD" --versions "${ok#,}" --reps "$reps" --scale 2
# The sampled mode beside the same interpreter untraced, at several rates
# (CPU time, paired runs), and the machine's own price per signal.
python3 bench/cpython/sampled.py "$BUILD" --versions "${ok#,}" --reps $((reps + 4))
# The same in two processes of one start, where the VM's speed from one
# process to the next cannot move the ratio (bench/cpython/forked.py),
# beside the stock interpreters measured alike.
stock=$(python3 python/find_interpreters.py 2>/dev/null | awk -F'\t' '$1 == "build" { print $3 }' | paste -sd, -)
python3 bench/cpython/sampled.py "$BUILD" --versions "${ok#,}" --forked --forks $((reps + 3)) --pairs 11 --scale 0.1 --rates 1000,250,10 --stock "$stock"
if [ -x "$BUILD/bench/signal_cost" ]; then
    "$BUILD/bench/signal_cost" 1000 21 400
fi
