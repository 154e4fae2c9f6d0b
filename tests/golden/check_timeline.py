#!/usr/bin/env python3
"""The timeline exports against the rules their readers impose.

    check_timeline.py EVALPROF SYNTHETIC GOLDEN_DIR

For each trace (the golden nesting, threads and hostile-names traces, and
a synthetic .evp with every loop phase), each of --ops/--phases on and
off, whole and filtered (a window across frames, a depth):

  speedscope  valid JSON in speedscope's file format: every profile
              "evented" in nanoseconds, its events in time order, every
              close matching the innermost open frame, nothing left open,
              frame indexes inside the shared table, endValue >= every
              event; every frame named by a string;
  chrome      valid JSON (Trace Event Format): per thread, every "E" closes
              a "B" before it, nothing left open, complete slices with a
              duration >= 0.

A sampled trace (the golden sampled-summary's), each of --ops/--phases
on and off, one --thread, a window, a function and a depth: chrome's
sample events ("P") in time order
per thread, each naming a stackFrames entry whose parents are entries,
its slices by the rules above; speedscope's sampled profiles.

Prints one line per check and exits 1 when any fails.
"""
import json
import os
import subprocess
import sys
import tempfile

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)


def check_speedscope(name, doc):
    if doc.get("$schema") != "https://www.speedscope.app/file-format-schema.json":
        return fail("%s: $schema missing" % name)
    frames = doc["shared"]["frames"]
    for f in frames:
        if not isinstance(f.get("name"), str):
            return fail("%s: frame without a name: %r" % (name, f))
    if not doc["profiles"]:
        return fail("%s: no profiles" % name)
    nev = 0
    for p in doc["profiles"]:
        if p["type"] != "evented" or p["unit"] != "nanoseconds":
            return fail("%s: profile %r is not evented ns" % (name, p["name"]))
        stack, last = [], p["startValue"]
        for e in p["events"]:
            nev += 1
            if not 0 <= e["frame"] < len(frames):
                return fail("%s: frame %d out of range" % (name, e["frame"]))
            if e["at"] < last:
                return fail("%s: event at %d before %d" % (name, e["at"], last))
            last = e["at"]
            if e["type"] == "O":
                stack.append(e["frame"])
            elif e["type"] == "C":
                if not stack or stack[-1] != e["frame"]:
                    return fail("%s: close of %d, innermost open %r"
                                % (name, e["frame"], stack[-1:]))
                stack.pop()
            else:
                return fail("%s: event type %r" % (name, e["type"]))
        if stack:
            return fail("%s: %d frames left open" % (name, len(stack)))
        if p["endValue"] < last:
            return fail("%s: endValue %d < %d" % (name, p["endValue"], last))
    print("ok: %s: %d profiles, %d events, %d frames"
          % (name, len(doc["profiles"]), nev, len(frames)))


def check_chrome(name, doc):
    open_ = {}
    n = 0
    for e in doc["traceEvents"]:
        n += 1
        key = (e.get("pid"), e.get("tid"))
        if e["ph"] == "B":
            open_.setdefault(key, []).append(e["ts"])
        elif e["ph"] == "E":
            if not open_.get(key):
                return fail("%s: E without B on %r" % (name, key))
            if e["ts"] < open_[key].pop():
                return fail("%s: slice ends before it begins" % name)
        elif e["ph"] == "X" and e["dur"] < 0:
            return fail("%s: negative duration" % name)
    left = sum(len(v) for v in open_.values())
    if left:
        return fail("%s: %d slices left open" % (name, left))
    print("ok: %s: %d trace events" % (name, n))


def check_chrome_sampled(name, doc):
    frames = doc.get("stackFrames")
    if not isinstance(frames, dict) or not frames:
        return fail("%s: no stackFrames" % name)
    for k, f in frames.items():
        if not isinstance(f.get("name"), str) or \
                ("parent" in f and f["parent"] not in frames):
            return fail("%s: stack frame %s: %r" % (name, k, f))
    last, n = {}, 0
    for e in doc["traceEvents"]:
        if e["ph"] != "P":
            continue
        n += 1
        key = (e.get("pid"), e.get("tid"))
        if str(e.get("sf")) not in frames:
            return fail("%s: sample names no stack frame: %r" % (name, e))
        if e["ts"] < last.get(key, 0):
            return fail("%s: samples out of time order on %r" % (name, key))
        last[key] = e["ts"]
    if not n:
        return fail("%s: no sample events" % name)
    check_chrome(name, doc)


def check_speedscope_sampled(name, doc):
    frames = doc["shared"]["frames"]
    for p in doc["profiles"]:
        if p["type"] != "sampled" or len(p["samples"]) != len(p["weights"]):
            return fail("%s: profile %r" % (name, p.get("name")))
        for st in p["samples"]:
            if any(i >= len(frames) for i in st):
                return fail("%s: a frame index outside the table" % name)
    print("ok: %s: %d profiles" % (name, len(doc["profiles"])))


def export_json(evalprof, fmt, opts, trace, name):
    p = subprocess.run([evalprof, "export", "--format", fmt] + opts + [trace],
                       capture_output=True)
    if p.returncode != 0:
        fail("%s: exit %d: %s" % (name, p.returncode,
                                  p.stderr.decode(errors="replace")))
        return None
    try:
        return json.loads(p.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        fail("%s: not JSON: %s" % (name, e))
        return None


def main():
    evalprof, synthetic, golden = sys.argv[1:4]
    tmp = tempfile.mkdtemp(prefix="evp-timeline-")
    hostile = os.path.join(tmp, "hostile.trace")
    subprocess.run([sys.executable, os.path.join(golden,
                    "gen_hostile_names.py"), hostile], check=True)
    synth = os.path.join(tmp, "synthetic.evp")
    subprocess.run([synthetic, "-n", "20000", "-o", synth], check=True,
                   stdout=subprocess.DEVNULL)
    traces = [os.path.join(golden, "funcs-nesting", "nesting.trace"),
              os.path.join(golden, "threads-tree", "threads.trace"),
              hostile, synth]
    for trace in traces:
        for opts in [o + f for o in ([], ["--ops"], ["--phases"],
                                     ["--ops", "--phases"])
                     for f in ([], ["--from", "0.00002", "--to", "0.00006"],
                               ["--from", "0.0001", "--to", "0.0004"],
                               ["--max-depth", "2"])]:
            for fmt, check in (("speedscope", check_speedscope),
                               ("chrome", check_chrome)):
                name = "%s %s %s" % (fmt, os.path.basename(trace),
                                     " ".join(opts) or "(frames)")
                p = subprocess.run([evalprof, "export", "--format", fmt] +
                                   opts + [trace], capture_output=True)
                if p.returncode != 0:
                    fail("%s: exit %d: %s" % (name, p.returncode,
                                              p.stderr.decode(errors="replace")))
                    continue
                try:
                    doc = json.loads(p.stdout.decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as e:
                    fail("%s: not JSON: %s" % (name, e))
                    continue
                check(name, doc)
    sampled = os.path.join(golden, "sampled-summary", "a.evp")
    for opts in ([], ["--ops"], ["--phases"], ["--ops", "--phases"],
                 ["--thread", "1002"], ["--from", "0.1", "--to", "0.2"],
                 ["--func", "cold"], ["--ops", "--max-depth", "2"]):
        for fmt, check in (("chrome", check_chrome_sampled),
                           ("speedscope", check_speedscope_sampled)):
            name = "%s sampled %s" % (fmt, " ".join(opts) or "(stacks)")
            doc = export_json(evalprof, fmt, opts, sampled, name)
            if doc is not None:
                check(name, doc)
    subprocess.run(["rm", "-rf", tmp])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
