#!/bin/sh
# evalprof demo (`make demo`): trace the bundled pure-Python workload
# (examples/workload: a small interpreter, a JSON round trip, a recursive
# solver; several seconds of work uninstrumented) on python3, through the
# stock-interpreter extension (mode B), then show what evalprof makes of it.
#
#   sh tools/demo.sh [BUILD]        BUILD defaults to build
#
# Environment:
#   PYTHON       interpreter to trace (default: python3 on PATH)
#   DEMO_SCALE   workload size (default 1.0; 0.1 is a quick look)
#   DEMO_TREE    lines of the event tree to keep (default 200000: every
#                instruction is an event, so the whole tree of a run of
#                several seconds would be tens of gigabytes)
#
# Writes BUILD/demo/workload.evp (the trace) and BUILD/demo/tree.txt, and
# prints the summary.
set -eu
BUILD=${1:-build}
PYTHON=${PYTHON:-python3}
SCALE=${DEMO_SCALE:-1.0}
TREE_LINES=${DEMO_TREE:-200000}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

evalprof="$BUILD/evalprof"
if [ ! -x "$evalprof" ]; then
    echo "demo: $evalprof is missing: run make first" >&2
    exit 1
fi
out="$BUILD/demo"
mkdir -p "$out"
trace="$out/workload.evp"
tree="$out/tree.txt"
rm -f "$trace" "$trace".*

echo "== evalprof demo: tracing examples/workload (scale $SCALE) on" \
    "$($PYTHON -c 'import platform, sys; print("CPython", platform.python_version(), "(" + sys.executable + ")")')"
echo "== (every instruction is recorded: about a minute and 2 GB at scale" \
    "1; DEMO_SCALE=0.1 for a quick look)"
start=$(date +%s)
"$evalprof" record -o "$trace" -- "$PYTHON" examples/workload/main.py \
    --scale "$SCALE"
end=$(date +%s)
echo "== traced run took $((end - start)) s"
echo

"$evalprof" summary --ns "$trace"
echo

# The tree view streams: keep its first lines.
status=0
"$evalprof" tree --ns "$trace" 2>/dev/null | head -n "$TREE_LINES" > "$tree" ||
    status=$?
lines=$(wc -l < "$tree")
size=$(du -h "$trace" | cut -f1)
echo "== demo: the trace is $trace ($size)"
echo "== demo: the event tree (its first $lines lines) is in $tree"
echo "==       the whole tree: $evalprof tree $trace"
exit $status
