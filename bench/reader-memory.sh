#!/bin/sh
# Peak resident memory (mapped trace pages included) and time of the
# readers on a large trace the recorder writes: summary, info, diff and
# flamegraph.  EVENTS sets the size (default 100M; BENCH_FULL=1: 500M);
# BEFORE=path/to/evalprof prints another binary's figures beside.
#
#   sh bench/reader-memory.sh BUILD_DIR
set -eu
build=${1:-build}
events=${EVENTS:-100000000}
[ "${BENCH_FULL:-0}" = 1 ] && events=500000000
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
EVALPROF_BENCH_KEEP=1 "$build/bench/recorder_bench" -n "$events" -r 1 \
    -d "$dir" >/dev/null
trace=$dir/bench-rec.evp
echo "trace: $events events, $(du -m "$trace" | cut -f1) MB"
for bin in "$build/evalprof" ${BEFORE:-}; do
    for cmd in summary info diff flamegraph; do
        case $cmd in
        diff) args="diff $trace $trace" ;;
        flamegraph) args="flamegraph -o $dir/f.svg $trace" ;;
        *) args="$cmd $trace" ;;
        esac
        /usr/bin/time -f "$bin $cmd: %M KB peak, %e s" $bin $args \
            >/dev/null 2>"$dir/err" || true
        tail -1 "$dir/err"
    done
done
