#!/bin/sh
# `evalprof perf` for real (suite 'perf'): profiles a small Python program
# and a deep C recursion with Linux perf, then checks the folded stacks,
# the SVG, the hot table, the start-up breakdown and the max-stack
# warning.  Skips, saying why, where perf cannot record (no perf, no
# permission, no perf_event_open in a container).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${EVALPROF:?}"
. "$here/perf-probe.sh"
py=$(command -v python3 || true)
[ -n "$py" ] || { echo "SKIP: no python3 to profile"; exit 77; }
fail=0
no() { echo "FAIL: $*"; fail=1; }

cat >"$tmp/work.py" <<'PY'
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def main():
    total = 0
    for i in range(12):
        total += fib(21)
    print(total)

main()
PY
cd "$tmp" || exit 1
if ! "$EVALPROF" perf -o out -- "$py" work.py >run.txt 2>run.err; then
    cat run.err
    no "evalprof perf exited non-zero"
fi
[ -s out/perf.folded ] || no "no folded stacks written"
python3 "$here/svgcanon.py" out/flamegraph.svg >/dev/null || no "flame graph is not well-formed"
grep -q '_PyEval_EvalFrameDefault' out/perf.folded ||
    no "no _PyEval_EvalFrameDefault frame: symbols of the interpreter not resolved"
grep -q '^hot functions' run.txt || no "no hot-function table"
grep -q '_PyEval_EvalFrameDefault' run.txt || no "hot table lacks the eval function"
# every folded line: frames then a count
if grep -v -E '^[^ ].* [0-9]+$' out/perf.folded | grep -q .; then
    no "malformed folded lines"
fi

if ! "$EVALPROF" perf --startup -o su -- "$py" -c pass >su.txt 2>su.err; then
    cat su.err
    no "evalprof perf --startup exited non-zero"
fi
init=$(awk '/^  pymain_init/ { print $(NF-1) }' su.txt)
case "$init" in
'' | 0 | 0,*) no "start-up breakdown shows no initialisation samples" ;;
esac
awk '/^  [a-z(]/ && $NF ~ /%$/ { s += $NF } END { exit !(s > 0) }' su.txt ||
    no "start-up breakdown has no shares"

# Stacks deeper than kernel.perf_event_max_stack are detected.
max=$(cat /proc/sys/kernel/perf_event_max_stack 2>/dev/null || echo 127)
cc=$(command -v cc || command -v gcc || true)
if [ -n "$cc" ] && [ "$max" -lt 300 ]; then
    cat >deep.c <<'C'
#include <stdlib.h>
static volatile unsigned long sink;
static void spin(void) { for (int i = 0; i < 20000; i++) sink += i; }
static void down(int n)
{
    if (n == 0) {
        for (int k = 0; k < 2000; k++)
            spin();
        return;
    }
    down(n - 1);
    sink++;
}
int main(int argc, char **argv) { down(argc > 1 ? atoi(argv[1]) : 400); return 0; }
C
    "$cc" -O0 -fno-omit-frame-pointer -o deep deep.c
    "$EVALPROF" perf -o deepout -- ./deep 400 >deep.txt 2>&1 || no "evalprof perf on deep recursion failed"
    grep -q "hit kernel.perf_event_max_stack=$max" deep.txt || { cat deep.txt; no "cut stacks not reported"; }
    grep -q 'sysctl -w kernel.perf_event_max_stack=' deep.txt || no "no fix suggested for cut stacks"
fi
# The cross-check against a trace recorded by the profiled command: the
# synthetic workload drives the recorder without an interpreter, so perf
# finds no eval function while the trace spends most time inside frames,
# and the disagreement must be flagged.
if [ -n "${SYNTHETIC:-}" ] && [ -x "$SYNTHETIC" ]; then
    "$EVALPROF" perf --trace syn.evp -o synout -- "$SYNTHETIC" -o syn.evp -n 400000 >xc.txt 2>xc.err ||
        { cat xc.err; no "evalprof perf --trace failed"; }
    grep -q '^cross-check: perf samples against the trace' xc.txt || no "no cross-check table"
    grep -q 'inside the eval function .*<- .* points apart' xc.txt ||
        { cat xc.txt; no "eval-function disagreement not flagged"; }
    grep -q 'same instant: ' xc.txt || { cat xc.txt; no "perf samples were not located in the trace's timeline (clock alignment)"; }
fi
# perf missing: one line, non-zero exit
if "$EVALPROF" perf --perf /nonexistent/perf -o x -- true >miss.txt 2>miss.err; then
    no "a missing perf did not fail"
fi
[ "$(wc -l <miss.err)" = 1 ] || { cat miss.err; no "missing perf: not one line of error"; }
[ $fail = 0 ] && echo "ok: profiled $py: $(grep "^evalprof perf:" run.txt)"
exit $fail
