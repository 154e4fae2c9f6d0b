#!/bin/sh
# Run the libFuzzer targets of a fuzzing build (`make fuzz`).
#
#   tests/fuzz/run.sh BUILD [SECONDS] [TARGET...]
#
# BUILD was set up with `CC=clang meson setup BUILD -Dfuzz=true
# -Db_sanitize=address,undefined -Db_lundef=false`.  Each TARGET (evp,
# text, codec; all by default) runs for SECONDS (default 60) with its
# dictionary, starting from a working copy of tests/fuzz/corpus/TARGET
# kept in BUILD/fuzz-work/TARGET (so what the fuzzer learns accumulates
# across runs without touching the committed seeds).  Inputs that crash,
# leak, hang or break a checked property land in BUILD/fuzz-crashes/;
# the script lists them and exits non-zero.  To keep one as a regression
# test: copy it into tests/fuzz/corpus/TARGET/ (the 'fuzz-corpus' suite
# then replays it in every `make test`).
set -u
build=${1:?usage: run.sh BUILD [SECONDS] [TARGET...]}
secs=${2:-60}
shift 2 2>/dev/null || shift $#
targets=${*:-evp text codec}
here=$(cd "$(dirname "$0")" && pwd)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

status=0
for t in $targets; do
    bin="$build/tests/fuzz/fuzz_$t"
    if [ ! -x "$bin" ]; then
        echo "run.sh: $bin missing (a build with -Dfuzz=true and clang?)" >&2
        status=1
        continue
    fi
    work="$build/fuzz-work/$t"
    crashes="$build/fuzz-crashes/$t"
    mkdir -p "$work" "$crashes"
    cp -n "$here/corpus/$t/"* "$work/" 2>/dev/null
    dict=""
    [ -f "$here/$t.dict" ] && dict="-dict=$here/$t.dict"
    # Value profiles help the decoder's comparisons; for the readers they
    # cost half the speed (their views compare across 64K-entry tables).
    maxlen=8192 vp=0
    [ "$t" = codec ] && maxlen=4096 vp=1
    echo "== fuzz $t for ${secs}s ($(ls "$work" | wc -l) inputs to start)"
    "$bin" $dict -max_total_time="$secs" -max_len=$maxlen -timeout=20 \
        -use_value_profile=$vp -print_final_stats=1 \
        -artifact_prefix="$crashes/" "$work" 2>"$build/fuzz-$t.log"
    rc=$?
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ *DONE)' \
        "$build/fuzz-$t.log" | sed 's/^/   /'
    if [ $rc -ne 0 ] || [ -n "$(ls "$crashes")" ]; then
        echo "   FAILED (exit $rc); see $build/fuzz-$t.log; inputs:"
        ls "$crashes" | sed "s|^|     $crashes/|"
        status=1
    fi
done
exit $status
