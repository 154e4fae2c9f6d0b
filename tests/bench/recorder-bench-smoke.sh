#!/bin/sh
# Suite bench-smoke: recorder_bench's bare baseline reads the clock the
# recorder's session used, from the first round on (-r 1), and its label
# names that clock.  Asserts nothing about timing.
#
#   recorder-bench-smoke.sh BUILD/bench/recorder_bench
set -u
BENCH=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0

# check EXPECTED [ENV...]: one round, the header's clock, the bare label's
# and the ratio's all name EXPECTED (TSC or CLOCK_MONOTONIC; "" = either).
check() {
    want=$1
    shift
    if ! env "$@" "$BENCH" -r 1 -n 100000 -d "$TMP" >"$TMP/out" 2>&1; then
        echo "FAIL: recorder_bench $* exited non-zero:"
        cat "$TMP/out"
        fail=1
        return
    fi
    rec=$(sed -n '1s/.*; clock: \([A-Z_]*\))$/\1/p' "$TMP/out")
    bare=$(sed -n 's/^  bare \([A-Z_]*\) read loop (baseline).*/\1/p' "$TMP/out")
    ratio=$(sed -n 's/.*x bare \([A-Z_]*\) [0-9.]* ns (target.*/\1/p' "$TMP/out")
    if [ -z "$rec" ] || [ "$rec" != "$bare" ] || [ "$rec" != "$ratio" ]; then
        echo "FAIL ($*): recorder clock '$rec', bare loop '$bare', ratio '$ratio':"
        cat "$TMP/out"
        fail=1
    elif [ -n "$want" ] && [ "$rec" != "$want" ]; then
        echo "FAIL ($*): clock $rec, expected $want"
        fail=1
    else
        echo "ok ($*): recorder and bare loop both read $rec"
    fi
}

# An invariant TSC (the recorder's default clock where the CPU has one).
want=""
case $(uname -m) in
x86_64 | i?86)
    if grep -qw constant_tsc /proc/cpuinfo && grep -qw nonstop_tsc /proc/cpuinfo; then
        want=TSC
    fi
    ;;
esac
check "$want" EVALPROF_CLOCK=
check CLOCK_MONOTONIC EVALPROF_CLOCK=monotonic
exit $fail
