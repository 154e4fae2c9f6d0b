#!/bin/sh
# The same stacks give the same SVG bytes, whatever the order of the input
# lines, and from one run to the next; the output is well-formed XML.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${EVALPROF:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/gen-folded.py" 3000 7 >"$tmp/a.folded"
# the same lines reversed, and every stack split in two lines
awk '{ a[NR] = $0 } END { for (i = NR; i >= 1; i--) print a[i] }' "$tmp/a.folded" >"$tmp/b.folded"
awk '{ v = $NF; sub(/ [0-9]+$/, ""); h = int(v / 2); print $0 " " h; print $0 " " v - h }' "$tmp/a.folded" >"$tmp/c.folded"
fail=0
for f in a b c; do
    "$EVALPROF" flamegraph -o "$tmp/$f.svg" "$tmp/$f.folded" || fail=1
done
"$EVALPROF" flamegraph -o "$tmp/a2.svg" "$tmp/a.folded" || fail=1
cmp "$tmp/a.svg" "$tmp/a2.svg" || { echo "FAIL: two runs differ"; fail=1; }
cmp "$tmp/a.svg" "$tmp/b.svg" || { echo "FAIL: reversed input differs"; fail=1; }
cmp "$tmp/a.svg" "$tmp/c.svg" || { echo "FAIL: split input differs"; fail=1; }
python3 "$here/svgcanon.py" "$tmp/a.svg" >/dev/null || fail=1
# Differential graphs too: BASE and NEW in any line order, split or not.
python3 "$here/gen-folded.py" 3000 8 >"$tmp/n.folded"
awk '{ a[NR] = $0 } END { for (i = NR; i >= 1; i--) print a[i] }' "$tmp/n.folded" >"$tmp/r.folded"
"$EVALPROF" flamegraph --diff -o "$tmp/d1.svg" "$tmp/a.folded" "$tmp/n.folded" || fail=1
"$EVALPROF" flamegraph --diff -o "$tmp/d2.svg" "$tmp/a.folded" "$tmp/n.folded" || fail=1
"$EVALPROF" flamegraph --diff -o "$tmp/d3.svg" "$tmp/b.folded" "$tmp/r.folded" || fail=1
"$EVALPROF" flamegraph --diff -o "$tmp/d4.svg" "$tmp/c.folded" "$tmp/r.folded" || fail=1
for f in d2 d3 d4; do
    cmp "$tmp/d1.svg" "$tmp/$f.svg" || { echo "FAIL: differential $f differs"; fail=1; }
done
"$EVALPROF" flamegraph --diff --negate -o "$tmp/d5.svg" "$tmp/a.folded" "$tmp/n.folded" || fail=1
cmp -s "$tmp/d1.svg" "$tmp/d5.svg" && { echo "FAIL: --negate drew the same"; fail=1; }
python3 "$here/svgcanon.py" "$tmp/d5.svg" >/dev/null || fail=1
# A write error is reported, and a device is written in place, never
# replaced by renaming a temporary file over it.
if [ -c /dev/full ]; then
    if "$EVALPROF" flamegraph -o /dev/full "$tmp/a.folded" 2>/dev/null; then
        echo "FAIL: writing to /dev/full succeeded"; fail=1
    fi
    [ -c /dev/full ] || { echo "FAIL: /dev/full was replaced"; fail=1; }
    if "$EVALPROF" flamegraph -o - "$tmp/a.folded" >/dev/full 2>/dev/null; then
        echo "FAIL: a full standard output went unreported"; fail=1
    fi
fi
[ $fail = 0 ] && echo "ok: deterministic ($(grep -c '<g data-s' "$tmp/a.svg") frames)"
exit $fail
