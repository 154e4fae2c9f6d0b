#!/bin/sh
# Lines (EVALPROF_LINES=1, -X evalprof_lines, evalprof record --lines):
# ops are recorded as op at, with their code unit, and each function's
# line table goes to the trace's metadata as the stock producer writes it.
# The known hot line of progs/hotline.py (the loop body of work(), line 8)
# is the hottest line of work in summary --lines; work's table equals the stock
# encoding of work.__code__.co_lines(); without lines, summary --lines is
# refused in one line.
#
#   lines.sh VERSION BUILD_DIR CHECK_TRACE
. "$(dirname "$0")/lib.sh"
EVALPROF_BIN=$BUILD/evalprof
prog=$HERE/../modeb/progs/hotline.py
HOT=8
# 300,000 iterations: line 8 then takes some 70 ms traced, so that one
# preemption of a loaded machine (10 ms, charged to the op it lands in)
# cannot make line 7's FOR_ITER the hotter (at 30,000 it did: 10.4 ms
# against 7.3)
N=300000

# hot_row TRACE: the hottest line of work() in summary --lines is line 8
# (rows are hottest first; another function's line may be hotter on a
# loaded machine: a preempted op's time is its own).
hot_row() {
    if ! "$EVALPROF_BIN" summary --lines "$1" > "$T/lines.out" 2>&1; then
        fail "$WHAT: summary --lines failed: $(cat "$T/lines.out")"
        return
    fi
    row=$(awk '$2 == "work" && $1 ~ /hotline\.py:[0-9]+$/ { print; exit }' "$T/lines.out")
    set -- $row
    count=$(echo "$5" | tr -d ,)
    case "$1" in
    *hotline.py:$HOT)
        [ "${count:-0}" -ge 300000 ] && ok "$WHAT: hotline.py:$HOT is the hottest line of work, $5 ops" ||
            fail "$WHAT: first row of work '$row'" ;;
    *) fail "$WHAT: the hottest line of work is '$row', not hotline.py:$HOT"; cat "$T/lines.out" ;;
    esac
}

plain=$("$PY" "$prog" $N)
WHAT="evalprof record --lines"
out=$("$EVALPROF_BIN" record --lines -q -o "$T/r.evp" -- "$PY" "$prog" $N 2>"$T/r.err")
[ "$out" = "$plain" ] && [ ! -s "$T/r.err" ] && ok "$WHAT: the program's output, nothing on stderr (-q)" ||
    fail "$WHAT: output '$out', stderr $(cat "$T/r.err")"
"$CHECK" "$T/r.evp" > "$T/r.out" || { grep FAIL "$T/r.out"; fail "$WHAT: trace does not check"; }
hot_row "$T/r.evp"

WHAT="-X evalprof_lines"
"$PY" -X evalprof="$T/x.evp" -X evalprof_lines "$prog" $N > /dev/null 2>&1
hot_row "$T/x.evp"
"$PY" -X evalprof="$T/e.evp" -X evalprof_events=frames,op -c 'import sys; print(sys._evalprof["lines"])' > "$T/e.out" 2>/dev/null
EVALPROF="$T/e.evp" EVALPROF_LINES=1 "$PY" -c 'import sys; print(sys._evalprof["lines"])' >> "$T/e.out" 2>/dev/null
[ "$(tr '\n' ' ' < "$T/e.out")" = "False True " ] && ok "sys._evalprof['lines'] says whether lines are recorded" ||
    fail "sys._evalprof['lines']: $(cat "$T/e.out")"

# work's line table: the stock encoding (python/_tracer/registry.c) of
# co_lines(), computed here in Python by the same interpreter.
want=$("$PY" - "$prog" <<'PYEOF'
import sys
src = open(sys.argv[1]).read()
ns = {}
exec(compile(src.replace("\nmain()\n", "\n"), sys.argv[1], "exec"), ns)
out, last = [], -1
for start, end, line in ns["work"].__code__.co_lines():
    line = 0 if line is None else line
    if line != last:
        out.append("%d:%d" % (start // 2, line))
        last = line
print(",".join(out))
PYEOF
)
"$EVALPROF_BIN" info "$T/x.evp" | awk '$1 ~ /^lines\.[0-9]+$/ { print $2 }' > "$T/tables"
[ -n "$want" ] && grep -qx "$want" "$T/tables" && ok "work's line table as the stock producer writes it ($want)" ||
    fail "no lines.ID of work equal to '$want' among $(wc -l < "$T/tables") tables"

# The same instructions with and without lines (fused and skipped ones
# carry their own unit): op counts per function are equal.
EVALPROF="$T/w0.evp" EVALPROF_EVENTS=frames,op EVALPROF_QUIET=1 "$PY" "$PROGRAMS/workload.py" > /dev/null
EVALPROF="$T/w1.evp" EVALPROF_EVENTS=frames,op EVALPROF_LINES=1 EVALPROF_QUIET=1 "$PY" "$PROGRAMS/workload.py" > /dev/null
"$CHECK" "$T/w0.evp" --func loop --func add --func main > "$T/w0.out" || fail "workload trace without lines does not check"
"$CHECK" "$T/w1.evp" --func loop --func add --func main > "$T/w1.out" || fail "workload trace with lines does not check"
for f in loop add main; do
    a=$(value "ops $f" "$T/w0.out"); b=$(value "ops $f" "$T/w1.out")
    [ "${a:-0}" -gt 0 ] && [ "$a" = "$b" ] && ok "ops of $f: $a without lines, $b with" ||
        fail "ops of $f: $a without lines, $b with"
done

EVALPROF="$T/n.evp" "$PY" "$prog" > /dev/null 2>&1
"$EVALPROF_BIN" summary --lines "$T/n.evp" > /dev/null 2>"$T/n.err"; rc=$?
[ "$rc" != 0 ] && [ "$(wc -l < "$T/n.err")" = 1 ] && grep -q "record it with --lines" "$T/n.err" &&
    ok "without lines: summary --lines refused ($(cat "$T/n.err"))" || fail "without lines: rc=$rc $(cat "$T/n.err")"
finish
