#!/bin/sh
# The perf cross-check of a sampled trace (suite 'perf'): a stock
# interpreter sampled by evalprof while perf samples the same run.  The
# trace's share inside the eval function (its samples with a Python
# frame) and perf's (its samples with _PyEval_EvalFrameDefault on the
# stack, leaving out the stacks perf could not unwind) are independent
# measures of one thing, and so are the two leaf shares (perf's user
# leaf symbol, the trace's interrupted program counter, no unwinding on
# either side): the table must show both rows, say the trace's side is
# an estimate from samples and locate perf's samples in the trace's
# timeline; each pair must agree within 5 points (the shares of a few
# thousand samples each have a standard error near 1 point), and the
# trace's share must hold the program's fib, most of the run.
# Skips where perf cannot record.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${EVALPROF:?}" "${PYTHON:?}" "${EVALPROF_PYTHONPATH:?}"
. "$here/perf-probe.sh"
fail=0
no() { echo "FAIL: $*"; fail=1; }
cat >"$tmp/work.py" <<'PY'
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

total = 0
for i in range(250):
    total += fib(22)
print(total)
PY
cd "$tmp" || exit 1
PYTHONPATH=$EVALPROF_PYTHONPATH "$EVALPROF" perf --trace s.evp -o out -- \
    "$PYTHON" -m evalprof --sample --rate 4000 -q -o s.evp work.py >xc.txt 2>xc.err ||
    { cat xc.err; no "evalprof perf --trace of a sampled run failed"; }
grep -q '^cross-check: perf samples against the trace' xc.txt || no "no cross-check table"
grep -q 'of samples (weights times the period: an estimate)' xc.txt ||
    { cat xc.txt; no "the table does not say the trace's time is estimated from samples"; }
grep -q 'same instant: ' xc.txt || { cat xc.txt; no "perf's samples were not located in the sampled trace's timeline"; }
line=$(grep '^  inside the eval function' xc.txt)
p=$(echo "$line" | awk '{ sub("%", "", $5); print $5 }')
t=$(echo "$line" | awk '{ sub("%", "", $6); print $6 }')
awk -v t="${t:-0}" -v p="${p:-0}" 'BEGIN { d = p - t; exit !(t > 50 && d <= 5 && d >= -5) }' ||
    { cat xc.txt; no "inside the eval function: perf $p%, trace $t%"; }
line=$(grep '^  leaf in the eval function' xc.txt)
lp=$(echo "$line" | awk '{ sub("%", "", $6); print $6 }')
lt=$(echo "$line" | awk '{ sub("%", "", $7); print $7 }')
awk -v t="${lt:-0}" -v p="${lp:-x}" 'BEGIN { d = p - t; exit !(p != "x" && t > 20 && d <= 5 && d >= -5) }' ||
    { cat xc.txt; no "leaf in the eval function: perf $lp%, trace $lt%"; }
[ $fail = 0 ] && echo "ok: inside the eval function: perf $p%, sampled trace $t%; leaf in it: perf $lp%, trace $lt%"
exit $fail
