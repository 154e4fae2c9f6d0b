#!/bin/sh
# `evalprof perf` explains perf's failures in one line (suite 'flame'):
# perf missing, perf refusing for lack of permission, perf not matching
# the kernel, an unsupported event.  Stand-in perf programs print what the
# real one prints in those cases, so this runs anywhere.
set -u
: "${EVALPROF:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
fake() { # name exit-status message...
    n=$1; st=$2; shift 2
    {
        echo '#!/bin/sh'
        for l in "$@"; do printf "echo '%s' >&2\n" "$l"; done
        echo "exit $st"
    } >"$tmp/$n"
    chmod +x "$tmp/$n"
}
expect() { # perf-path expected-substring
    if "$EVALPROF" perf --perf "$1" -o "$tmp/out" -- true >"$tmp/o" 2>"$tmp/e"; then
        echo "FAIL: $1: succeeded"; fail=1; return
    fi
    if [ "$(wc -l <"$tmp/e")" != 1 ] || ! grep -q "$2" "$tmp/e"; then
        echo "FAIL: $1: expected one line with '$2', got:"; cat "$tmp/e"; fail=1
    else
        echo "ok: $(cat "$tmp/e")"
    fi
}
fake paranoid 255 "Error:" \
    "Access to performance monitoring and observability operations is limited." \
    "Consider adjusting /proc/sys/kernel/perf_event_paranoid setting to open"
fake kernel 1 "E: linux-perf-6.1 is not installed." "perf not found for kernel 6.1.0"
fake event 129 "event syntax error: 'cpu-clock'" "                     \\___ parser error"
expect /nonexistent/perf "not found"
expect "$tmp/paranoid" "not permitted to record"
expect "$tmp/kernel" "does not match this kernel"
expect "$tmp/event" "cannot record this event"
# --ops reads symbol offsets from perf.data: refused on --script text
printf 'python 1 1.0: 1 cpu-clock:\n\t1 main (/x)\n\n' >"$tmp/s.txt"
if "$EVALPROF" perf --ops --script "$tmp/s.txt" -o "$tmp/out" >"$tmp/o" 2>"$tmp/e"; then
    echo "FAIL: --ops --script: succeeded"; fail=1
elif [ "$(wc -l <"$tmp/e")" != 1 ] || ! grep -q -e "--ops needs a command\|not built in" "$tmp/e"; then
    echo "FAIL: --ops --script: expected one line, got:"; cat "$tmp/e"; fail=1
fi
exit $fail
