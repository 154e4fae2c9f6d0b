#!/bin/sh
# evalprof benchmarks (`make bench`): runs every bench/bench-*.sh in name
# order with the build directory as argument, shows their output as it
# comes, and writes it to bench/results/latest.md with the date, the
# commit and the machine it ran on (cores, CPU model, kernel, memory, the
# load average before and after).  Each benchmark prints its figures
# beside a baseline measured in the same run; none fails on time.
#
#   sh bench/run.sh [BUILD [NAME...]]
#
# NAME picks bench/bench-NAME.sh (foundation, flame, ...); a run of some
# of them writes no results file unless EVP_BENCH_RESULTS names one.
# EVP_BENCH_RESULTS=FILE writes the results there instead, =- nowhere.
# The file is replaced only when the run ends: an interrupted run leaves
# the previous one in place.
set -u
BUILD=${1:-build}
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/.." || exit 1

if [ $# -gt 0 ]; then
    benches=""
    for n in "$@"; do
        [ -f "bench/bench-$n.sh" ] || { echo "bench: no bench/bench-$n.sh" >&2; exit 2; }
        benches="$benches bench/bench-$n.sh"
    done
    results=${EVP_BENCH_RESULTS:--}
else
    benches=$(ls bench/bench-*.sh)
    results=${EVP_BENCH_RESULTS:-bench/results/latest.md}
fi

work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

load() { cut -d' ' -f1-3 /proc/loadavg; }
commit=$(git log -1 --format='%h (%s)' --abbrev=12 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain -- . ':!bench/results' 2>/dev/null)" ]; then
    commit="$commit, with uncommitted changes"
fi
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
virt=""
grep -qw hypervisor /proc/cpuinfo && virt=" (a virtual machine: the CPU reports a hypervisor)"
mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
{
    echo "# evalprof benchmark results"
    echo
    echo "Written by \`make bench\` (bench/run.sh): the output of each benchmark"
    echo "as it printed it.  Read the ratios, each beside a baseline measured in"
    echo "the same run; absolute times move with the machine's load."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- commit: $commit"
    echo "- machine: $(nproc) cores, $cpu$virt, $mem"
    echo "- kernel: $(uname -srm)"
    echo "- load average at start: $(load)"
} > "$work/head"
cat "$work/head"
echo

status=0
: > "$work/body"
for b in $benches; do
    echo "== $b"
    t0=$(date +%s)
    { sh "$b" "$BUILD" 2>&1; echo $? > "$work/rc"; } | tee "$work/out"
    rc=$(cat "$work/rc")
    t=$(( $(date +%s) - t0 ))
    note=""
    if [ "$rc" != 0 ]; then
        echo "== $b: did not complete"
        note=", did not complete: exit $rc"
        status=1
    fi
    echo
    {
        printf '\n## %s (%d min %d s%s)\n\n```text\n' "$b" $((t / 60)) $((t % 60)) "$note"
        cat "$work/out"
        printf '```\n'
    } >> "$work/body"
done

if [ "$results" != - ]; then
    dir=$(dirname "$results")
    mkdir -p "$dir" || exit 1
    tmp=$(mktemp "$dir/.results.XXXXXX") || exit 1
    { cat "$work/head"; echo "- load average at the end: $(load)"; cat "$work/body"; } > "$tmp" &&
        chmod 644 "$tmp" && mv "$tmp" "$results" || { rm -f "$tmp"; exit 1; }
    echo "bench: results written to $results"
fi
exit $status
