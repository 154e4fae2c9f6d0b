#!/bin/sh
# `evalprof perf --ops` for real (suite 'perf'): opcode shares from perf
# samples and DWARF line tables alone.  A loop of integer multiplications
# must put a BINARY_OP handler among the top three opcodes (the
# interpreter: $OPS_PYTHON, else the instrumented 3.13 under the source
# tree's build/cpython, else python3.13 or python3.11 on PATH); a program
# whose eval function has no line tables must get one line and a
# non-zero exit.  Skips where perf cannot record or --ops is not built.
set -u
: "${EVALPROF:?}"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/perf-probe.sh"
if "$EVALPROF" perf --ops -o "$tmp/probe" -- true 2>&1 | grep -q 'not built in'; then
    echo "SKIP: evalprof perf --ops is not built (no libdw)"
    exit 77
fi
fail=0
no() { echo "FAIL: $*"; fail=1; }
cd "$tmp" || exit 1

# No sample in the eval function: one line, non-zero.
if "$EVALPROF" perf --ops -o none -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' >none.txt 2>none.err; then
    no "--ops on a command without an eval function exited 0"
fi
[ "$(wc -l <none.err)" -eq 1 ] && grep -q 'no sample fell in _PyEval_EvalFrameDefault' none.err ||
    { cat none.err; no "--ops without an eval function: not one clear line"; }

# An eval function built without -g: one line naming the binary, non-zero.
cc=$(command -v cc || command -v gcc || true)
if [ -n "$cc" ]; then
    cat >nolines.c <<'C'
static volatile unsigned long sink;
void _PyEval_EvalFrameDefault(void);
void _PyEval_EvalFrameDefault(void)
{
    for (unsigned long i = 0; i < 400000000UL; i++)
        sink += i;
}
int main(void) { _PyEval_EvalFrameDefault(); return 0; }
C
    "$cc" -O1 -g0 -o nolines nolines.c || no "cannot compile the fixture"
    if "$EVALPROF" perf --ops -o nl -- ./nolines >nl.txt 2>nl.err; then
        no "--ops on a binary without line tables exited 0"
    fi
    [ "$(wc -l <nl.err)" -eq 1 ] && grep -q 'nolines: no DWARF line tables' nl.err ||
        { cat nl.err; no "no line tables: not one clear line"; }
    [ -s nl/perf.folded ] || no "no line tables: the flame graph outputs were lost"
fi

# The interpreter to profile: one with line tables.
py=${OPS_PYTHON:-}
if [ -z "$py" ] && [ -n "${SOURCE_ROOT:-}" ] &&
    [ -x "$SOURCE_ROOT/build/cpython/3.13/evalprof/python" ]; then
    py=$SOURCE_ROOT/build/cpython/3.13/evalprof/python
fi
# (sys.executable: the interpreter itself, not a wrapper such as pyenv's)
for v in 3.13 3.11; do
    [ -z "$py" ] || break
    py=$("python$v" -c 'import sys; print(sys.executable)' 2>/dev/null || true)
done
if [ -z "$py" ]; then
    echo "SKIP: no CPython 3.11+ with line tables to profile (set OPS_PYTHON)"
    exit $([ $fail = 0 ] && echo 77 || echo 1)
fi
cat >mul.py <<'PY'
def main():
    x = 12345
    y = 0
    for i in range(3000000):
        y = x * x * x * x * x
    return y

main()
PY
if ! "$EVALPROF" perf --ops -n 5 -o ops -- "$py" mul.py >ops.txt 2>ops.err; then
    cat ops.err
    if grep -q 'no DWARF line tables' ops.err; then
        echo "SKIP: $py has no line tables (set OPS_PYTHON)"
        exit $([ $fail = 0 ] && echo 77 || echo 1)
    fi
    no "evalprof perf --ops exited non-zero"
fi
grep -q '^eval loop: .* in _PyEval_EvalFrameDefault' ops.txt || no "no eval-loop header"
grep -q '^evalprof perf: .*, 4999 Hz' ops.txt || no "--ops does not sample at 4999 Hz by default"
grep -q '^hottest eval-loop lines' ops.txt || no "no hottest-lines table"
grep -q -E '^  (ceval\.c|generated_cases\.c\.h):[0-9]+ ' ops.txt ||
    no "hottest lines are not in the eval loop's source"
grep -q '^note: sampling estimates' ops.txt || no "no note that the shares are estimates"
if grep -q 'source not on disk' ops.txt; then
    echo "note: $py's source is not on disk: opcodes not checked"
else
    awk '/^opcode shares/ { on = 1; getline; next }
         on && /^$/ { exit }
         on && n < 3 { n++; if ($1 ~ /^BINARY_OP/) found = 1 }
         END { exit !found }' ops.txt ||
        { cat ops.txt; no "BINARY_OP is not among the top three opcodes"; }
    # every share row: samples, share, interval, share of all
    awk '/^opcode shares/ { on = 1; getline; next }
         on && /^$/ { exit }
         on && !/^  \(/ && $NF !~ /%$/ { bad = 1 }
         on && !/^  \(/ && $(NF-1) !~ /^[0-9.]+-[0-9.]+$/ { bad = 1 }
         END { exit bad }' ops.txt || no "malformed opcode share rows"
fi
exit $fail
