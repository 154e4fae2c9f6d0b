#!/bin/sh
# Golden tests for flame graphs and the perf side: runs one case of
# tests/flame/golden/<case>/ and compares what it wrote with the expected
# files beside it.  EVALPROF_BLESS=1 rewrites the expected files instead
# (review the diff before committing).
#
#   golden.sh CASE-DIR      (EVALPROF: the binary; DATA: tests/flame/data)
#
# A case holds:
#   cmd     evalprof's arguments, run by sh in a scratch directory that
#           holds copies of the case's files and of tests/flame/data
#   check   lines "stdout EXPECTED", "stderr EXPECTED", "file PATH EXPECTED",
#           "svg PATH EXPECTED" (SVG compared in svgcanon.py's form),
#           "status N" (expected exit status, default 0),
#           "one-error-line" (stderr is one "evalprof: ..." line)
set -u
case_dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
: "${EVALPROF:?set EVALPROF to the evalprof binary}"
data=${DATA:-$here/data}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$data"/. "$tmp"/
cp -r "$case_dir"/. "$tmp"/
cd "$tmp" || exit 1
set -f
# shellcheck disable=SC2046
eval "\"$EVALPROF\" $(cat cmd)" >stdout.txt 2>stderr.txt
status=$?
set +f
fail=0
want_status=0
grep -q '^status ' check && want_status=$(awk '$1=="status"{print $2}' check)
if [ "$status" != "$want_status" ]; then
    echo "FAIL: exit status $status, expected $want_status"
    cat stderr.txt
    fail=1
fi
compare() { # got expected-name
    if [ "${EVALPROF_BLESS:-}" = 1 ]; then
        cp "$1" "$case_dir/$2"
        echo "blessed $2"
    elif ! diff -u "$case_dir/$2" "$1"; then
        echo "FAIL: $2 differs (EVALPROF_BLESS=1 to accept)"
        fail=1
    fi
}
while read -r kind a b; do
    case "$kind" in
    stdout) compare stdout.txt "$a" ;;
    stderr) compare stderr.txt "$a" ;;
    one-error-line)
        if [ "$(wc -l <stderr.txt)" != 1 ] || ! grep -q '^evalprof: ' stderr.txt; then
            echo "FAIL: expected one 'evalprof: ...' error line, got:"
            cat stderr.txt
            fail=1
        fi ;;
    file) [ -f "$a" ] || { echo "FAIL: $a not written"; fail=1; continue; }
          compare "$a" "$b" ;;
    svg) [ -f "$a" ] || { echo "FAIL: $a not written"; fail=1; continue; }
         python3 "$here/svgcanon.py" "$a" >"$a.canon" || { fail=1; continue; }
         compare "$a.canon" "$b" ;;
    status|'') ;;
    *) echo "golden.sh: unknown check '$kind'"; fail=1 ;;
    esac
done <check
[ $fail = 0 ] && echo "ok: $(basename "$case_dir")"
exit $fail
