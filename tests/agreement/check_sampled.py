#!/usr/bin/env python3
"""Every view of a sampled trace gives the same function, opcode and
line times.

    check_sampled.py EVALPROF MKSAMPLED TMPDIR

Writes mksampled's trace (tests/sampled/sampgen.h), then reads summary
--funcs --ns (each function's estimated self and inclusive time), export
--format folded, the flame graph's frames (their <title> values and
depths) and export --format speedscope (its sampled profiles: stacks of
frame indexes and their weights), and checks that every function's self
and inclusive ns agree with the summary's within rounding (1 ns a line).
Then the same of opcodes (summary's ops table against the "op:NAME"
leaves of folded --ops and flamegraph --ops) and of lines (summary
--lines against the "file:line" leaves of folded --lines and flamegraph
--lines), each row's time and share: a share is of all the periods in
every view.
"""
import collections
import json
import os
import re
import subprocess
import sys

EVP, MK, TMP = sys.argv[1:4]
os.makedirs(TMP, exist_ok=True)
trace = os.path.join(TMP, "sampled.evp")
subprocess.run([MK, trace], check=True)


def run(*args):
    r = subprocess.run([EVP, *args], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL: evalprof {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def is_func(name):
    """Function frames are "name (file:line)"; leaves and roots are not."""
    return re.search(r" \(.*:\d+\)$", name) is not None


class Times:
    def __init__(self):
        self.self = collections.Counter()
        self.incl = collections.Counter()
        self.lines = 0

    def stack(self, frames, value):
        funcs = [f for f in frames if is_func(f)]
        self.lines += 1
        if funcs and is_func(frames[-1]):
            self.self[funcs[-1]] += value
        for f in set(funcs):
            self.incl[f] += value


def summary():
    out = run("summary", "--funcs", "--ns", trace)
    row = re.compile(r"^ (.+?)\s+\d+\.\d%\s+\S+\s+([\d,]+) ns\s+\d+\.\d%\s+"
                     r"\S+\s+([\d,]+) ns$")
    t = Times()
    for line in out.splitlines():
        m = row.match(line)
        if m:
            t.self[m[1]] = int(m[2].replace(",", ""))
            t.incl[m[1]] = int(m[3].replace(",", ""))
    return t


def folded():
    t = Times()
    for line in run("export", "--format", "folded", "-o", "-",
                    trace).splitlines():
        stack, value = line.rsplit(" ", 1)
        t.stack(stack.split(";"), int(value))
    return t


FRAME = re.compile(r'data-v="(\d+)" data-d="(\d+)"><title>(.*?) '
                   r'\([\d,]+ ns, ([\d.]+)%\)</title>')


def flamegraph():
    svg = os.path.join(TMP, "sampled.svg")
    run("flamegraph", "-o", svg, trace)
    nodes = []  # [name, value, depth, children's value]
    path = []
    t = Times()
    with open(svg, encoding="utf-8") as f:
        for m in FRAME.finditer(f.read()):
            name = m[3].replace("&amp;", "&").replace("&lt;", "<") \
                .replace("&gt;", ">")
            v, d = int(m[1]), int(m[2])
            del path[d:]
            if path:
                path[-1][2] += v
            path.append([name, v, 0])
            nodes.append((tuple(p[0] for p in path), path[-1]))
    for names, node in nodes:
        name, v, child = node
        t.lines += 1
        if is_func(name):
            t.self[name] += v - child
            if name not in names[:-1]:
                t.incl[name] += v
    return t


def speedscope():
    d = json.loads(run("export", "--format", "speedscope", "-o", "-", trace))
    frames = d["shared"]["frames"]

    def name(i):
        f = frames[i]
        return f"{f['name']} ({f['file']}:{f['line']})" if "file" in f \
            else f["name"]
    t = Times()
    for p in d["profiles"]:
        if p["type"] != "sampled":
            sys.exit(f"FAIL: speedscope profile of type {p['type']}")
        for s, w in zip(p["samples"], p["weights"]):
            t.stack([name(i) for i in s], w)
    return t


def leaf_rows(flag):
    """{leaf: [ns, share %]} of folded FLAG's and flamegraph FLAG's leaves
    that are not functions nor [bracketed], summed over the stacks."""
    got = {}
    fold = collections.Counter()
    for line in run("export", "--format", "folded", flag, "-o", "-",
                    trace).splitlines():
        stack, value = line.rsplit(" ", 1)
        leaf = stack.split(";")[-1]
        if not is_func(leaf) and not leaf.startswith("["):
            fold[leaf] += int(value)
    got["folded"] = {k: [v, None] for k, v in fold.items()}
    svg = os.path.join(TMP, "sampled%s.svg" % flag)
    run("flamegraph", flag, "-o", svg, trace)
    flame = {}
    with open(svg, encoding="utf-8") as f:
        for m in FRAME.finditer(f.read()):
            name = m[3]
            if is_func(name) or name.startswith("[") or ";" in name or \
                    name in ("all", "MainThread", "worker"):
                continue
            row = flame.setdefault(name, [0, 0.0])
            row[0] += int(m[1])
            row[1] += float(m[4])
    got["flamegraph"] = flame
    return got


def table_rows(out, head, row):
    """{name: [ns, share %]} of the table after the line starting with
    HEAD, each line matching ROW (groups name, share, ns)."""
    rows, inside = {}, False
    for line in out.splitlines():
        if line.startswith(head):
            inside = True
            continue
        if inside and line.startswith(" total:"):
            break
        m = row.match(line) if inside else None
        if m:
            rows[m["name"]] = [int(m["ns"].replace(",", "")),
                               float(m["share"])]
    return rows


def agree(what, ref, views):
    """Each view's rows against REF's: the same names, ns within 1 a
    stack, shares within the rounding of the flame graph's titles."""
    bad = 0
    for view, got in views.items():
        for name in set(ref) | set(got):
            a, b = ref.get(name), got.get(name)
            if a is None or b is None or abs(a[0] - b[0]) > 16 or \
                    (b[1] is not None and abs(a[1] - b[1]) > 0.1):
                print(f"FAIL: {what}: {view} {name} {b}, summary {a}")
                bad += 1
        print(f"{what}: {view}: {len(got)} rows agree with the summary")
    return bad


OPROW = re.compile(r"^ (?P<name>\S+)\s+(?P<share>\d+\.\d)%\s+\S+\s+"
                   r"(?P<ns>[\d,]+) ns$")
LINEROW = re.compile(r"^ (?P<name>\S+)\s+\S+\s+(?P<ns>[\d,]+)\s+"
                     r"(?P<share>\d+\.\d)%\s+\S+\s+[\d,]+\s+.*$")
ops = {"op:" + k: v for k, v in table_rows(
    run("summary", "--ns", trace), "ops:", OPROW).items()
    if not k.startswith("(")}
lines = table_rows(run("summary", "--lines", "--ns", trace), " file:line",
                   LINEROW)

ref = summary()
if not ref.self:
    sys.exit("FAIL: no function rows in the summary")
bad = 0
for view, got in [("folded", folded()), ("flamegraph", flamegraph()),
                  ("speedscope", speedscope())]:
    tol = max(got.lines, 1)
    for what, a, b in [("self", ref.self, got.self),
                       ("inclusive", ref.incl, got.incl)]:
        for f in set(a) | set(b):
            if abs(a[f] - b[f]) > tol:
                print(f"FAIL: {view}: {f} {what} {b[f]} ns, summary "
                      f"{a[f]} ns")
                bad += 1
    print(f"{view}: {len(got.incl)} functions agree with the summary")
if not ops or not lines:
    sys.exit(f"FAIL: no rows in summary's ops ({len(ops)}) or lines "
             f"({len(lines)})")
bad += agree("opcodes", ops, leaf_rows("--ops"))
bad += agree("lines", lines, leaf_rows("--lines"))
if bad:
    sys.exit(f"{bad} disagreements")
