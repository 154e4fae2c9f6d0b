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
# build VARIANT LOG: cpython/build.sh's VARIANT of CPython $ver, its
# output in LOG, its outcome in VARIANT.status and one line here; sets rc
# (its exit status) and last (its last line)
build() {
    out="$BUILD/cpython/$ver/$1.status"
    start=$(date +%s)
    sh cpython/build.sh --version "$ver" --variant "$1" --build-dir "$BUILD" > "$2" 2>&1
    rc=$?
    last=$(grep '^evalprof-cpython: ' "$2" | tail -n 1 | sed 's/^evalprof-cpython: //')
    case $rc in
    0) echo ok > "$out"; echo "prepare cpython $ver: $last ($(( $(date +%s) - start ))s)" ;;
    3) echo "unavailable: $last" > "$out"; echo "prepare cpython $ver: not built: $last" ;;
    *) echo "failed: $last" > "$out"; echo "prepare cpython $ver: FAILED: $last"; status=1 ;;
    esac
}
for ver in 3.13 3.11; do
    mkdir -p "$BUILD/cpython/$ver"
    build evalprof "$BUILD/cpython/$ver/prepare.log"
    base_rc=$rc base_last=$last
    for san in asan tsan; do
        if [ "$base_rc" != 0 ]; then
            echo "unavailable: the evalprof build of CPython $ver is not there: $base_last" \
                > "$BUILD/cpython/$ver/evalprof-$san.status"
            continue
        fi
        build "evalprof-$san" "$BUILD/cpython/$ver/prepare-$san.log"
    done
done
exit $status
