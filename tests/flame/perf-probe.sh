# Sourced by the perf suite's scripts: makes $tmp (removed at exit) and
# sets $perf, or skips (exit 77), saying why, where perf cannot record
# (no perf, no permission, no perf_event_open in a container).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
perf=$(command -v perf || true)
[ -n "$perf" ] || { echo "SKIP: perf is not installed (Debian package linux-perf)"; exit 77; }
if ! "$perf" record -q -e cpu-clock -o "$tmp/probe.data" -- true >"$tmp/probe.err" 2>&1; then
    echo "SKIP: perf cannot record here: $(head -n 1 "$tmp/probe.err")"
    exit 77
fi
