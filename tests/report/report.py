#!/usr/bin/env python3
"""The HTML report in headless Chromium (suite 'report').

Records a small program whose functions have hostile names (markup,
"onload=", "</svg>", quotes, control bytes) with the stock-interpreter
recorder, takes tests/flame/data/hostile.trace and the golden sampled
traces as well, writes `evalprof report` for each run and for two runs,
and has check.mjs load
each page from file:// with every request refused.  Then the page's
figures are compared with what `evalprof summary` and `evalprof diff`
print for the same traces: the same rows in the same order, the same
numbers to the character.

usage: report.py   (EVALPROF: the binary; FLAME_NODE_DIR: playwright-core)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

EVP = os.environ["EVALPROF"]
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "flame", "data")
NODE_DIR = os.environ.get("FLAME_NODE_DIR", "")
failures = []

HOSTILE = [
    "<script>window.evpPwned=1</script>",
    '"onload="window.evpPwned=2',
    "</svg><img src=x onerror=\"window.evpPwned=3\">",
    "</script><script>window.evpPwned=4</script>",
    "it's \"q\" & \\ \x01\x1b[31m ]]> </iframe>",
]

PROG = """
if FIB > 10:  # NEW calls functions BASE does not, first
    def extra():
        return 1
    def extra2():
        return 2
    extra(); extra2()

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def work(k):
    s = 0
    for i in range(k):
        s += i * i
    return s

def hostile():
    return sum(range(50))

for nm in NAMES:
    g = type(hostile)(hostile.__code__.replace(co_name=nm, co_qualname=nm), globals())
    g()
fib(FIB)
work(300)
"""


def check(cond, what):
    if not cond:
        failures.append(what)
    print(("ok: " if cond else "FAIL: ") + what)


def run(*args):
    p = subprocess.run([EVP, *args], capture_output=True)
    if p.returncode != 0:
        check(False, f"evalprof {' '.join(args)}: exit {p.returncode}: "
              + p.stderr.decode(errors="replace"))
    return p.stdout.decode()


def term(s):
    """A name as the terminal tables show it (src/util/esc.c)."""
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7f else c for c in s)


def split_row(line, nfig):
    """NAME and NFIG figures, taken from the right (names hold spaces)."""
    fig = r"([+-]?[\d,]+(?:\.\d)? ?(?:µs|ns)?|[+-]?[\d.]+%|new)"
    m = re.match(r"^ (.*?)" + r"\s+" .join([""] + [fig] * nfig) + r"\s*$", line)
    return [m.group(1)] + [m.group(i + 2).strip() for i in range(nfig)] if m else None


def rows_of(text, title, nfig):
    m = re.search(r"^" + re.escape(title) + r":\n\n[^\n]*\n-[- ]*\n(.*?)\n(?:-[- ]*\n|\n|$)",
                  text, re.S | re.M)
    out = []
    if m:
        for line in m.group(1).splitlines():
            r = split_row(line, nfig)
            if r:
                out.append(r)
    return out


def compare_run(trace, page, tag):
    # the page writes µs with one decimal, as summary --us does
    summ = run("summary", "--us", "--funcs", "--wide", "--sort", "total", trace)
    mean = run("summary", "--us", "--sort", "elapsed", trace)
    t = page["tables"]
    # header facts
    facts = page["facts"][0]
    el = re.search(r"^elapsed: +(.*)$", summ, re.M).group(1)
    check(facts.get("elapsed") == el, f"{tag}: elapsed {facts.get('elapsed')!r} == summary's {el!r}")
    m = re.search(r"^overhead: +(.*)$", summ, re.M)
    if m:
        check(facts.get("overhead") == m.group(1), f"{tag}: overhead line as the summary's")
    m = re.search(r"^producer: +(.*)$", summ, re.M)
    if m:
        check(facts.get("producer") == m.group(1), f"{tag}: producer line as the summary's")
    m = re.search(r"^note: this producer cannot emit (.*?);", summ, re.M)
    if m:
        check(any(m.group(1) in n for n in page["notes"]), f"{tag}: the note on what the producer cannot see")
    # time by phase: summary's events table sorted by total, row for row
    ev = rows_of(summ, "events", 4)
    got = [r[:5] for r in t["t-phases"]["rows"]]
    want = [[r[0], r[1], r[2], r[3], r[4]] for r in ev]
    check(len(want) > 3 and got == want, f"{tag}: {len(got)} phase rows equal the summary's"
          + ("" if got == want else f"\n  page {got}\n  summary {want}"))
    # top opcodes by total and by mean
    ops = rows_of(summ, "ops", 4)
    if ops:
        got = t["t-ops-total"]["rows"]
        want = [[r[0], r[1], r[2], r[3], r[4]] for r in ops[:20]]
        check(got == want, f"{tag}: top {len(got)} opcodes by total equal the summary's"
              + ("" if got == want else f"\n  page {got}\n  summary {want}"))
        mops = rows_of(mean, "ops", 2)
        got = [[r[0], r[1], r[2]] for r in t["t-ops-mean"]["rows"]]
        want = [r for r in mops[:20]]
        check(got == want, f"{tag}: top {len(got)} opcodes by mean equal the summary's"
              + ("" if got == want else f"\n  page {got}\n  summary {want}"))
    # functions: by "name (file:line)", whole with --wide
    funcs = {r[0]: r[1:] for r in rows_of(summ, "functions", 4)}
    n = 0
    for r in t["t-funcs"]["rows"]:
        key = term(r[0] + (f" ({r[1]})" if r[1] else ""))
        if key not in funcs:
            continue
        n += 1
        check(r[2:] == funcs[key], f"{tag}: {key!r}: {r[2:]} == summary's {funcs[key]}")
    check(n >= 3 and len(t["t-funcs"]["rows"]) == len(funcs),
          f"{tag}: {len(t['t-funcs']['rows'])} function rows ({n} compared), summary has {len(funcs)}")


def compare_diff(a, b, page):
    d = run("diff", "--us", "--funcs", "--wide", a, b)
    t = page["tables"]
    for title, tid in (("events", "t-diff-phases"), ("ops", "t-diff-ops"),
                       ("functions (inclusive time)", "t-diff-funcs")):
        want, seen = {}, []
        for line in re.search(r"^" + re.escape(title) + r":\n\n[^\n]*\n-[- ]*\n(.*?)\n\n", d,
                              re.S | re.M).group(1).splitlines():
            r = split_row(line, 6) or split_row(line, 5)
            if r:
                want[r[0]] = r[1:]
                seen.append(r[0])
        check(len(seen) == len(set(seen)), f"`evalprof diff` {title}: one row per name")
        got, n = {}, 0
        for r in t[tid]["rows"]:
            key = term(r[0])
            got[key] = [c for c in r[1:] if c]
        for k, v in want.items():
            if k.endswith(".."):
                continue  # cut to 70 columns
            n += 1
            if got.get(k) != v:
                check(False, f"diff {tid} {k!r}: page {got.get(k)} != diff's {v}")
        check(n >= 3 and len(got) == len(want), f"diff {tid}: {len(got)} rows, {n} equal to `evalprof diff`'s")
    m = re.search(r"^change: +(.*)$", d, re.M)
    if m:
        check(page.get("change") == "change: " + m.group(1),
              f"elapsed change {page.get('change')!r} as the diff's")


def browse(html, tmp, name, term="fib"):
    out = os.path.join(tmp, name + ".json")
    p = subprocess.run(["node", os.path.join(NODE_DIR, "report-check.mjs"), html, out],
                       capture_output=True, text=True, cwd=NODE_DIR,
                       env=dict(os.environ, REPORT_FILTER=term))
    print(p.stdout, end="")
    if p.returncode == 77:
        print(p.stdout.strip().splitlines()[-1])
        sys.exit(77)
    check(p.returncode == 0, f"{name}: browser checks (exit {p.returncode}) {p.stderr[-500:]}")
    return json.load(open(out)) if os.path.exists(out) else None


def main():
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not os.access(chromium, os.X_OK):
        print(f"SKIP: no Chromium at {chromium} (tools/bootstrap.sh browser installs Debian's chromium)")
        return 77
    if not shutil.which("node"):
        print("SKIP: Node.js is not installed (needed to drive Chromium)")
        return 77
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "playwright-core")):
        print(f"SKIP: playwright-core is not installed in {NODE_DIR!r} (tests/prepare.d/browser.sh)")
        return 77
    shutil.copy(os.path.join(HERE, "check.mjs"), os.path.join(NODE_DIR, "report-check.mjs"))
    shutil.copy(os.path.join(HERE, "..", "flame", "browser", "harness.mjs"), NODE_DIR)
    tmp = tempfile.mkdtemp()
    try:
        traces = []
        for i, fib in enumerate((10, 12)):
            prog = os.path.join(tmp, "prog.py")  # one path: functions match
            with open(prog, "w") as f:
                f.write(f"NAMES = {HOSTILE!r}\nFIB = {fib}\n" + PROG)
            tr = os.path.join(tmp, f"run{i}.evp")
            p = subprocess.run([EVP, "record", "-q", "-o", tr, "--", "python3", prog],
                               capture_output=True, text=True)
            if p.returncode == 0:
                traces.append(tr)
            else:
                print(f"note: recording failed ({p.stderr.strip()[:200]}); the text trace only")
                break
        runs = [os.path.join(DATA, "hostile.trace")] + traces
        for i, tr in enumerate(runs):
            html = os.path.join(tmp, f"r{i}.html")
            run("report", "-o", html, tr)
            page = browse(html, tmp, f"r{i}")
            if not page:
                continue
            compare_run(tr, page, os.path.basename(tr))
            names = [r[0] for r in page["tables"]["t-funcs"]["rows"]]
            if tr in traces:
                for h in HOSTILE:
                    check(term(h) in names, f"hostile name {term(h)!r} shown as text")
        if len(traces) == 2:
            html = os.path.join(tmp, "diff.html")
            run("report", "-o", html, *traces)
            run("report", "-o", html + "2", *traces)
            check(open(html, "rb").read() == open(html + "2", "rb").read(),
                  "the same traces give the same page, byte for byte")
            page = browse(html, tmp, "diff")
            if page:
                compare_diff(*traces, page)
                names = [r[0] for r in page["tables"]["t-diff-funcs"]["rows"]]
                check(any(term(HOSTILE[2]) in n for n in names), "hostile names in the diff table as text")
        # sampled traces: the page of one and of two runs (their figures:
        # sampled.py), their scripts, sorting and filtering
        golden = os.path.join(HERE, "..", "golden")
        sa = os.path.join(golden, "sampled-summary", "a.evp")
        sb = os.path.join(golden, "sampled-diff", "b.evp")
        for name, args in (("sampled", [sa]), ("sampled-diff", [sa, sb])):
            html = os.path.join(tmp, name + ".html")
            run("report", "-o", html, *args)
            page = browse(html, tmp, name, term="hot")
            if page:
                want = "t-where" if len(args) == 1 else "t-diff-where"
                check(want in page["tables"] and
                      len(page["tables"][want]["rows"]) >= 3,
                      f"{name}: the states of the sampled threads")
        # runs whose function sets differ: one row per function in both
        # the diff view and the page (BASE a, b; NEW c, a, b)
        pair = []
        for i, src in enumerate(("def a():\n    return 1\ndef b():\n    return 2\na(); b()\n",
                                 "def c():\n    return 1\ndef a():\n    return 1\n"
                                 "def b():\n    return 2\nc(); a(); b()\n")):
            prog = os.path.join(tmp, "q.py")
            with open(prog, "w") as f:
                f.write(src)
            tr = os.path.join(tmp, f"q{i}.evp")
            if subprocess.run([EVP, "record", "-q", "-o", tr, "--", "python3", prog],
                              capture_output=True).returncode == 0:
                pair.append(tr)
        if len(pair) == 2:
            html = os.path.join(tmp, "q.html")
            run("report", "-o", html, *pair)
            page = browse(html, tmp, "q", term="a (")
            if page:
                compare_diff(*pair, page)
        # a damaged trace: read up to the damage, the page says what was lost
        if traces:
            cut = os.path.join(tmp, "cut.evp")
            with open(traces[0], "rb") as f, open(cut, "wb") as g:
                g.write(f.read()[: os.path.getsize(traces[0]) * 2 // 3])
            html = os.path.join(tmp, "cut.html")
            p = subprocess.run([EVP, "report", "-o", html, cut], capture_output=True, text=True)
            page = open(html, encoding="utf-8").read() if os.path.exists(html) else ""
            check(p.returncode == 0 and '<li class="warning">warning: ' in page,
                  f"a cut trace: exit {p.returncode}, the reader's warning on the page")
        # bad input: one line, non-zero, nothing written
        p = subprocess.run([EVP, "report", "-o", os.path.join(tmp, "bad.html"), "/nonexistent.evp"],
                           capture_output=True, text=True)
        check(p.returncode == 1 and len(p.stderr.splitlines()) == 1 and
              not os.path.exists(os.path.join(tmp, "bad.html")),
              f"a missing trace: exit {p.returncode}, {p.stderr.strip()!r}, nothing written")
    finally:
        shutil.rmtree(tmp)
    if failures:
        print(f"{len(failures)} report checks failed")
        return 1
    print("ok: the HTML report shows the summary's and the diff's figures, sorts, filters and escapes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
