#!/bin/sh
# Calls are counted as cProfile counts them (docs/EVENTS.md, "Calls"):
# for every function of programs/calls.py (generators driven inline and
# from C, yield from, a closed generator, a coroutine chain under
# asyncio.run, an async generator), the calls of `evalprof summary
# --funcs` and the ncalls of `evalprof export --format pstats` equal
# cProfile's ncalls for the same program run by the same interpreter.
# Three generators of g(2) are 9 calls (a start, a resume per value), not
# 12: the call that only creates a generator is not one.
#
#   calls.sh VERSION BUILD_DIR CHECK_TRACE
. "$(dirname "$0")/lib.sh"
EVALPROF_BIN=$BUILD/evalprof
prog=$PROGRAMS/calls.py

EVALPROF="$T/c.evp" "$PY" "$prog" > "$T/traced.out" || fail "calls.py failed under tracing"
"$PY" "$prog" > "$T/plain.out"
cmp -s "$T/traced.out" "$T/plain.out" && ok "output as untraced" || fail "output differs from the untraced run"
"$CHECK" "$T/c.evp" --func g > "$T/c.out" || { grep FAIL "$T/c.out"; fail "trace does not check"; }
[ "$(value "calls g" "$T/c.out")" = 13 ] && ok "g: 9 calls of the three g(2), 4 of g(3) under relay (enter + resume)" ||
    fail "g: $(value "calls g" "$T/c.out") calls, want 13"
(cd "$T" && "$PY" -m cProfile -o "$T/c.prof" "$prog" > /dev/null) || fail "cProfile run failed"
"$EVALPROF_BIN" export --format pstats -o "$T/c.pstats" "$T/c.evp" || fail "export --format pstats failed"
"$EVALPROF_BIN" summary --funcs --wide "$T/c.evp" > "$T/summary.out" 2>&1 || fail "summary --funcs failed"

"$PY" - "$prog" "$T/c.prof" "$T/c.pstats" "$T/summary.out" > "$T/compare" <<'PYEOF'
import pstats, re, sys
prog, prof, ours, summary = sys.argv[1:]

def calls(path):
    return {(k[1], k[2].rsplit(".", 1)[-1]): v[1]
            for k, v in pstats.Stats(path).stats.items() if k[0] == prog}

want = calls(prof)
got = calls(ours)
# summary --funcs --wide: " NAME (FILE:LINE)   CALLS  inclusive ..." rows
row = re.compile(r"^ (\S+) \((.*):(\d+)\)\s+([\d,]+)\s")
rows = {}
for line in open(summary):
    m = row.match(line)
    if m and m.group(2) == prog:
        rows[int(m.group(3)), m.group(1).rsplit(".", 1)[-1]] = int(m.group(4).replace(",", ""))
bad = 0
for k in sorted(set(want) | set(got) | set(rows)):
    if not (want.get(k) == got.get(k) == rows.get(k)):
        print("differ %s:%s cProfile %s pstats %s summary %s" % (k + (want.get(k), got.get(k), rows.get(k))))
        bad += 1
print("compared %d %d" % (len(want), bad))
PYEOF
if grep -q '^compared [1-9][0-9]* 0$' "$T/compare" && [ "$(awk '/^compared/ { print $2 }' "$T/compare")" -ge 9 ]; then
    ok "calls per function = cProfile's ncalls ($(awk '/^compared/ { print $2 }' "$T/compare") functions)"
else
    cat "$T/compare"
    head -n 40 "$T/summary.out"
    fail "call counts differ from cProfile's"
fi
finish
