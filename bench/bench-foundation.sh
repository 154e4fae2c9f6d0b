#!/bin/sh
# Foundation benchmarks: recorder cost per event, trace size per event and
# analyzer speed, each beside a baseline measured in the same run.  The
# recorder's ratios are to a bare loop of the clock its session uses (TSC
# or CLOCK_MONOTONIC, named in the label), printed beside each ratio.
set -eu
BUILD=${1:-build}
"$BUILD/bench/recorder_bench" -n "${EVP_BENCH_EVENTS:-20000000}" -r 7 -d "${TMPDIR:-/tmp}"
echo
python3 "$(dirname "$0")/foundation/bench.py" "$BUILD" ${EVP_BENCH_QUICK:+--quick}
