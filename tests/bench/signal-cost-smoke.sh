#!/bin/sh
# Suite bench-smoke: bench/signal's signal_cost prints a row for each way
# of sampling it compares, the sampler thread's (which signals nothing)
# with the reads it made at about the rate asked and the working
# thread's own CPU time and real time beside the process's.  A clock this
# machine refuses is named as not available.  Asserts nothing about
# timing.
#
#   signal-cost-smoke.sh BUILD/bench/signal_cost
set -u
out=$("$1" 200 1 100 2>&1) || { echo "FAIL: signal_cost exited non-zero:"; echo "$out"; exit 1; }
echo "$out"
fail=0
num='[0-9]+\.[0-9]+'
echo "$out" | head -n 1 | grep -q '^200 Hz, 1 interleaved runs of 100 ms of work' ||
    { echo "FAIL: no heading"; fail=1; }
for row in "none" "POSIX CPU timer" "perf, F_SETSIG" "perf, no signal" "perf, sigtrap" "sampler thread"; do
    echo "$out" | grep -qE "^  $row +($num ms +${num}x +[0-9]+ signals/run +-?$num us/signal +\([+-]$num% of the run\)  thread +${num}x  real +${num}x|not available here)$" ||
        { echo "FAIL: no row '$row'"; fail=1; }
done
# 100 ms of work at 200 Hz: some 20 wake-ups of the sampler thread (the
# machine may stretch the run's real time; never none, never hundreds)
reads=$(echo "$out" | sed -n 's/^  sampler thread .*x *\([0-9]*\) signals\/run.*/\1/p')
if [ -z "$reads" ] || [ "$reads" -lt 5 ] || [ "$reads" -gt 200 ]; then
    echo "FAIL: the sampler thread's reads: '$reads'"
    fail=1
fi
[ $fail -eq 0 ] && echo "ok: signal_cost's six rows, the sampler thread's $reads reads"
exit $fail
