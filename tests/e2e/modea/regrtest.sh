#!/bin/sh
# A subset of CPython's own regression suite, from the same source tree as
# the instrumented interpreter, with tracing off, with every event traced,
# and sampled (EVALPROF_MODE=sample, with counts: signals, threads,
# generators and tracing under the sampler).  With tracing on, the trace
# of the test runner itself must be complete and balanced, and every child
# interpreter's trace readable; sampled, the runner's trace must hold
# samples of several threads and the counts.
#
#   regrtest.sh VERSION BUILD_DIR CHECK_TRACE off|on|sample
. "$(dirname "$0")/lib.sh"
MODE=$4
TESTS="test_grammar test_exceptions test_generators test_coroutines
       test_sys_settrace test_threading test_json test_re"

# Sequential and in one process (no -j): the runner's own trace then
# covers every test.
run() {
    # shellcheck disable=SC2086
    "$PY" -m test --timeout 600 $TESTS > "$T/regrtest.log" 2>&1
}
case "$MODE" in
off)
    run; rc=$?
    ;;
on)
    # The child interpreters the tests start inherit EVALPROF and write
    # rt.evp.<pid>; EVALPROF_QUIET keeps their notice of it off the stderr
    # that test_json and test_threading compare.
    EVALPROF="$T/rt.evp" EVALPROF_EVENTS=all EVALPROF_QUIET=1 run; rc=$?
    ;;
sample)
    EVALPROF="$T/rt.evp" EVALPROF_MODE=sample EVALPROF_COUNTS=1 EVALPROF_QUIET=1 run; rc=$?
    ;;
*)
    echo "usage: regrtest.sh VERSION BUILD_DIR CHECK_TRACE off|on|sample"; exit 2 ;;
esac
tail -n 6 "$T/regrtest.log"
if [ "$rc" = 0 ] && grep -q "Result: SUCCESS\|Tests result: SUCCESS" "$T/regrtest.log"; then
    ok "regrtest ($MODE): all $(echo $TESTS | wc -w) test files pass"
else
    grep -E "FAIL|ERROR|Error" "$T/regrtest.log" | head -n 20
    # The whole log, kept where the test logs are ($T goes at exit): which
    # test failed, and a crashed child's own output, are in it.
    keep="$BUILD/meson-logs/regrtest-$VER-$MODE.log"
    cp "$T/regrtest.log" "$keep" 2>/dev/null && echo "regrtest's log: $keep"
    fail "regrtest ($MODE) exit status $rc"
fi

if [ "$MODE" = on ]; then
    if "$CHECK" "$T/rt.evp" --kinds all > "$T/rt.out"; then
        ok "runner trace: $(value events "$T/rt.out") events, balanced, all 14 kinds, max depth $(value max_depth "$T/rt.out")"
    else
        grep FAIL "$T/rt.out"
        fail "the test runner's trace"
    fi
    n=0 bad=0
    for f in "$T"/rt.evp.*; do
        [ -e "$f" ] || continue
        n=$((n + 1))
        # Children may end abruptly (os._exit, crashes the tests provoke)
        # or leave daemon threads running: they only need to be readable.
        "$CHECK" "$f" > "$T/child.out"
        [ $? -le 1 ] || { bad=$((bad + 1)); echo "unreadable: $f"; }
    done
    [ "$bad" = 0 ] && ok "$n child interpreter traces readable" || fail "$bad of $n child traces unreadable"
    echo "trace sizes: $(du -sh "$T" | cut -f1) in $((n + 1)) files"
fi
if [ "$MODE" = sample ]; then
    "$BUILD/evalprof" info "$T/rt.evp" > "$T/rt.info" 2>&1
    samples=$(awk '$1 == "sampled:" { gsub(",", "", $2); print $2; exit }' "$T/rt.info")
    streams=$(sed -n '/^sampled streams:/,/^$/p' "$T/rt.info" | awk '$1 ~ /^[0-9]+$/' | wc -l)
    counts=$(grep -c '^  counts\.op\.' "$T/rt.info")
    warnings=$(awk '$1 == "warnings:" { print $2; exit }' "$T/rt.info")
    if [ "${samples:-0}" -ge 1000 ] && [ "$streams" -ge 5 ] && [ "$counts" -ge 50 ] &&
       [ "$warnings" = none ]; then
        ok "runner trace: $samples samples in $streams thread streams, $counts opcodes counted"
    else
        sed -n '/^warnings:/,/^$/p' "$T/rt.info" | head -n 5
        fail "sampled runner trace: ${samples:-no} samples, $streams streams, $counts counts, warnings ${warnings:-?}"
    fi
    n=0 bad=0
    for f in "$T"/rt.evp.*; do
        [ -e "$f" ] || continue
        n=$((n + 1))
        "$BUILD/evalprof" info "$f" > /dev/null 2>&1 || { bad=$((bad + 1)); echo "unreadable: $f"; }
    done
    [ "$bad" = 0 ] && ok "$n child interpreter traces readable" || fail "$bad of $n child traces unreadable"
fi
finish
