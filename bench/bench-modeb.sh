#!/bin/sh
# Mode B benchmark (`make bench`): the cost of tracing stock CPython 3.11,
# 3.12 and 3.13 through evalprof._tracer, beside untraced, cProfile and a
# pure-Python tracer measured in the same run, and (3.12+) the ops figure
# beside the sys.monitoring floor and its ratio to it.  See bench/modeb/run.py for
# the figures and the environment knobs (BENCH_REPS, BENCH_SCALE,
# BENCH_PYTHONS).  Never fails on time.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
exec python3 bench/modeb/run.py "$BUILD"
