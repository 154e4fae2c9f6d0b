#!/bin/sh
# gen-layouts.py --check fails, naming the field, when a table differs
# from an interpreter's headers: one offset of src/attach/layouts.c
# changed in a copy.
gen=$1
pythons=$2
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
sed '0,/\[EVP_PF_TS_NEXT\] = [0-9]*/s//[EVP_PF_TS_NEXT] = 4096/' \
    "$top/src/attach/layouts.c" > "$tmp/layouts.c"
cmp -s "$top/src/attach/layouts.c" "$tmp/layouts.c" && { echo "FAIL: the copy is not changed"; exit 1; }
python3 "$gen" --check --pythons "$pythons" --table "$tmp/layouts.c" > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ $rc -eq 1 ] || { echo "FAIL: --check exited $rc, not 1, on a changed table"; exit 1; }
grep -q "value.TS_NEXT: table 4096" "$tmp/out" || { echo "FAIL: --check did not name the changed field"; exit 1; }
echo "ok: a changed offset fails the check"
