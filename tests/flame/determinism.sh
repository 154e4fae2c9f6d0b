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
[ $fail = 0 ] && echo "ok: deterministic ($(grep -c '<g data-s' "$tmp/a.svg") frames)"
exit $fail
