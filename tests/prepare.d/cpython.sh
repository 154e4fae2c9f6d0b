#!/bin/sh
# Builds the instrumented CPython interpreters that the e2e-modea tests
# run (3.13 and 3.11, from Debian's source packages), reusing a build whose
# source and hooks are unchanged.  The plain baseline builds are left to
# the benchmarks (`make bench`), to keep CI short.
#
# Then, from each, the copies whose evalprof objects run under
# AddressSanitizer + UBSan and ThreadSanitizer (evalprof-asan,
# evalprof-tsan: cpython/build.sh), for the sanitizer stress tests
# (tests/e2e/modea/stress.sh).
#
# For each version and build it records the outcome in
# BUILD/cpython/X.Y/evalprof.status (evalprof-asan.status, ...), which
# the tests read:
#   ok                       built or up to date
#   unavailable: <reason>    the source package cannot be obtained here
#                            (the tests skip)
#   failed: <reason>         anything else (the tests fail)
BUILD=${1:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac

sh tools/bootstrap.sh build cpython || echo "prepare cpython: some build dependencies are missing (see above)"
status=0
# outcome RC LAST: build.sh's exit status RC and last line LAST into $out
# and the log ($ver, $start)
outcome() {
    case $1 in
    0) echo ok > "$out"; echo "prepare cpython $ver: $2 ($(( $(date +%s) - start ))s)" ;;
    3) echo "unavailable: $2" > "$out"; echo "prepare cpython $ver: not built: $2" ;;
    *) echo "failed: $2" > "$out"; echo "prepare cpython $ver: FAILED: $2"; status=1 ;;
    esac
}
for ver in 3.13 3.11; do
    mkdir -p "$BUILD/cpython/$ver"
    out="$BUILD/cpython/$ver/evalprof.status"
    start=$(date +%s)
    sh cpython/build.sh --version "$ver" --variant evalprof --build-dir "$BUILD" > "$BUILD/cpython/$ver/prepare.log" 2>&1
    rc=$?
    last=$(grep '^evalprof-cpython: ' "$BUILD/cpython/$ver/prepare.log" | tail -n 1 | sed 's/^evalprof-cpython: //')
    outcome "$rc" "$last"
    for san in asan tsan; do
        out="$BUILD/cpython/$ver/evalprof-$san.status"
        if [ "$rc" != 0 ]; then
            echo "unavailable: the evalprof build of CPython $ver is not there: $last" > "$out"
            continue
        fi
        start=$(date +%s)
        sh cpython/build.sh --version "$ver" --variant "evalprof-$san" --build-dir "$BUILD" \
            > "$BUILD/cpython/$ver/prepare-$san.log" 2>&1
        srcrc=$?
        slast=$(grep '^evalprof-cpython: ' "$BUILD/cpython/$ver/prepare-$san.log" | tail -n 1 | sed 's/^evalprof-cpython: //')
        outcome "$srcrc" "$slast"
    done
done
exit $status
