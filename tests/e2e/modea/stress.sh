#!/bin/sh
# Sample mode under stress in the instrumented interpreter: mode B's
# program (tests/e2e/modeb/progs/sample_stress.py: allocation, exceptions
# raised and caught, nine forks, threads that start and end, a recursion
# 1,000 frames deep) sampled at 20 kHz by each of the interpreter's
# samplers, its forked children followed (EVALPROF_FORK=follow):
#
#   signal   the CPU clock's perf event, the thread's own handler walks
#   wall     the wall clock: the sampler thread signals each thread
#   thread   EVALPROF_SAMPLE_TIMER=thread: the sampler thread walks each
#            running thread from outside it
#
# Each run prints what a plain run prints and nothing on stderr: no crash,
# no sampler's signal left to the program, and (3.12+, which counts the
# kernel's threads before warning of a fork in a multi-threaded process)
# no warning for evalprof's own threads: its writer, and the sampler
# thread where the wall clock or EVALPROF_SAMPLE_TIMER=thread runs one.
# Its trace and each child's read whole, and the recursion is walked as
# deep as the interpreter walks (512 frames, truncated at the outermost
# end: docs/FORMAT.md).
#
#   stress.sh VERSION BUILD_DIR CHECK_TRACE
. "$(dirname "$0")/lib.sh"
EVALPROF_CLI=$BUILD/evalprof
unset EVALPROF_MODE EVALPROF_COUNTS EVALPROF_SAMPLE_RATE EVALPROF_SAMPLE_CLOCK EVALPROF_SAMPLE_TIMER
export EVALPROF_QUIET=1
prog=$HERE/../modeb/progs/sample_stress.py
want=$("$PY" "$prog" 2> "$T/plain.err") || fail "plain run: $(head -n 1 "$T/plain.err")"
[ ! -s "$T/plain.err" ] || fail "the plain run wrote to stderr: $(head -n 1 "$T/plain.err")"

for how in signal wall thread; do
    case $how in
    signal) set -- ;;
    wall) set -- EVALPROF_SAMPLE_CLOCK=wall ;;
    thread) set -- EVALPROF_SAMPLE_TIMER=thread ;;
    esac
    d=$T/$how
    mkdir -p "$d"
    out=$(env "$@" EVALPROF="$d/s.evp" EVALPROF_MODE=sample EVALPROF_SAMPLE_RATE=20000 \
        EVALPROF_FORK=follow "$PY" "$prog" 2> "$d/err")
    rc=$?
    if [ "$rc" = 0 ] && [ "$out" = "$want" ] && [ ! -s "$d/err" ]; then
        ok "$how: the program's output unchanged, nothing on stderr"
    else
        fail "$how: exit $rc, output '$out' (want '$want'), stderr: $(head -n 3 "$d/err")"
    fi
    # the parent and its nine children, each a whole trace of samples
    n=0
    for f in "$d"/s.evp "$d"/s.evp.*; do
        [ -f "$f" ] || continue
        n=$((n + 1))
        "$EVALPROF_CLI" info "$f" > "$d/info" 2>&1 || fail "$how: info $(basename "$f"): $(head -n 1 "$d/info")"
        s=$(awk '$1 == "sampled:" { gsub(",", "", $2); print $2; exit }' "$d/info")
        [ "${s:-0}" -gt 0 ] || fail "$how: $(basename "$f") holds no sample"
    done
    [ "$n" = 10 ] && ok "$how: the parent's trace and its 9 children's, each read whole with samples" ||
        fail "$how: $n traces (want 10): $(ls "$d")"
    # the recursion, walked 512 frames deep: the deepest stack is the
    # thread's root, 512 frames of deep() and the phase
    "$EVALPROF_CLI" export --format folded --phases "$d/s.evp" > "$d/folded" 2> "$d/folded.err" ||
        fail "$how: export folded: $(head -n 1 "$d/folded.err")"
    depth=$(awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); if (n > m) m = n } END { print m + 0 }' "$d/folded")
    deep=$(awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); if (n == 514) { d = 0
        for (i = 2; i < n; i++) d += (f[i] ~ /^deep \(/); print d; exit } }' "$d/folded")
    [ "$depth" = 514 ] && [ "${deep:-0}" = 512 ] && ok "$how: the recursion walked 512 frames deep, all of deep()" ||
        fail "$how: deepest folded stack $depth entries, of which deep(): '${deep:-none}'"
done
finish
