#!/usr/bin/env python3
"""Every view gives the same function times for one trace.

    check.py EVALPROF TRACE

Reads summary --funcs --wide --ns, tree --format raw, export --format
folded, chrome, speedscope and pstats of TRACE, and checks that each
function's self and inclusive time agree with the summary's within 0.1%
(and 2 ns), and that the "[evalprof]" frame (the recorder's own time)
totals the summary's recorder time in every view that has it.
"""
import collections
import json
import marshal
import re
import subprocess
import sys

EVP = "[evalprof]"
PUSH = {3, 15, 18}
POP = {4, 16, 17, 19}
RECORDER = 14


def run(*args):
    r = subprocess.run([sys.argv[1], *args], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL: evalprof {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


class Times:
    """Self and inclusive ns by function, from a stream of pushes, pops and
    timed slices (inclusive counted at a function's outermost activation)."""

    def __init__(self):
        self.self = collections.Counter()
        self.incl = collections.Counter()
        self.stack = []  # [name, start, child]
        self.active = collections.Counter()

    def push(self, name, at):
        self.stack.append([name, at, 0])
        self.active[name] += 1

    def pop(self, at):
        name, start, child = self.stack.pop()
        incl = at - start
        self.self[name] += incl - child
        self.active[name] -= 1
        if not self.active[name]:
            self.incl[name] += incl
        if self.stack:
            self.stack[-1][2] += incl

    def close(self, at):
        while self.stack:
            self.pop(at)


def summary(trace):
    out = run("summary", "--funcs", "--wide", "--ns", trace)
    funcs = {}
    rec = None
    row = re.compile(r"^ (.*?)\s+([\d,]+)\s+([\d,]+) ns\s+([\d,]+) ns\s+"
                     r"([\d,]+) ns$")
    part = None
    for line in out.splitlines():
        if line.startswith("functions:"):
            part = "f"
        elif line.startswith("events:"):
            part = "e"
        m = re.match(r"^ recorder\s+([\d,]+)\s+([\d,]+) ns$", line)
        if part == "e" and m:
            rec = int(m[1].replace(",", "")) * int(m[2].replace(",", ""))
        m = row.match(line)
        if part == "f" and m:
            n = lambda s: int(s.replace(",", ""))
            funcs[m[1]] = (n(m[3]), n(m[4]))
    return funcs, rec or 0


def folded(trace):
    s, i = collections.Counter(), collections.Counter()
    for line in run("export", "--format", "folded", trace).splitlines():
        stack, ns = line.rsplit(" ", 1)
        frames = stack.split(";")
        s[frames[-1]] += int(ns)
        for f in set(frames):
            i[f] += int(ns)
    return s, i


def tree(trace):
    t = Times()
    at = 0
    out = run("tree", "--format", "raw", "--ns", "--max-depth", "0", trace)
    for line in out.splitlines():
        m = re.match(r"^\d+\.\d+ (\d+) (-?\d+) (\d+) (\S+(?: \S+)?)\s+(.*)$",
                     line)
        if not m:
            continue
        el, depth, kind, rest = int(m[1]), int(m[2]), int(m[3]), m[5]
        if kind in PUSH:
            name, _, where = rest.strip().partition(" ")
            t.push(f"{name} ({where})" if where else name, at)
        elif kind in POP and len(t.stack) > depth:
            while len(t.stack) > depth:
                t.pop(at)
        if kind == RECORDER:
            t.push(EVP, at)
            t.pop(at + el)
        at += el
    t.close(at)
    return t.self, t.incl


def func_key(name, file, line):
    return f"{name} ({file}:{line})" if file else name


def chrome(trace):
    doc = json.loads(run("export", "--format", "chrome", trace))
    t = Times()
    last = 0
    for e in doc["traceEvents"]:
        ph = e["ph"]
        at = round(e.get("ts", 0) * 1000)
        if ph == "B":
            t.push(e["name"], at)
        elif ph == "E":
            t.pop(at)
        elif ph == "X" and e["name"] == EVP:
            t.push(EVP, at)
            t.pop(at + round(e["dur"] * 1000))
        last = max(last, at)
    t.close(last)
    return t.self, t.incl


def speedscope(trace):
    doc = json.loads(run("export", "--format", "speedscope", trace))
    frames = doc["shared"]["frames"]
    names = [func_key(f["name"], f.get("file"), f.get("line", 0))
             for f in frames]
    t = Times()
    for p in doc["profiles"]:
        for e in p["events"]:
            if e["type"] == "O":
                t.push(names[e["frame"]], e["at"])
            else:
                t.pop(e["at"])
        t.close(p["endValue"])
    return t.self, t.incl


def pstats(trace, path):
    run("export", "--format", "pstats", "-o", path, trace)
    with open(path, "rb") as f:
        st = marshal.load(f)
    s, i = {}, {}
    for (file, line, name), (cc, nc, tt, ct, callers) in st.items():
        if file == "~":
            continue
        k = func_key(name, file, line)
        s[k], i[k] = round(tt * 1e9), round(ct * 1e9)
    return s, i


def close(a, b):
    return abs(a - b) <= max(2, 0.001 * max(a, b))


def main():
    trace = sys.argv[2]
    funcs, rec = summary(trace)
    if not funcs:
        sys.exit("FAIL: summary lists no functions")
    bare = collections.Counter(k.split(" (")[0] for k in funcs)
    views = {
        "folded": folded(trace),
        "tree": tree(trace),
        "chrome": chrome(trace),
        "speedscope": speedscope(trace),
        "pstats": pstats(trace, sys.argv[3] if len(sys.argv) > 3
                         else trace + ".pstats"),
    }
    bad = 0
    for view, (s, i) in views.items():
        for k, (incl, self_) in funcs.items():
            key = k
            if view == "chrome":  # names only: those no other shares
                key = k.split(" (")[0]
                if bare[key] > 1:
                    continue
            if view == "pstats" and key not in s:
                continue  # built-ins: keyed by cProfile's own names
            for what, want, got in (("self", self_, s.get(key, 0)),
                                    ("inclusive", incl, i.get(key, 0))):
                if not close(want, got):
                    bad += 1
                    print(f"FAIL: {view}: {k}: {what} {got} ns, "
                          f"summary {want} ns")
        if view != "pstats" and not close(rec, s.get(EVP, 0)):
            bad += 1
            print(f"FAIL: {view}: {EVP} {s.get(EVP, 0)} ns, summary's "
                  f"recorder time {rec} ns")
    if bad:
        sys.exit(f"FAIL: {bad} disagreement(s)")
    print(f"ok: {len(funcs)} functions agree across summary, "
          f"{', '.join(views)}; {EVP} {rec} ns")


main()
