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
