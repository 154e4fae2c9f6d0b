#!/bin/sh
# Suite bench-smoke: bench/fidelity/run.py runs its three workloads small
# on one interpreter and prints, for each, a row of figures for every way
# of measuring and the rows that say what was not measured.  Asserts the
# structure only, nothing about the figures.
#
#   fidelity-smoke.sh SOURCE-DIR BUILD-DIR   (PYTHON: the interpreter)
set -u
SRC=$1
BUILD=$2
out=$(BENCH_REPS=1 BENCH_FIDELITY_SECONDS=0.3 BENCH_PYTHONS="$PYTHON" \
    python3 "$SRC/bench/fidelity/run.py" "$BUILD" 2>&1) || {
    echo "FAIL: bench/fidelity/run.py exited non-zero:"
    echo "$out"
    exit 1
}
echo "$out"
fail=0
num='[0-9]+\.[0-9]+'
figs="^    (evalprof sampled|evalprof exact|evalprof exact raw) +$num +$num +$num% +$num%"
for section in functions opcodes phases; do
    body=$(echo "$out" | awk -v s="  $section " \
        'index($0, s) == 1 {on = 1; print; next}
         /^  [a-z]/ {on = 0} on')
    [ -n "$body" ] || { echo "FAIL: no $section section"; fail=1; continue; }
    for kind in "evalprof sampled" "evalprof exact" "evalprof exact raw"; do
        n=$(echo "$body" | grep -E "$figs" | grep -c "^    $kind  ")
        [ "$n" -eq 1 ] || { echo "FAIL: $section: $n rows of figures for $kind"; fail=1; }
    done
    echo "$body" | grep -qE '^    target: sampled within 2 points' ||
        { echo "FAIL: $section: no target line"; fail=1; }
    [ "$section" = functions ] && continue
    # the differential workloads' truth (untraced runs of the same
    # rounds), and the sampled run's own rounds
    echo "$body" | grep -qE "^  $section \([0-9]+ rounds; .*\(the median of [0-9]+ untraced runs of these rounds, up to $num points apart\)" ||
        { echo "FAIL: $section: no truth of the rounds in the heading"; fail=1; }
    echo "$body" | grep -qE "^    in-run truth +$num +$num +$num% +$num% +[A-Za-z_ ]+ [0-9.-]+%, .*; of whole loops $num: " ||
        { echo "FAIL: $section: no in-run truth row"; fail=1; }
    echo "$body" | grep -qE "^    of which: sampled's attribution, against its run's own rounds, $num points .* those rounds against the truth $num points .* up to $num apart\)" ||
        { echo "FAIL: $section: no line of which"; fail=1; }
done
# the shares each row names
echo "$out" | grep -E "$figs" | grep -qE 'BINARY_OP [0-9.]+%, BINARY_SUBSCR [0-9.]+%, rest [0-9.-]+%' ||
    { echo "FAIL: no opcode shares"; fail=1; }
echo "$out" | grep -E "$figs" | grep -qE 'exception [0-9.-]+%, C call [0-9.-]+%, rest [0-9.-]+%' ||
    { echo "FAIL: no phase shares"; fail=1; }
echo "$out" | grep -qE '^  phases \([0-9]+ rounds; .*exception [0-9.-]+%, C call [0-9.-]+%' ||
    { echo "FAIL: no phase truth"; fail=1; }
echo "$out" | grep -qE '^    cProfile +[0-9.]+ ' ||
    { echo "FAIL: no cProfile row of figures"; fail=1; }
# VizTracer: figures when BENCH_VIZTRACER_SRC and BENCH_OBJPRINT_SRC
# name its sources, else a row that says how to give them
if [ -n "${BENCH_VIZTRACER_SRC:-}" ]; then
    viz='^    VizTracer +[0-9.]+ +[0-9.]+ +[0-9.]+% +[0-9.]+% +[0-9]+ of the [0-9]+ rounds'
else
    viz='^    VizTracer +not measured: .*BENCH_VIZTRACER_SRC'
fi
echo "$out" | grep -qE "$viz" ||
    { echo "FAIL: no VizTracer row ($viz)"; fail=1; }
echo "$out" | grep -qE '^    perf --ops +' ||
    { echo "FAIL: no perf --ops row"; fail=1; }
exit $fail
