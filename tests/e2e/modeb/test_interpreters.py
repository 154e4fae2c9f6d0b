#!/usr/bin/env python3
"""diff across interpreters (suite e2e-modeb).

Records one script with two CPython versions (the interpreters the
extension was built for, given as arguments) and checks that diff --funcs
matches their stdlib functions by module-relative path: json's pure-Python
encoder is in both traces, under different prefixes and on different
lines, and its row must have calls on both sides rather than show as new.
Then a sampled run of one program on the oldest and the newest version,
diff --group-specialized: opcode families, renamed and merged
instructions matched by their newer names.  Fewer than two versions:
skipped (exit 77) saying so.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

BUILD = os.path.abspath(os.environ.get("EVP_BUILD", "build"))
EVALPROF = os.path.join(BUILD, "evalprof")
PKG = os.path.join(BUILD, "python")

SCRIPT = """\
import json
for i in range(20):
    json.dumps([[i, 2], [3, [4, 5]]], indent=1)
"""


def version(exe):
    return subprocess.run(
        [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, timeout=60).stdout.strip()


def record_and_diff(runs, env):
    """Record each (exe, script, cwd, trace) of RUNS with evalprof record,
    then diff --funcs --wide the traces: (its output, None), or (None,
    what failed)."""
    for exe, script, cwd, t in runs:
        p = subprocess.run([EVALPROF, "record", "-q", "-o", t, "--", exe,
                            script], capture_output=True, text=True,
                           env=env, cwd=cwd, timeout=300)
        if p.returncode != 0:
            return None, "evalprof record with %s exited %d: %s" % (
                exe, p.returncode, p.stderr)
    p = subprocess.run([EVALPROF, "diff", "--funcs", "--wide"]
                       + [r[3] for r in runs], capture_output=True,
                       text=True, timeout=300)
    if p.returncode != 0:
        return None, "diff exited %d: %s" % (p.returncode, p.stderr)
    return p.stdout, None


FAMILIES = """\
def get(d, k):
    return d[k]
def main():
    d = {i: i for i in range(64)}
    t = 0
    for i in range(600000):
        t += get(d, i & 63) + d[i & 31]
main()
"""


def families(seen, tmp, env):
    """Sampled runs of one program on the oldest and the newest version,
    diff --group-specialized: opcode families, renamed and merged
    instructions matched (3.11's PRECALL is CALL, 3.13's BINARY_SUBSCR a
    BINARY_OP from 3.14 on): no row of an old name, CALL and BINARY_OP
    sampled on both sides; and their differential flame graph
    (flamegraph --diff --ops --group-specialized) of the same families."""
    (va, a), (vb, b) = sorted(seen.items(),
                              key=lambda kv: tuple(map(int, kv[0].split(".")))
                              )[::len(seen) - 1]
    script = os.path.join(tmp, "fam.py")
    with open(script, "w") as f:
        f.write(FAMILIES)
    traces = []
    for exe in (a, b):
        t = os.path.join(tmp, "fam-%s.evp" % os.path.basename(exe))
        p = subprocess.run([EVALPROF, "record", "-q", "--sample", "--rate",
                            "2000", "-o", t, "--", exe, script],
                           capture_output=True, text=True, env=env, cwd=tmp,
                           timeout=300)
        if p.returncode != 0:
            print("FAIL: record --sample with %s: %s" % (exe, p.stderr))
            return 1
        traces.append(t)
    p = subprocess.run([EVALPROF, "diff", "--group-specialized"] + traces,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        print("FAIL: diff --group-specialized exited %d: %s"
              % (p.returncode, p.stderr))
        return 1
    ops = p.stdout.split("\nops (families):", 1)[-1].split("\nfunctions",
                                                           1)[0]
    rows = {ln.split()[0]: ln.split()[1:3] for ln in ops.splitlines()
            if ln.startswith(" ") and "%" in ln}
    old = [n for n in rows if n in ("PRECALL", "BINARY_SUBSCR") or
           n.startswith("BINARY_SUBSCR_") or n.startswith("CALL_")]
    missing = [n for n in ("CALL", "BINARY_OP")
               if n not in rows or "0.0%" in rows[n]]
    if old or missing:
        print("FAIL: %s vs %s: families not matched (old names %s; not on "
              "both sides %s):\n%s" % (va, vb, old, missing, p.stdout))
        return 1
    # the same two runs as a differential flame graph of the families
    svg = os.path.join(tmp, "fam.svg")
    p = subprocess.run([EVALPROF, "flamegraph", "--diff", "--ops",
                        "--group-specialized", "-o", svg] + traces,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        print("FAIL: flamegraph --diff --ops --group-specialized exited %d: "
              "%s" % (p.returncode, p.stderr))
        return 1
    with open(svg, encoding="utf-8") as f:
        text = f.read()
    leaves = set(re.findall(r"op:([A-Z_]+)", text))
    stale = sorted(n for n in leaves if n in ("PRECALL", "BINARY_SUBSCR") or
                   n.startswith(("BINARY_SUBSCR_", "CALL_", "PRECALL_")))
    if stale or not {"CALL", "BINARY_OP"} <= leaves:
        print("FAIL: %s vs %s: the differential flame graph's opcode leaves "
              "are not families (%s; leaves %s)" % (va, vb, stale,
                                                     sorted(leaves)))
        return 1
    print("ok: %s vs %s, families: CALL %s, BINARY_OP %s"
          % (va, vb, " -> ".join(rows["CALL"]), " -> ".join(rows["BINARY_OP"])))
    return 0


def main(exes):
    seen = {}
    for exe in exes:
        v = version(exe)
        if v and v not in seen:
            seen[v] = exe
    if len(seen) < 2:
        print("SKIP: diff across interpreters needs two CPython versions "
              "with evalprof._tracer built, found %s" % (sorted(seen) or
                                                         "none"))
        return 77
    (va, a), (vb, b) = sorted(seen.items())[:2]
    tmp = tempfile.mkdtemp(prefix="evp-interp-")
    try:
        script = os.path.join(tmp, "prog.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        env = dict(os.environ, PYTHONHASHSEED="0")
        env.pop("EVALPROF", None)
        env["PYTHONPATH"] = PKG
        out, problem = record_and_diff(
            [(exe, script, tmp, os.path.join(tmp, os.path.basename(exe)
                                             + ".evp")) for exe in (a, b)],
            env)
        if problem:
            print("FAIL: %s" % problem)
            return 1
        # opcodes are numbered differently by each version: matched by
        # name, one row each, CALL (in every version) counted on both sides
        ops = out.split("\nops:", 1)[-1].split("functions (inclusive",
                                               1)[0]
        names = [ln.split()[0] for ln in ops.splitlines()
                 if ln.startswith(" ") and not ln.startswith(" name")]
        dup = sorted(n for n in set(names) if names.count(n) > 1)
        call = [ln.split() for ln in ops.splitlines()
                if ln.startswith(" CALL ")]
        if not names or dup or len(call) != 1 or "0" in call[0][1:3]:
            print("FAIL: %s vs %s: opcodes not matched by name (twice: "
                  "%s; CALL: %s):\n%s" % (va, vb, dup, call, out))
            return 1
        rows = out.split("functions (inclusive time):", 1)[-1]
        enc = [ln for ln in rows.splitlines()
               if "_iterencode_list (" in ln and "json/encoder.py" in ln]
        if len(enc) != 1:
            print("FAIL: %s vs %s: expected one matched _iterencode_list "
                  "row, found %d:\n%s" % (va, vb, len(enc), out))
            return 1
        words = enc[0].rsplit(")", 1)[1].split()
        if words[-1] == "new" or words[0] == "0" or words[1] == "0":
            print("FAIL: %s vs %s: _iterencode_list not matched:\n%s"
                  % (va, vb, enc[0]))
            return 1
        if "lib/python" + vb not in enc[0]:
            print("FAIL: the row does not show the new trace's path:\n%s"
                  % enc[0])
            return 1
        print("ok: %s vs %s: %s" % (va, vb, enc[0].strip()))
        return families(seen, tmp, env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
