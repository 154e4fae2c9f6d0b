#!/bin/sh
# Foundation benchmarks: recorder cost per event, trace size per event and
# analyzer speed, each beside a baseline measured in the same run.
set -eu
BUILD=${1:-build}
"$BUILD/bench/recorder_bench" -n "${EVP_BENCH_EVENTS:-20000000}" -r 7 -d "${TMPDIR:-/tmp}"
echo
python3 "$(dirname "$0")/foundation/bench.py" "$BUILD" ${EVP_BENCH_QUICK:+--quick}
