# Shared set-up of the e2e-modea test scripts (sourced, POSIX sh).
#
#   . lib.sh VERSION BUILD_DIR CHECK_TRACE
#
# Sets PY (the instrumented interpreter of VERSION), CHECK (check-trace),
# T (a scratch directory removed at exit), HERE (this directory) and
# PROGRAMS.  When the interpreter is missing it exits 77 (skip) if its
# source could not be obtained on this machine (tests/prepare.d/cpython.sh
# records why), and 1 (fail) if it could have been built but was not.
VER=$1
BUILD=$2
CHECK=$3
HERE=$(cd "$(dirname "$0")" && pwd)
PROGRAMS=$HERE/programs
PY=$BUILD/cpython/$VER/evalprof/python
status_file=$BUILD/cpython/$VER/evalprof.status

if [ ! -x "$PY" ]; then
    why=$(cat "$status_file" 2>/dev/null)
    case "$why" in
    unavailable:*) echo "SKIP: CPython $VER source not obtainable here (${why#unavailable: })"; exit 77 ;;
    "") echo "FAIL: $PY missing and tests/prepare.d/cpython.sh did not run (make test runs it)"; exit 1 ;;
    *) echo "FAIL: $PY missing: $why"; exit 1 ;;
    esac
fi
if [ ! -x "$CHECK" ]; then
    echo "FAIL: check-trace not built ($CHECK)"
    exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/evp-modea-XXXXXX")
trap 'umount "$T/tiny" 2>/dev/null; rm -rf "$T"' EXIT INT TERM
# The tests decide themselves what is traced.
unset EVALPROF EVALPROF_EVENTS EVALPROF_FORK EVALPROF_CLOCK

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
ok() {
    echo "ok: $*"
}
finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$failures check(s) failed"
        exit 1
    fi
    exit 0
}

# value KEY FILE: the value of "KEY value" in check-trace output FILE.
value() {
    awk -v k="$1" '{ n = split(k, w, " ") } {
        match_ = 1
        for (i = 1; i <= n; i++) if ($i != w[i]) match_ = 0
        if (match_) { print $(n + 1); exit } }' "$2"
}
