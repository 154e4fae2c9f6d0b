#!/usr/bin/awk -f
# A deliberately simple reference collapse of `perf script` text into
# folded stacks, written from the conventions of stackcollapse-perf.pl
# (process name first, offsets stripped, "[unknown]" named after the
# module, ';' made ':', text from the first '(' dropped, quotes deleted,
# the first event type only, periods summed, output sorted by `sort`).
# It exists to check evalprof's C collapse against an independent
# implementation and as the same-run baseline of the collapse benchmark;
# Go, Java and inline-chain special cases are left out.
function flush(   i, key) {
    if (pname != "" && keep) {
        key = pname
        for (i = n; i >= 1; i--)
            key = key ";" fr[i]
        sum[key] += period
    }
    n = 0; pname = ""; keep = 0
}
/^#/ { next }
/^$/ { flush(); next }
/^[^ \t]/ {
    # header: comm (may contain spaces) pid[/tid] ... [period] event:
    line = $0
    if (!match(line, /[ \t]+[0-9]+(\/[0-9]+)?[ \t]+/)) next
    comm = substr(line, 1, RSTART - 1)
    gsub(/ /, "_", comm)
    ev = ""; period = 1
    if (match(line, /:[ \t]*[0-9]*[ \t]+[^ \t]+:[ \t]*$/)) {
        tail = substr(line, RSTART + 1)
        sub(/[ \t]*:[ \t]*$/, "", tail)
        k = split(tail, parts, /[ \t]+/)
        j = 1
        while (j <= k && parts[j] == "") j++
        if (k - j == 1) { period = parts[j] + 0; ev = parts[k] } else ev = parts[k]
    }
    if (ev != "" && want == "") want = ev
    keep = (ev == "" || ev == want)
    pname = comm
    n = 0
    next
}
{
    if (!keep) next
    line = $0
    sub(/^[ \t]+[0-9A-Za-z_]+[ \t]*/, "", line)
    # dso: the text inside the last " (...)"
    p = 0; s = line
    while ((q = index(s, " (")) > 0) { p += q; s = substr(s, q + 1) }
    if (p == 0) next
    fn = substr(line, 1, p - 1)
    mod = substr(line, p + 2)
    sub(/\)[^)]*$/, "", mod)
    sub(/\+0x[0-9a-f]+$/, "", fn)
    if (substr(fn, 1, 1) == "(") next
    if (fn == "[unknown]") {
        if (mod != "[unknown]") { m = mod; sub(/.*\//, "", m); fn = "[" m "]" }
        else fn = "[unknown]"
    }
    gsub(/;/, ":", fn)
    q = index(fn, "(")
    if (q > 0) fn = substr(fn, 1, q - 1)
    gsub(/["']/, "", fn)
    fr[++n] = fn
}
END {
    flush()
    for (k in sum) print k " " sum[k] | "LC_ALL=C sort"
}
