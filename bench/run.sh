#!/bin/sh
# evalprof benchmarks (`make bench`): runs every bench/bench-*.sh in name
# order with the build directory as argument.  Each prints its figures
# beside a baseline measured in the same run; none fails on time.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.." || exit 1
status=0
for b in bench/bench-*.sh; do
    [ -f "$b" ] || continue
    echo "== $b"
    sh "$b" "$BUILD" || { echo "== $b: did not complete"; status=1; }
    echo
done
exit $status
