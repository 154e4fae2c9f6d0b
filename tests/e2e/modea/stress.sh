#!/bin/sh
# Sample mode under stress in the instrumented interpreter, at 20 kHz,
# under each of the interpreter's samplers:
#
#   signal   the CPU clock's perf event, the thread's own handler walks
#   wall     the wall clock: the sampler thread signals each thread
#   thread   EVALPROF_SAMPLE_TIMER=thread: the sampler thread walks each
#            running thread from outside it
#
# Two programs: mode B's (tests/e2e/modeb/progs/sample_stress.py:
# allocation, exceptions raised and caught, nine forks, followed
# (EVALPROF_FORK=follow), threads that start and end, a recursion 1,000
# frames deep) and programs/churn.py (threads that come and go, a
# generator, calls pushed and popped under the walk).
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
# With SANITIZER (asan or tsan) the same runs use the interpreter whose
# evalprof objects (its hooks and the recorder) are built under
# AddressSanitizer + UBSan or ThreadSanitizer (evalprof-asan,
# evalprof-tsan: cpython/build.sh, built by tests/prepare.d/cpython.sh);
# a report ends the run (halt_on_error, abort_on_error) and fails it.
# Under AddressSanitizer the sampler thread does not run: its walk reads,
# by design, frames and code objects that their thread may pop and free
# meanwhile (a value read is used only when the walk's re-check finds the
# frames where they were, and a read of unmapped memory faults into the
# guard), and ASan reports such a read of a freed code object as
# heap-use-after-free; ThreadSanitizer runs it, told to ignore the walk's
# reads (not its writes: the rings, the walker's buffers).
# Under ThreadSanitizer the forks are not followed: its own thread makes
# every fork a multi-threaded one (so 3.12+ warns, the one line stderr may
# hold there), and a child that starts threads of its own reuses the ids
# of the parent's, which TSan still counts as running, and ends the child.
#
#   stress.sh VERSION BUILD_DIR CHECK_TRACE [asan|tsan]
. "$(dirname "$0")/lib.sh"
EVALPROF_CLI=$BUILD/evalprof
SAN=${4:-}
unset EVALPROF_MODE EVALPROF_COUNTS EVALPROF_SAMPLE_RATE EVALPROF_SAMPLE_CLOCK EVALPROF_SAMPLE_TIMER
export EVALPROF_QUIET=1
follow=follow
case "$SAN" in
"") ;;
asan|tsan)
    plain_py=$PY
    PY=$BUILD/cpython/$VER/evalprof-$SAN/python
    why=$(cat "$BUILD/cpython/$VER/evalprof-$SAN.status" 2>/dev/null)
    case "$why" in
    ok) ;;
    unavailable:*) echo "SKIP: CPython $VER under $SAN: ${why#unavailable: }"; exit 77 ;;
    "") echo "FAIL: $PY: tests/prepare.d/cpython.sh did not run (make test runs it)"; exit 1 ;;
    *) echo "FAIL: $PY: $why"; exit 1 ;;
    esac
    [ -x "$PY" ] || { echo "FAIL: $PY missing"; exit 1; }
    # evalprof's objects are instrumented: they call the sanitizer's
    # checks, which the interpreter takes from its runtime
    if [ "$SAN" = asan ]; then
        probe=__asan_report_load
        # (use_sigaltstack=0: on a signal stack, the jump out of the
        # walk's fault guard has ASan's runtime read /proc/self/maps
        # through malloc, from within the sampling signal's handler,
        # which may have interrupted malloc: ASan's runtime then waits
        # for its own allocator's lock)
        export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:use_sigaltstack=0
        export UBSAN_OPTIONS=abort_on_error=1:halt_on_error=1:print_stacktrace=1
    else
        probe=__tsan_read
        export TSAN_OPTIONS=abort_on_error=1:halt_on_error=1:second_deadlock_stack=1:die_after_fork=0
        follow=
    fi
    nm -u "$PY" | grep -q " $probe" && ldd "$PY" | grep -q "lib${SAN}\.so" &&
        ok "$SAN: evalprof's objects call $probe*, the interpreter links lib$SAN" ||
        fail "$SAN: $PY is not built under the sanitizer (no $probe* call or no lib$SAN)"
    ;;
*) echo "FAIL: unknown sanitizer '$SAN' (asan or tsan)"; exit 1 ;;
esac

# run NAME PROGRAM [VAR=VALUE ...]: PROGRAM sampled at 20 kHz into
# $T/NAME/s.evp, its output and stderr checked against a plain run's
run() {
    name=$1 program=$2
    shift 2
    d=$T/$name
    mkdir -p "$d"
    want=$("${plain_py:-$PY}" "$program" 2> "$d/plain.err") || fail "$name: plain run: $(head -n 1 "$d/plain.err")"
    # (a run that hangs fails here, named, within the test's time)
    out=$(timeout -k 10 150 env "$@" EVALPROF="$d/s.evp" EVALPROF_MODE=sample EVALPROF_SAMPLE_RATE=20000 \
        EVALPROF_FORK=$follow "$PY" "$program" 2> "$d/err")
    rc=$?
    [ "$rc" = 124 ] && echo "timeout: still running after 150 s" >> "$d/err"
    if [ "$SAN" = tsan ]; then
        grep -v -e 'DeprecationWarning: This process (pid=[0-9]*) is multi-threaded, use of fork() may lead to deadlocks in the child\.$' \
            -e '^  pid = os\.fork()$' "$d/err" > "$d/err.rest"
    else
        cp "$d/err" "$d/err.rest"
    fi
    if [ "$rc" = 0 ] && [ "$out" = "$want" ] && [ ! -s "$d/err.rest" ]; then
        ok "$name: the program's output unchanged, nothing on stderr"
    else
        fail "$name: exit $rc, output '$out' (want '$want'), stderr: $(head -n 40 "$d/err")"
    fi
}

# sampler_env SAMPLER: the setting that picks it (none for the signal)
sampler_env() {
    case $1 in
    wall) echo EVALPROF_SAMPLE_CLOCK=wall ;;
    thread) echo EVALPROF_SAMPLE_TIMER=thread ;;
    esac
}

samplers="signal wall thread"
[ "$SAN" = asan ] && samplers="signal wall"
for how in $samplers; do
    # shellcheck disable=SC2046
    set -- $(sampler_env "$how")
    run "$how" "$HERE/../modeb/progs/sample_stress.py" "$@"
    d=$T/$how
    # the parent and its nine children, each a whole trace; the parent's
    # holds samples, and so do the children's together (a child lives a
    # few ms: under a sanitizer its own may hold none)
    n=0 kids=0
    for f in "$d"/s.evp "$d"/s.evp.*; do
        [ -f "$f" ] || continue
        n=$((n + 1))
        "$EVALPROF_CLI" info "$f" > "$d/info" 2>&1 || fail "$how: info $(basename "$f"): $(head -n 1 "$d/info")"
        s=$(awk '$1 == "sampled:" { gsub(",", "", $2); print $2; exit }' "$d/info")
        if [ "$f" = "$d/s.evp" ]; then
            [ "${s:-0}" -gt 0 ] || fail "$how: the parent's trace holds no sample"
        else
            kids=$((kids + ${s:-0}))
        fi
    done
    traces=$([ -n "$follow" ] && echo 10 || echo 1)
    [ "$n" = "$traces" ] && { [ -z "$follow" ] || [ "$kids" -gt 0 ]; } &&
        ok "$how: $n trace(s) (the parent's and its followed children's), each read whole; $kids samples in the children's" ||
        fail "$how: $n traces (want $traces), $kids samples in the children's: $(ls "$d")"
    # the recursion, walked 512 frames deep: the deepest stacks are the
    # thread's root, 512 frames and the phase, and one at least is all
    # deep() (a sample whose function record a full ring lost names
    # "<unknown>" instead, until the function is recorded again: 512
    # frames of 2 KiB at 20 kHz fill a ring, under a sanitizer above all)
    "$EVALPROF_CLI" export --format folded --phases "$d/s.evp" > "$d/folded" 2> "$d/folded.err" ||
        fail "$how: export folded: $(head -n 1 "$d/folded.err")"
    depth=$(awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); if (n > m) m = n } END { print m + 0 }' "$d/folded")
    deep=$(awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";") } n == 514 { d = 0
        for (i = 2; i < n; i++) d += (f[i] ~ /^deep \(/); if (d > m) m = d } END { print m + 0 }' "$d/folded")
    [ "$depth" = 514 ] && [ "$deep" = 512 ] && ok "$how: the recursion walked 512 frames deep, all of deep()" ||
        fail "$how: deepest folded stack $depth entries, of which deep() at most $deep: $(awk '{ n = split($0, f, ";") } n == 514 { print f[2], f[n] }' "$d/folded" | sort | uniq -c | head -n 4)"
    # threads that come and go under the walk
    run "churn-$how" "$PROGRAMS/churn.py" "$@"
    "$EVALPROF_CLI" info "$T/churn-$how/s.evp" > "$T/churn-$how/info" 2>&1 ||
        fail "churn-$how: info: $(head -n 1 "$T/churn-$how/info")"
    streams=$(sed -n '/^sampled streams:/,/^$/p' "$T/churn-$how/info" | awk '$1 ~ /^[0-9]+$/ && $3 + 0 > 0' | wc -l)
    [ "$streams" -ge 2 ] && ok "churn-$how: $streams threads sampled" ||
        fail "churn-$how: $streams streams with samples: $(sed -n '/^sampled streams:/,/^$/p' "$T/churn-$how/info" | tr -s ' ')"
done
# every tenth walk made to fault (EVALPROF_TEST_WALK_FAULT): the guard's
# jump out of its handler, from the sampler thread too, and under
# ThreadSanitizer out of the walk whose reads it ignores
for how in $samplers; do
    # shellcheck disable=SC2046
    set -- $(sampler_env "$how")
    run "fault-$how" "$PROGRAMS/churn.py" "$@" EVALPROF_TEST_WALK_FAULT=10
    "$EVALPROF_CLI" info "$T/fault-$how/s.evp" > "$T/fault-$how/info" 2>&1
    faults=$(awk '$1 == "sample.walk_faults" { print $2; exit }' "$T/fault-$how/info")
    [ "${faults:-0}" -gt 0 ] && ok "fault-$how: $faults walks faulted, caught" ||
        fail "fault-$how: sample.walk_faults '${faults:-none}'"
done
finish
