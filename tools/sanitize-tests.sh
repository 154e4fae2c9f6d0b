#!/bin/sh
# Sanitizer runs of evalprof's tests: ordinary build directories, run by
# `make test` and CI after the main suites (tools/run-tests.sh).
#
#   build-asan  AddressSanitizer + UndefinedBehaviorSanitizer, whole tree;
#               suites unit, golden, damage, fuzz-corpus, threads, and the
#               flame graphs' and perf's (flame, golden-flame, perf)
#   build-tsan  ThreadSanitizer; only the recorder's concurrency tests
#               (suite threads: events and samples)
#   both        the sampled mode's stress test in stock interpreters, the
#               extension and the recorder instrumented (suite
#               sanitize-modeb, tests/e2e/modeb/meson.build)
#   build-fuzz  each libFuzzer target (clang) for FUZZ_SECONDS (20) from a
#               copy of its corpus, which keeps what it learns
#               (tests/fuzz/run.sh); skipped, saying why, without clang's
#               libFuzzer
#
# Each directory is set up once and then rebuilt incrementally (set up
# again when the options below changed: DIR/sanitize-setup has those it
# was set up with).  Its old
# testlog.json is removed first, so that a directory that cannot be built
# leaves no log, which tools/test-summary.py counts as a failure.  When a
# sanitizer cannot run on this machine at all (a probe program fails), its
# log gets one skipped entry saying why, instead of failures.
#
#   tools/sanitize-tests.sh [asan] [tsan] [fuzz]   (all by default)
#
# Sanitizer reports abort the test (halt_on_error, abort_on_error), so a
# report is a failure, never a line in a log that passes.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
which=${*:-asan tsan fuzz}
cc=${CC:-cc}
status=0

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:halt_on_error=1:detect_leaks=1:print_summary=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-abort_on_error=1:halt_on_error=1:print_stacktrace=1:print_summary=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-abort_on_error=1:halt_on_error=1:second_deadlock_stack=1}

# skip_log DIR NAME REASON: a testlog.json with one skipped test.
skip_log() {
    mkdir -p "$1/meson-logs"
    python3 - "$1/meson-logs/testlog.json" "$2" "$3" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"name": sys.argv[2], "result": "SKIP",
                        "stdout": "SKIP: " + sys.argv[3] + "\n"}) + "\n")
EOF
}

# probe FLAGS: can this compiler build and run a threaded program with
# FLAGS?  Prints the reason when not.
probe() {
    sh "$top/tools/san-probe.sh" "$cc" "$@"
}

# run DIR SETUP-OPTIONS -- NINJA-TARGETS -- MESON-TEST-ARGS
run() {
    dir=$1
    shift
    setup=""
    while [ $# -gt 0 ] && [ "$1" != -- ]; do setup="$setup $1"; shift; done
    shift
    targets=""
    while [ $# -gt 0 ] && [ "$1" != -- ]; do targets="$targets $1"; shift; done
    shift
    rm -f "$dir/meson-logs/testlog.json"
    again=""
    if [ -f "$dir/build.ninja" ] &&
        [ "$(cat "$dir/sanitize-setup" 2>/dev/null)" != "$setup" ]; then
        again=--reconfigure
    fi
    if [ ! -f "$dir/build.ninja" ] || [ -n "$again" ]; then
        log=$(mktemp)
        # shellcheck disable=SC2086
        if ! meson setup $again "$dir" $setup >"$log" 2>&1; then
            echo "== $dir: meson setup failed:"
            tail -n 5 "$log"
            rm -f "$log"
            status=1
            return
        fi
        rm -f "$log"
        printf '%s\n' "$setup" >"$dir/sanitize-setup"
    fi
    # shellcheck disable=SC2086
    if ! ninja -C "$dir" $targets >"$dir/build.log" 2>&1; then
        echo "== $dir: build failed (see $dir/build.log)"
        grep -m 10 -E 'error|FAILED' "$dir/build.log"
        status=1
        return
    fi
    # shellcheck disable=SC2086
    meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 "$@" ||
        status=1
}

# fuzz_log DIR TARGET RESULT OUTPUT-FILE: one testlog.json entry.
fuzz_log() {
    mkdir -p "$1/meson-logs"
    python3 - "$1/meson-logs/testlog.json" "$2" "$3" "$4" <<'EOF'
import json, sys
with open(sys.argv[1], "a") as f, open(sys.argv[4]) as out:
    f.write(json.dumps({"name": "fuzz: " + sys.argv[2], "result": sys.argv[3],
                        "stdout": out.read()}) + "\n")
EOF
}

# A short libFuzzer run of each target (tests/fuzz/run.sh), each a test.
fuzz() {
    echo "== build-fuzz: libFuzzer, ${FUZZ_SECONDS:-20} s a target"
    rm -f build-fuzz/meson-logs/testlog.json
    d=$(mktemp -d)
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)' \
        '{ (void)d; (void)n; return 0; }' >"$d/f.c"
    if ! command -v clang >/dev/null 2>&1 ||
        ! clang -fsanitize=fuzzer,address -o "$d/f" "$d/f.c" >/dev/null 2>&1 ||
        ! "$d/f" -runs=10 >/dev/null 2>&1; then
        why="clang with libFuzzer cannot build and run a target here"
        echo "   skipped: $why"
        skip_log build-fuzz "fuzz: every target" "$why"
        rm -rf "$d"
        return
    fi
    rm -rf "$d"
    if [ ! -f build-fuzz/build.ninja ] &&
        ! CC=clang meson setup build-fuzz -Dfuzz=true \
            -Db_sanitize=address,undefined -Db_lundef=false \
            -Dbuildtype=debug -Dpython_ext=disabled >/dev/null 2>&1; then
        echo "== build-fuzz: meson setup failed"
        status=1
        return
    fi
    if ! ninja -C build-fuzz tests/fuzz/fuzz_evp tests/fuzz/fuzz_text \
        tests/fuzz/fuzz_codec >build-fuzz/build.log 2>&1; then
        echo "== build-fuzz: build failed (see build-fuzz/build.log)"
        grep -m 10 -E 'error|FAILED' build-fuzz/build.log
        status=1
        return
    fi
    for t in evp text codec; do
        out=build-fuzz/fuzz-$t.out
        if sh tests/fuzz/run.sh build-fuzz "${FUZZ_SECONDS:-20}" "$t" \
            >"$out" 2>&1; then
            fuzz_log build-fuzz "$t" OK "$out"
        else
            fuzz_log build-fuzz "$t" FAIL "$out"
            status=1
        fi
        sed 's/^/   /' "$out"
    done
}

for s in $which; do
    case "$s" in
    asan)
        echo "== build-asan: AddressSanitizer + UBSan"
        why=$(probe -fsanitize=address,undefined)
        if [ -n "$why" ]; then
            echo "   skipped: $why"
            skip_log build-asan "asan: every suite" "AddressSanitizer cannot run here ($why)"
            continue
        fi
        run build-asan -Db_sanitize=address,undefined -Db_lundef=false \
            -Dbuildtype=debug -Dpython_ext=auto -- -- \
            --suite unit --suite golden --suite damage --suite fuzz-corpus \
            --suite threads --suite flame --suite golden-flame --suite perf \
            --suite sanitize-modeb
        ;;
    tsan)
        echo "== build-tsan: ThreadSanitizer (the recorder, the sampled mode in a stock interpreter)"
        why=$(probe -fsanitize=thread)
        if [ -n "$why" ]; then
            echo "   skipped: $why"
            skip_log build-tsan "tsan: recorder-threads" "ThreadSanitizer cannot run here ($why)"
            continue
        fi
        run build-tsan -Db_sanitize=thread -Dbuildtype=debug \
            -Dpython_ext=auto -- tests/threads/recorder_threads \
            tests/threads/replay_threads tests/threads/sample_threads \
            sanitize-modeb -- --suite threads --suite sanitize-modeb
        ;;
    fuzz)
        fuzz
        ;;
    *)
        echo "sanitize-tests.sh: unknown run '$s' (asan, tsan, fuzz)" >&2
        status=2
        ;;
    esac
done
exit $status
