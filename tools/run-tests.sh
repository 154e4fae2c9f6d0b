#!/bin/sh
# evalprof test runner (`make test`, `.ci/run`).
#
# 1. Runs every tests/prepare.d/*.sh (in name order) with the build dir as
#    argument: they set up what later suites need (instrumented
#    interpreters, a browser) and may print notices; a failing preparation
#    is reported and its dependent tests then skip or fail on their own.
# 2. Runs the Meson test suites (unit, golden, damage, e2e-*, ...).
# 3. Without extra arguments (and unless EVP_SANITIZE=0), runs the suites
#    again under AddressSanitizer+UBSan and the recorder's concurrency
#    test under ThreadSanitizer, in build-asan and build-tsan, and in both
#    the sampled mode's stress test in stock interpreters
#    (tools/sanitize-tests.sh).
# 4. Prints the skipped tests with their reasons, then the closing line
#    "N passed, N failed" that CI reads, over every run (skipped are
#    counted apart, never as passed).
set -u
BUILD=${1:-build}
shift 2>/dev/null || true
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

for prep in tests/prepare.d/*.sh; do
    [ -f "$prep" ] || continue
    echo "== prepare: $prep"
    if ! sh "$prep" "$BUILD"; then
        echo "== prepare: $prep failed (its tests will report)"
    fi
done

echo "== meson test"
meson test -C "$BUILD" --no-rebuild --print-errorlogs --num-processes 2 "$@"
rc=$?
logs="$BUILD/meson-logs/testlog.json"
if [ $# -eq 0 ] && [ "${EVP_SANITIZE:-1}" != 0 ]; then
    sh tools/sanitize-tests.sh
    logs="$logs build-asan/meson-logs/testlog.json build-tsan/meson-logs/testlog.json"
    logs="$logs build-fuzz/meson-logs/testlog.json"
fi
# shellcheck disable=SC2086
python3 tools/test-summary.py $logs
src=$?
[ $rc -ne 0 ] && exit 1
exit $src
