#!/bin/sh
# Fidelity benchmark (`make bench`): evalprof's function and opcode shares
# against ground truth measured untraced, beside cProfile and perf --ops.
# See bench/fidelity/run.py for the workloads, the figures and the
# environment knobs (BENCH_REPS, BENCH_FIDELITY_SECONDS, BENCH_PYTHONS).
# Never fails on the figures.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
exec python3 bench/fidelity/run.py "$BUILD"
