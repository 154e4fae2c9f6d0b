#!/bin/sh
# bench/cpython/forked.py, the instrumented interpreter's sampled mode
# against the same interpreter untraced in two processes of one start
# (sampled.py --forked): the parent samples into its trace and its
# forked child records nothing and writes no trace of its own; under
# perf (where it can record) the child's chunks run in the untraced copy
# of the eval function and the parent's in the sampled copy, which is
# what the ratio claims to compare; the parent's threads but its main
# one may use every CPU the test may (a thread pinned with the main one
# takes its CPU from it); sampled.py --forked prints its rows at
# 1 kHz and 10 Hz, and the sampler thread's at 1 kHz, each over two
# forks and each but off against off, for the process and for its main
# thread alone.
# Asserts nothing about timing.
#
#   forked.sh VERSION BUILD_DIR CHECK_TRACE
. "$(dirname "$0")/lib.sh"
SRC=$(cd "$HERE/../../.." && pwd)
unset EVALPROF_MODE EVALPROF_COUNTS EVALPROF_SAMPLE_RATE EVALPROF_SAMPLE_CLOCK \
    EVALPROF_SAMPLE_TIMER EVP_BENCH_CPU EVP_BENCH_APART
export EVALPROF_QUIET=1 PYTHONHASHSEED=0
FORKED=$SRC/bench/cpython/forked.py
cpu=$(python3 -c 'import os; print(sorted(os.sched_getaffinity(0))[-1])')

# --- the pairs, the parent's trace, no child's trace ----------------------
EVALPROF="$T/f.evp" EVALPROF_MODE=sample "$PY" "$FORKED" callheavy 0.05 3 "$cpu" \
    > "$T/f.json" 2> "$T/f.err" || fail "forked.py exited non-zero: $(tail -n 1 "$T/f.err")"
python3 - "$T/f.json" <<'PYEOF' && ok "3 pairs of chunks timed, the parent sampled by the instrumented interpreter" || fail "forked.py's figures: $(cat "$T/f.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["producer"] == "instrumented", d
assert len(d["child"]) == 3 and len(d["parent"]) == 3, d
assert all(isinstance(t, int) and t > 0 for t in d["child"] + d["parent"]), d
# the main thread's own CPU beside the process's: the untraced child has
# no other thread, the parent's recorder threads are in its process time
assert len(d["child_thread"]) == 3 and len(d["parent_thread"]) == 3, d
for proc, thr in zip(d["child"] + d["parent"],
                     d["child_thread"] + d["parent_thread"]):
    assert isinstance(thr, int) and 0 < thr <= proc + 2000000, d
PYEOF
python3 - "$T/f.json" "$cpu" <<'PYEOF' && ok "the parent's main thread on CPU $cpu, its other threads on every CPU" || fail "the parent's threads' CPUs: $(cat "$T/f.json")"
import json, os, sys
d = json.load(open(sys.argv[1]))
every = sorted(os.sched_getaffinity(0))
t = d["threads"]
print(t)
assert t["main"] == [int(sys.argv[2])], t
others = [v for k, v in t.items() if k != "main"]
assert others, t  # the recorder's writer at least
assert all(v == every for v in others), (t, every)
PYEOF
# EVP_BENCH_APART=1: the other threads on every CPU but the main one's
# (where the test may use another), the sampler thread's among them
if [ "$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')" -ge 2 ]; then
    EVALPROF="$T/a.evp" EVALPROF_MODE=sample EVALPROF_SAMPLE_TIMER=thread EVP_BENCH_APART=1 \
        "$PY" "$FORKED" callheavy 0.05 2 "$cpu" > "$T/a.json" 2> "$T/a.err" ||
        fail "forked.py with EVP_BENCH_APART=1 exited non-zero: $(tail -n 1 "$T/a.err")"
    python3 - "$T/a.json" "$cpu" <<'PYEOF' && ok "EVP_BENCH_APART=1: the parent's other threads off CPU $cpu" || fail "EVP_BENCH_APART: $(cat "$T/a.json")"
import json, os, sys
d = json.load(open(sys.argv[1]))
cpu = int(sys.argv[2])
want = sorted(set(os.sched_getaffinity(0)) - {cpu})
t = d["threads"]
others = [v for k, v in t.items() if k != "main"]
assert t["main"] == [cpu] and len(others) >= 2, t  # the writer, the sampler
assert all(v == want for v in others), (t, want)
PYEOF
else
    echo "SKIP (part): one CPU: EVP_BENCH_APART has no other CPU to give"
fi
n=$("$BUILD/evalprof" info "$T/f.evp" 2>&1 | awk '$1 == "sampled:" { gsub(",", "", $2); print $2; exit }')
[ "${n:-0}" -ge 20 ] && ok "the parent's trace holds $n samples" ||
    fail "the parent's trace: '${n:-no}' samples"
ls "$T"/f.evp.* > /dev/null 2>&1 && fail "the child wrote a trace: $(ls "$T"/f.evp.*)" ||
    ok "the child wrote no trace"

# --- which copy of the eval function each process ran ---------------------
perf=$(command -v perf || true)
if [ -z "$perf" ] || ! "$perf" record -q -e cpu-clock -o "$T/probe.data" -- true > "$T/probe.err" 2>&1; then
    echo "SKIP (part): perf cannot record here: the copies each process ran are not checked"
else
    if ! EVALPROF="$T/p.evp" EVALPROF_MODE=sample "$perf" record -q -e cpu-clock -o "$T/p.data" -- \
        "$PY" "$FORKED" callheavy 0.1 3 "$cpu" > "$T/p.json" 2> "$T/p.err"; then
        fail "forked.py under perf: $(tail -n 1 "$T/p.err")"
    else
    child=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["child_pid"])' "$T/p.json")
    "$perf" report -i "$T/p.data" --stdio --sort pid,sym 2> /dev/null > "$T/p.rep"
    # the share of each process's samples in each copy
    python3 - "$T/p.rep" "$child" <<'PYEOF' && ok "the child ran the untraced copy, the parent the sampled one" || fail "copies under perf: $(grep -E 'EvalFrameDefault|eval_frame_sampled' "$T/p.rep" | head -n 6)"
import re, sys
child = sys.argv[2]
share = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d.]+)%\s+(\d+):\S+\s+\[\.\]\s+(\S+)", line)
    if m:
        who = "child" if m.group(2) == child else "parent"
        share[who, m.group(3)] = share.get((who, m.group(3)), 0) + float(m.group(1))
u, s = "_PyEval_EvalFrameDefault", "evp_eval_frame_sampled"
print({k: v for k, v in share.items() if k[1] in (u, s)})
assert share.get(("child", u), 0) > 5 * max(share.get(("child", s), 0), 0.1)
assert share.get(("parent", s), 0) > 5 * max(share.get(("parent", u), 0), 0.1)
PYEOF
    fi
fi

# --- sampled.py --forked's rows --------------------------------------------
# each row is the mean of several forks' medians (one fork's offset lasts
# the whole fork), with Student's t interval over the forks
python3 - "$SRC/bench/cpython" <<'PYEOF' && ok "sampled.py: a row's interval is Student's t over its forks" || fail "sampled.py's forks_summary"
import math, sys
sys.path.insert(0, sys.argv[1])
from sampled import forks_summary
m, hw = forks_summary([1.00, 1.02, 0.98])
assert abs(m - 1.0) < 1e-12, m
assert abs(hw - 4.303 * 0.02 / math.sqrt(3)) < 1e-9, hw
m, hw = forks_summary([1.05])
assert m == 1.05 and math.isnan(hw), (m, hw)
from sampled import against_off
r, hw = against_off((1.05, 0.021), (0.98, 0.0098))
assert abs(r - 1.05 / 0.98) < 1e-12, r
assert abs(hw - r * math.hypot(0.02, 0.01)) < 1e-12, hw
PYEOF
# --instructions reads callgrind_annotate's Ir and I1mr columns: totals,
# and the eval function's copies (hot, cold, recursion), nothing else
python3 - "$SRC/bench/cpython" <<'PYEOF' && ok "sampled.py --instructions: instructions and I1 misses, whole and in the eval function" || fail "sampled.py's annotated"
import sys
sys.path.insert(0, sys.argv[1])
from sampled import annotated
ann = """\
Ir                  I1mr
--------------------------------------------------------------------------------
1,033,019,991 (100.0%) 203,260 (100.0%)  PROGRAM TOTALS
--------------------------------------------------------------------------------
Ir                 I1mr             file:function
--------------------------------------------------------------------------------
422,152,948 (40.9%)  2,209 ( 1.09%)  /b/Python/evalprof_sampled.h:evp_eval_frame_sampled [/b/python]
1,000 ( 0.00%)    11 ( 0.01%)  /b/Python/evalprof_sampled.h:evp_eval_frame_sampled.cold [/b/python]
500 ( 0.00%)     2 ( 0.00%)  /b/Python/ceval.c:_PyEval_EvalFrameDefault'2 [/b/python]
2,879,210 ( 0.28%)   180 ( 0.09%)  /b/Objects/dictobject.c:unicodekeys_lookup_unicode [/b/python]
77 ( 0.00%)     1 ( 0.00%)  /b/Python/evalprof.c:evp_eval_frame_sampled_helper [/b/python]
"""
got = annotated(ann)
assert got == (1033019991, 422154448, 203260, 2222), got
PYEOF
python3 "$SRC/bench/cpython/sampled.py" "$BUILD" --forked --forks 2 --pairs 2 --scale 0.02 \
    --rates 1000 --versions "$VER" --workloads callheavy > "$T/rows" 2>&1 ||
    fail "sampled.py --forked exited non-zero: $(tail -n 1 "$T/rows")"
grep -q "^CPython $VER (instrumented), callheavy at scale 0.02: the parent's chunks against its untraced forked child's, 2 forks of 2 pairs each on CPU $cpu, the configurations in turn" "$T/rows" ||
    fail "sampled.py --forked: no heading: $(head -n 1 "$T/rows")"
for row in off sample@1000 sample@10 counts@1000 thread@1000; do
    python3 - "$T/rows" "$row" <<'PYEOF' && ok "sampled.py --forked: row $row, its mean within its forks' range" || fail "sampled.py --forked: row $row: $(cat "$T/rows")"
import re, sys
rows = [l for l in open(sys.argv[1]) if l.startswith("  %s " % sys.argv[2])]
assert len(rows) == 1, rows
m = re.match(r"  \S+ +(\d+\.\d{3})x ±(\d+\.\d{3})  forks (\d+\.\d{3}) - (\d+\.\d{3})"
             r"   child +[\d.]+ ms  parent +[\d.]+ ms"
             r"(   against off +(\d+\.\d{3})x ±(\d+\.\d{3})"
             r"   main thread +(\d+\.\d{3})x ±(\d+\.\d{3}|  -  ))?$", rows[0])
assert m, rows[0]
mean, hw, lo, hi = map(float, m.groups()[:4])
assert lo - 0.0005 <= mean <= hi + 0.0005 and lo <= hi, rows[0]
# every row but off itself is also given against off
assert (m.group(5) is None) == (sys.argv[2] == "off"), rows[0]
if m.group(5):
    off = [l for l in open(sys.argv[1]) if l.startswith("  off ")][0]
    o = float(re.match(r"  off +(\d+\.\d{3})x", off).group(1))
    # both means are printed rounded to 0.0005, and so is their ratio:
    # the printed ratio lies within what the rounded means allow
    r = float(m.group(6))
    lo_r = (mean - 0.0005) / (o + 0.0005) - 0.0005
    hi_r = (mean + 0.0005) / (o - 0.0005) + 0.0005
    assert lo_r - 1e-9 <= r <= hi_r + 1e-9, (rows[0], off)
PYEOF
done
finish
