#!/bin/sh
# evalprof perf on a stock interpreter in exact mode (suite 'perf'): the
# cross-check of an exact trace recorded through the extension while perf
# samples the same run must agree within 5 points on the time inside the
# eval function (most of the run).  On a stripped interpreter (Debian's
# 3.11, 3.14 and 3.15: no symbol table) whose eval loop the compiler split
# off the exported entry (3.14, 3.15) evalprof perf names the loop from
# the unwind table and says so; the start-up breakdown says why it cannot
# divide initialisation; and --ops says in one line, exiting non-zero,
# that the interpreter is stripped, keeping the flame graph it made.
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
for i in range(40):
    total += fib(20)
print(total)
PY
cd "$tmp" || exit 1
exe=$("$PYTHON" -c 'import os; print(os.path.realpath("/proc/self/exe"))')
stripped=0 split=0
if ! readelf -SW "$exe" 2>/dev/null | grep -q ' \.symtab '; then
    stripped=1
    # the exported eval function is only the entry of a loop the compiler
    # split off (Debian's 3.14, 3.15), or the whole loop (3.11)
    size=$(readelf -W --dyn-syms "$exe" | awk '$8 == "_PyEval_EvalFrameDefault" { print $3 }')
    case "$size" in 0x*) size=$(printf '%d' "$size") ;; esac
    [ "${size:-0}" -lt 49152 ] && split=1
fi

PYTHONPATH=$EVALPROF_PYTHONPATH "$EVALPROF" perf --trace t.evp -o out -- \
    "$PYTHON" -m evalprof -q -o t.evp work.py >xc.txt 2>xc.err ||
    { cat xc.err; no "evalprof perf --trace of an exact run failed"; }
line=$(grep '^  inside the eval function' xc.txt)
p=$(echo "$line" | awk '{ sub("%", "", $5); print $5 }')
t=$(echo "$line" | awk '{ sub("%", "", $6); print $6 }')
awk -v t="${t:-0}" -v p="${p:-0}" 'BEGIN { d = p - t; exit !(t > 50 && d <= 5 && d >= -5) }' ||
    { cat xc.txt; no "inside the eval function: perf $p%, trace $t%"; }
if [ $split = 1 ]; then
    grep -q "^note: $exe is stripped: its eval loop has no name of its own; .* frames in functions of 48 KiB or more by its unwind table are shown as _PyEval_EvalFrameDefault.unnamed" xc.txt ||
        { cat xc.txt; no "the stripped interpreter's eval loop was not named, or not said so"; }
    grep -q '_PyEval_EvalFrameDefault.unnamed' out/perf.folded ||
        no "the folded stacks do not name the stripped eval loop"
fi
if [ $stripped = 1 ]; then
    "$EVALPROF" perf --startup -o su -- "$PYTHON" -c pass >su.txt 2>su.err ||
        { cat su.err; no "evalprof perf --startup failed"; }
    grep -q '^  pymain_init (initialisation) *[1-9]' su.txt ||
        { cat su.txt; no "--startup: no initialisation samples"; }
    grep -q 'lacks symbols for its static functions' su.txt ||
        { cat su.txt; no "--startup does not say the interpreter is stripped"; }

    if "$EVALPROF" perf --ops -o ops -- "$PYTHON" work.py >ops.txt 2>ops.err; then
        no "--ops on a stripped interpreter exited 0"
    fi
    [ "$(wc -l <ops.err)" -eq 1 ] &&
        grep -q "^evalprof: perf --ops: $exe is stripped: it has no symbol table and no DWARF line tables" ops.err ||
        { cat ops.err; no "--ops on a stripped interpreter: not one line saying it is stripped"; }
    [ -s ops/perf.folded ] || no "--ops on a stripped interpreter lost the flame graph's outputs"
fi
[ $fail = 0 ] && echo "ok: inside the eval function: perf $p%, exact trace $t%$([ $stripped = 1 ] && echo "; $exe is stripped$([ $split = 1 ] && echo ", its eval loop named"): start-up and --ops say so")"
exit $fail
