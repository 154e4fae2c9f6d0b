#!/bin/sh
# The profile-guided build of the instrumented interpreter (cpython/build.sh,
# cpython/pgo-train.py).  The interpreter under test was configured with
# --enable-optimizations; its training ran CPython's task untraced and
# sampled (both runs' lines in its make log, and no complaint that the
# sampled run wrote no trace); its eval function was compiled again with
# the counts (-fprofile-use, and with GCC -fprofile-partial-training, for
# the traced copy no run trains).  A build made with --no-pgo is said so
# and those checks left out.  Then pgo-train.py alone, on short tasks: both
# runs run and it exits 0, each with one hash seed, one random seed and
# (where allowed) no address-space randomization, a task that fails does
# not fail the training,
# and under an interpreter that writes no trace (a stock one) it says so
# and exits 1.
#
#   pgo.sh VERSION BUILD_DIR CHECK_TRACE
. "$(dirname "$0")/lib.sh"
TRAIN=$HERE/../../../cpython/pgo-train.py
DIR=$BUILD/cpython/$VER/evalprof
LOG=$BUILD/cpython/$VER/evalprof-make.log
stamp=$(cat "$BUILD/cpython/$VER/evalprof.stamp" 2>/dev/null)

case "$stamp" in
*" pgo=no") pgo=no; echo "note: $PY was built with --no-pgo: its profile-guided build is not checked" ;;
*" pgo=yes:"*) pgo=yes ;;
*) pgo=; fail "the build's stamp names no pgo= setting: '$stamp'" ;;
esac
if [ "$pgo" = yes ]; then
    if grep -q -- '--enable-optimizations' "$DIR/.evalprof-configure"; then
        ok "configured with --enable-optimizations"
    else
        fail "pgo=yes but $DIR was configured with: $(cat "$DIR/.evalprof-configure")"
    fi
    for run in untraced sampled; do
        line=$(grep "^evalprof-pgo: $run training: exit" "$LOG" | tail -n 1)
        if [ -n "$line" ]; then ok "$line"; else fail "no $run training in $LOG"; fi
    done
    if grep -q 'sampled training wrote no trace' "$LOG"; then
        fail "the sampled training wrote no trace ($LOG)"
    fi
    use=$(grep -e '-o Python/ceval\.o' "$LOG" | grep -e '-fprofile-use' | tail -n 1)
    if [ -z "$use" ]; then
        fail "Python/ceval.o was not compiled with -fprofile-use ($LOG)"
    elif $(sed -n 's/^CC=[[:space:]]*//p' "$DIR/Makefile" | head -n 1) --version 2>/dev/null |
            grep -q 'Free Software Foundation' &&
         ! echo "$use" | grep -q -e '-fprofile-partial-training'; then
        fail "GCC compiled Python/ceval.o with -fprofile-use but not -fprofile-partial-training: the traced copy, which no run trains, would be compiled for size"
    else
        ok "Python/ceval.o compiled with the counts"
    fi
fi

# run NAME PYTHON TASK: pgo-train.py under PYTHON on TASK; output in
# $T/NAME.out, exit status in rc
run() {
    EVALPROF_PGO_TASK=$3 "$2" "$TRAIN" > "$T/$1.out" 2>&1
    rc=$?
}
run short "$PY" "-c 'sum(range(200000))'"
if [ "$rc" = 0 ] && grep -q '^evalprof-pgo: untraced training: exit 0' "$T/short.out" &&
   grep -q '^evalprof-pgo: sampled training: exit 0' "$T/short.out"; then
    ok "a short task: both runs, exit 0"
else
    fail "a short task: exit $rc: $(cat "$T/short.out")"
fi
# Both runs take one string hash seed, one random seed and, where setarch
# -R is allowed, no address-space randomization: a run prints them last
run seeds "$PY" "-c 'import os; print(\"seeds\", os.environ.get(\"PYTHONHASHSEED\"), os.environ.get(\"SOURCE_DATE_EPOCH\"), open(\"/proc/self/personality\").read().strip())'"
norand=$(setarch "$(uname -m)" -R cat /proc/self/personality 2>/dev/null)
[ -n "$norand" ] || norand=$(cat /proc/self/personality)
if [ "$rc" = 0 ] && grep -q "^evalprof-pgo: untraced training: exit 0 (seeds 0 1 $norand)\$" "$T/seeds.out" &&
   grep -q "^evalprof-pgo: sampled training: exit 0 (seeds 0 1 $norand)\$" "$T/seeds.out"; then
    ok "the training's seeds: PYTHONHASHSEED=0, SOURCE_DATE_EPOCH=1, personality $norand"
else
    fail "the training's seeds (want 0 1 $norand): exit $rc: $(cat "$T/seeds.out")"
fi
run failing "$PY" "-c 'raise SystemExit(3)'"
if [ "$rc" = 0 ] && grep -q '^evalprof-pgo: sampled training: exit 3' "$T/failing.out"; then
    ok "a failing task is reported and does not fail the training"
else
    fail "a failing task: exit $rc: $(cat "$T/failing.out")"
fi
stock=$(command -v python3)
run stock "$stock" "-c pass"
if [ "$rc" = 1 ] && grep -q '^evalprof-pgo: the sampled training wrote no trace' "$T/stock.out"; then
    ok "an interpreter that writes no trace: exit 1, said"
else
    fail "under $stock (no evalprof): exit $rc (want 1): $(cat "$T/stock.out")"
fi
finish
