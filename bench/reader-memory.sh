#!/bin/sh
# Peak resident memory (mapped trace pages included: GNU time's maximum
# resident set of the command) and time of the readers -- summary, info,
# diff, export --format folded and flamegraph -- on traces the recorder
# writes, plain and rewritten zstd-compressed (export --format evp --zstd),
# at two sizes: EVENTS (default 50M; BENCH_FULL=1: 500M) and a tenth of
# it.  Each figure is printed beside the target (TARGET_MB, default 200 MB
# of peak), and each command's time per event at the large size beside
# the small one's: a ratio near 1 is time linear in events.  Each command
# runs RUNS times (default 2): the highest peak and the shortest time are
# printed, the traces read once before (written just now, they would
# otherwise still be going to the disk under the first command).
# BEFORE=path/to/evalprof prints another binary's figures beside.
#
#   sh bench/reader-memory.sh BUILD_DIR
set -eu
build=${1:-build}
events=${EVENTS:-50000000}
[ "${BENCH_FULL:-0}" = 1 ] && events=500000000
small=$((events / 10))
runs=${RUNS:-2}
target=${TARGET_MB:-200}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# A plain and a zstd trace of N events: $dir/N.evp, $dir/N.zst.evp.
make_traces() {
    mkdir "$dir/rec"
    EVALPROF_BENCH_KEEP=1 "$build/bench/recorder_bench" -n "$1" -r 1 \
        -d "$dir/rec" >/dev/null
    mv "$dir/rec/bench-rec.evp" "$dir/$1.evp"
    rm -rf "$dir/rec"
    "$build/evalprof" export --format evp --zstd -o "$dir/$1.zst.evp" \
        "$dir/$1.evp"
}

# Run evalprof command CMD on TRACE with binary BIN; prints its peak in KB
# and its wall-clock seconds.
measure_once() {
    bin=$1 cmd=$2 trace=$3
    case $cmd in
    diff) set -- diff "$trace" "$trace" ;;
    folded) set -- export --format folded -o "$dir/out.folded" "$trace" ;;
    flamegraph) set -- flamegraph -o "$dir/out.svg" "$trace" ;;
    *) set -- "$cmd" "$trace" ;;
    esac
    t0=$(date +%s.%N)
    if ! /usr/bin/time -f "%M" -o "$dir/time" "$bin" "$@" \
        >/dev/null 2>"$dir/err"; then
        echo "$bin $cmd $trace failed: $(tail -1 "$dir/err")" >&2
        echo "0 0"
        return
    fi
    t1=$(date +%s.%N)
    echo "$(tail -1 "$dir/time") $t0 $t1" | awk '{ print $1, $3 - $2 }'
}

# measure_once RUNS times: the highest peak, the shortest time.
measure() {
    i=0
    while [ $i -lt "$runs" ]; do
        measure_once "$@"
        i=$((i + 1))
    done | awk 'NR == 1 || $1 > kb { kb = $1 }
                NR == 1 || $2 < s { s = $2 }
                END { print kb, s }'
}

make_traces "$small"
make_traces "$events"
sync
cat "$dir"/*.evp >/dev/null
for n in "$small" "$events"; do
    echo "trace of $n events: $(du -m "$dir/$n.evp" | cut -f1) MB plain," \
        "$(du -m "$dir/$n.zst.evp" | cut -f1) MB zstd"
done
echo "target: peak resident memory under $target MB, time linear in events"
for bin in "$build/evalprof" ${BEFORE:-}; do
    echo "$bin:"
    for kind in plain zstd; do
        ext=evp
        [ $kind = zstd ] && ext=zst.evp
        for cmd in summary info diff folded flamegraph; do
            a=$(measure "$bin" $cmd "$dir/$small.$ext")
            b=$(measure "$bin" $cmd "$dir/$events.$ext")
            echo "$a $b" | awk -v kind=$kind -v cmd=$cmd -v small="$small" \
                -v big="$events" -v target="$target" '{
                mb1 = $1 / 1024; mb2 = $3 / 1024
                per1 = $2 / small * 1e8; per2 = $4 / big * 1e8
                ok = mb1 < target && mb2 < target ? "under" : "OVER"
                ratio = per1 > 0 ? per2 / per1 : 0
                lin = ratio > 0 && ratio < 1.25 ? "linear" : "NOT linear"
                printf "  %-5s %-10s %5.1f MB / %5.1f MB peak (%s %d MB)," \
                       " %6.2f s / %6.2f s, %5.2f s per 100M events at %dM" \
                       " (%.2f times the %gM rate: %s)\n",
                       kind, cmd, mb1, mb2, ok, target, $2, $4, per2,
                       big / 1e6, ratio, small / 1e6, lin
            }'
        done
    done
done
