#!/bin/sh
# evalprof's C collapse of `perf script` text against the independent awk
# reference (ref-collapse.awk) on committed samples: the folded lines must
# be identical.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${EVALPROF:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for s in py312-startup.script; do
    LC_ALL=C awk -f "$here/ref-collapse.awk" "$here/data/$s" >"$tmp/ref.folded"
    "$EVALPROF" perf --script "$here/data/$s" -o "$tmp/out" >/dev/null || fail=1
    if diff -u "$tmp/ref.folded" "$tmp/out/perf.folded" >"$tmp/diff"; then
        echo "ok: $s ($(wc -l <"$tmp/ref.folded") folded lines agree)"
    else
        head -40 "$tmp/diff"
        echo "FAIL: $s: C collapse and awk reference differ"
        fail=1
    fi
done
exit $fail
