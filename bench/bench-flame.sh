#!/bin/sh
# Flame graph benchmarks (`make bench`): SVG rendering of 10 thousand,
# 100 thousand and 1 million folded lines, and `perf script` collapse
# speed in MB/s, each beside a baseline measured in the same run:
#   rendering  flamegraph.pl (Debian's copy in libdevel-nytprof-perl, or
#              FLAMEGRAPH_PL=path), the tool evalprof replaces;
#   collapse   tests/flame/ref-collapse.awk, a plain reference collapse
#              (and stackcollapse-perf.pl when STACKCOLLAPSE_PL=path).
# Prints medians and ratios; never fails on time.  The target is 1 million
# lines rendered in under 2 s.  FLAME_BENCH_RUNS (default 3) sets the runs
# per figure; the baseline runs once on 1 million lines (it takes minutes).
set -u
BUILD=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
evp="$top/$BUILD/evalprof"
case "$BUILD" in /*) evp="$BUILD/evalprof" ;; esac
[ -x "$evp" ] || { echo "bench-flame: $evp not built"; exit 1; }
runs=${FLAME_BENCH_RUNS:-3}
work="$top/$BUILD/bench-flame"
mkdir -p "$work"
sh tools/bootstrap.sh bench >/dev/null 2>&1 || true
fgpl=${FLAMEGRAPH_PL:-/usr/share/perl5/Devel/NYTProf/flamegraph.pl}
[ -f "$fgpl" ] || fgpl=""

# time_cmd N CMD...: "WALL CPU" medians in seconds over N runs of CMD
# (output discarded); CPU is user + system time of the command.
time_cmd() {
    python3 - "$@" <<'PY'
import resource, statistics, subprocess, sys, time
n, cmd = int(sys.argv[1]), sys.argv[2:]
walls, cpus = [], []
for _ in range(n):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    walls.append(time.perf_counter() - t0)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
print(f"{statistics.median(walls):.3f} {statistics.median(cpus):.3f}")
PY
}
wall() { echo "$1" | cut -d' ' -f1; }
cpu() { echo "$1" | cut -d' ' -f2; }

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); runs per figure: $runs (median)"
echo
echo "SVG rendering (folded lines from tests/flame/gen-folded.py, CPython-like stacks of depth 3-40)"
printf '  %-9s %7s %11s %10s %16s %8s\n' lines MB evalprof_s cpu_s flamegraph.pl_s ratio
for n in 10000 100000 1000000; do
    f="$work/gen-$n.folded"
    [ -s "$f" ] || python3 tests/flame/gen-folded.py "$n" 1 >"$f"
    mb=$(awk -v b="$(wc -c <"$f")" 'BEGIN { printf "%.1f", b / 1048576 }')
    t=$(time_cmd "$runs" "$evp" flamegraph -o "$work/out.svg" "$f")
    e=$(wall "$t")
    if [ -n "$fgpl" ]; then
        bruns=$runs; [ "$n" -ge 1000000 ] && bruns=1
        b=$(wall "$(time_cmd "$bruns" perl "$fgpl" "$f")")
        r=$(awk -v a="$b" -v b="$e" 'BEGIN { printf "%.1fx", a / b }')
    else
        b="n/a"; r="-"
    fi
    printf '  %-9s %7s %11s %10s %16s %8s\n' "$n" "$mb" "$e" "$(cpu "$t")" "$b" "$r"
    [ "$n" = 1000000 ] && t1m=$e
done
awk -v t="$t1m" 'BEGIN { printf "  target: 1 million lines under 2 s: %s (%.3f s wall)\n", (t < 2) ? "met" : "not met", t }'
[ -n "$fgpl" ] || echo "  (baseline missing: apt-get install libdevel-nytprof-perl, or set FLAMEGRAPH_PL)"

echo
echo "perf script collapse (the committed CPython start-up sample, repeated)"
big="$work/big.script"
if [ ! -s "$big" ]; then
    i=0
    while [ $i -lt 750 ]; do cat tests/flame/data/py312-startup.script; i=$((i + 1)); done >"$big"
fi
mb=$(awk -v b="$(wc -c <"$big")" 'BEGIN { printf "%.1f", b / 1048576 }')
e=$(wall "$(time_cmd "$runs" "$evp" perf --script "$big" -o "$work/perfout")")
a=$(wall "$(time_cmd "$runs" sh -c "LC_ALL=C awk -f tests/flame/ref-collapse.awk '$big'")")
printf '  %-38s %7s MB %8s s %8s MB/s\n' "evalprof perf --script (+SVG, table)" "$mb" "$e" \
    "$(awk -v m="$mb" -v t="$e" 'BEGIN { printf "%.0f", m / t }')"
printf '  %-38s %7s MB %8s s %8s MB/s\n' "reference awk collapse" "$mb" "$a" \
    "$(awk -v m="$mb" -v t="$a" 'BEGIN { printf "%.0f", m / t }')"
if [ -n "${STACKCOLLAPSE_PL:-}" ] && [ -f "$STACKCOLLAPSE_PL" ]; then
    p=$(wall "$(time_cmd 1 perl "$STACKCOLLAPSE_PL" "$big")")
    printf '  %-38s %7s MB %8s s %8s MB/s\n' "stackcollapse-perf.pl" "$mb" "$p" \
        "$(awk -v m="$mb" -v t="$p" 'BEGIN { printf "%.0f", m / t }')"
fi
awk -v a="$a" -v e="$e" 'BEGIN { printf "  ratio: evalprof %.1fx the reference collapse\n", a / e }'
