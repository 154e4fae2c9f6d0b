#!/usr/bin/env python3
"""The HTML report of sampled traces, read from its markup (suite
'report'; no browser needed).

    sampled.py EVALPROF GOLDEN_DIR

The page of one sampled trace (the golden sampled-summary's) has the
summary's lines on the samples among its facts, and its tables where,
phases, opcodes and functions hold the rows `evalprof summary --funcs
--us` prints: the same names, shares, 95% intervals and estimated times,
in the same order; it has the flame graph of the samples.  The page of
two sampled runs (variants A and B) holds `evalprof diff --funcs`'s
shares, changes, significance marks and z of every row.  A sampled run
beside a trace of events is refused in one line, exit 1, and no page is
left behind.
"""
import html
import os
import re
import subprocess
import sys
import tempfile

EVP, GOLDEN = sys.argv[1:3]
A = os.path.join(GOLDEN, "sampled-summary", "a.evp")
B = os.path.join(GOLDEN, "sampled-diff", "b.evp")
EXACT = os.path.join(GOLDEN, "funcs-nesting", "nesting.trace")
failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
    print(("ok: " if ok else "FAIL: ") + what)


def run(*args, status=0):
    p = subprocess.run([EVP, *args], capture_output=True, text=True)
    if p.returncode != status:
        print(f"FAIL: evalprof {' '.join(args)}: exit {p.returncode}: "
              f"{p.stderr}")
        sys.exit(1)
    return p


def cells(row):
    return [html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def table(page, tid):
    m = re.search(r'<table class="data sortable" id="%s">.*?<tbody>(.*?)'
                  r"</tbody>" % tid, page, re.S)
    return [cells(r) for r in re.findall(r"<tr>(.*?)</tr>", m.group(1),
                                         re.S)] if m else None


def facts(page):
    m = re.search(r'<table class="facts">(.*?)</table>', page, re.S)
    return {html.unescape(k): html.unescape(v) for k, v in
            re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", m.group(1))}


SHARE = r"(\d+\.\d%)\s+(\d+\.\d-\d+\.\d%)\s+([\d,]+\.\d µs)"


def summary_table(text, title, two=False):
    """The rows of summary's table TITLE: name, then per column share,
    interval and estimate."""
    m = re.search(r"^" + re.escape(title) + r".*?:\n\n[^\n]*\n-[- ]*\n(.*?)\n-",
                  text, re.S | re.M)
    row = re.compile(r"^ (.+?)\s+" + SHARE + (r"\s+" + SHARE if two else "")
                     + r"$")
    out = []
    for line in m.group(1).splitlines():
        r = row.match(line)
        if r:
            out.append([g for g in r.groups()])
    return out


tmp = tempfile.mkdtemp(prefix="evp-report-sampled-")
page_path = os.path.join(tmp, "a.html")
run("report", "-o", page_path, A)
page = open(page_path, encoding="utf-8").read()
summ = run("summary", "--funcs", "--us", "--sort", "total", "--wide",
           A).stdout
f = facts(page)
for key in ("sampled", "est. time", "missed", "estimate"):
    m = re.search(r"^" + re.escape(key) + r": +(.*)$", summ, re.M)
    check(m and f.get(key) == m.group(1),
          f"fact {key!r}: {f.get(key)!r}, summary {m and m.group(1)!r}")
for tid, title in (("t-where", "where"), ("t-phases", "loop phases"),
                   ("t-ops", "ops")):
    got, want = table(page, tid), summary_table(summ, title)
    # summary sorts its opcodes by periods as the page does; "where" and
    # phases keep their own order
    check(got == want and len(want) >= 2,
          f"{tid}: {len(got or [])} rows equal summary's {title!r}"
          + ("" if got == want else f"\n  page {got}\n  summary {want}"))
got = [[r[0] + " (" + r[1] + ")"] + r[2:] for r in table(page, "t-funcs")]
want = summary_table(summ, "functions", two=True)
check(got == want and len(want) == 4,
      f"t-funcs: {len(got)} rows equal summary's functions"
      + ("" if got == want else f"\n  page {got}\n  summary {want}"))
check('id="flame-frame"' in page, "the page has the samples' flame graph")

# two sampled runs: diff's shares, changes and z
page_path = os.path.join(tmp, "ab.html")
run("report", "-o", page_path, A, B)
page = open(page_path, encoding="utf-8").read()
d = run("diff", "--funcs", A, B).stdout
for tid, title in (("t-diff-where", "where (state of the sampled thread)"),
                   ("t-diff-ops", "ops"),
                   ("t-diff-funcs", "functions (self: the leaf frame)")):
    m = re.search(r"^" + re.escape(title) + r":\n\n[^\n]*\n-[- ]*\n(.*?)\n-",
                  d, re.S | re.M)
    want = {}
    for line in m.group(1).splitlines():
        r = re.match(r"^ (.+?)\s+(\d+\.\d%)\s+(\d+\.\d%)\s+([+-]\d+\.\d pp)"
                     r"( \*)?\s+([+-]\d+\.\d)", line)
        if r:
            want[r[1]] = [r[2], r[3], r[4] + (r[5] or ""), r[6]]
    got = {r[0]: r[1:5] for r in table(page, tid)}
    check(got == want and len(want) >= 3,
          f"{tid}: {len(got)} rows equal diff's {title!r}"
          + ("" if got == want else f"\n  page {got}\n  diff {want}"))
check('id="diff-flame-frame"' in page, "the differential flame graph")

# a sampled trace beside one of events: refused, nothing written
out = os.path.join(tmp, "mixed.html")
p = run("report", "-o", out, A, EXACT, status=1)
check(len(p.stderr.strip().splitlines()) == 1 and "sampled" in p.stderr and
      not os.path.exists(out), f"a mixed pair refused: {p.stderr.strip()!r}")
subprocess.run(["rm", "-rf", tmp])
sys.exit(1 if failures else 0)
