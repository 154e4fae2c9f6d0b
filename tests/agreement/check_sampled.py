#!/usr/bin/env python3
"""Every view of a sampled trace gives the same function, opcode and
line times.

    check_sampled.py EVALPROF MKSAMPLED TMPDIR

Writes mksampled's trace (tests/sampled/sampgen.h), then reads summary
--funcs --ns (each function's estimated self and inclusive time), export
--format folded, the flame graph's frames (their <title> values and
depths), export --format speedscope (its sampled profiles: stacks of
frame indexes and their weights), tree --format raw (each sample's
weight and stack), export --format chrome (each sample event's stack
frame and periods), export --format text (each "# sample:" line's
stack node and weight; read back, the same summary), export --format
pprof (decoded here:
each sample's stack and its estimated ns and periods), pstats (read by
Python's pstats: tt and ct, and nc, the periods on the stacks) and
callgrind (each function's self cost and the cost of the calls to it,
in estimated ns and periods), and checks that every function's self and
inclusive ns agree with the summary's within rounding (1 ns a line),
and the profiles' periods with the estimates (periods x the period).
Then the same of opcodes (summary's ops table against the "op:NAME"
leaves of folded --ops and flamegraph --ops) and of lines (summary
--lines against the "file:line" leaves of folded --lines and flamegraph
--lines), each row's time and share: a share is of all the periods in
every view.
"""
import collections
import gzip
import json
import os
import pstats
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


def pb_fields(data):
    """The fields of protobuf message DATA: [(number, value)], a varint's
    value an int, a length-delimited one bytes."""
    out, i = [], 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            b = data[i]
            i += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                return v
    while i < len(data):
        key = varint()
        num, wire = key >> 3, key & 7
        if wire == 0:
            out.append((num, varint()))
        elif wire == 2:
            n = varint()
            out.append((num, data[i:i + n]))
            i += n
        elif wire == 1:
            out.append((num, data[i:i + 8]))
            i += 8
        elif wire == 5:
            out.append((num, data[i:i + 4]))
            i += 4
        else:
            sys.exit(f"FAIL: pprof: wire type {wire}")
    return out


def pb_ints(v):
    """A repeated integer field: packed (bytes) or one varint."""
    return [v] if isinstance(v, int) else unpack_varints(v)


def unpack_varints(v):
    out, cur, shift = [], 0, 0
    for b in v:
        cur |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            out.append(cur)
            cur = shift = 0
    return out


def pprof_profile(*flags):
    """Times of export --format pprof FLAGS, in estimated ns, and the
    periods its samples carry: ({period, types, leaves}, Times, Times);
    leaves: {leaf that is no function: [ns, None]}."""
    path = os.path.join(TMP, "sampled%s.pb.gz" % "".join(flags))
    run("export", "--format", "pprof", *flags, "-o", path, trace)
    with gzip.open(path, "rb") as f:
        prof = pb_fields(f.read())
    strings = [v.decode() for n, v in prof if n == 6]
    funcs, locs, samples, types = {}, {}, [], []
    period = 0
    for n, v in prof:
        if n == 1:  # sample_type
            vt = dict(pb_fields(v))
            types.append(strings[vt.get(1, 0)])
        elif n == 5:  # function
            fn = dict(pb_fields(v))
            funcs[fn[1]] = (strings[fn.get(2, 0)], strings[fn.get(4, 0)],
                            fn.get(5, 0))
        elif n == 4:  # location: its one line's function
            lo = pb_fields(v)
            lid = dict(lo)[1]
            line = dict(pb_fields(dict(lo)[4]))
            locs[lid] = line[1]
        elif n == 2:  # sample
            f = collections.defaultdict(list)
            for k, x in pb_fields(v):
                f[k] += pb_ints(x) if k in (1, 2) else [x]
            samples.append((f[1], f[2]))
        elif n == 12:
            period = v
    t, periods = Times(), Times()
    leaves = {}
    for ids, values in samples:
        frames = []
        for lid in reversed(ids):  # leaf first in pprof
            name, file, line = funcs[locs[lid]]
            frames.append(f"{name} ({file}:{line})" if file else name)
        periods.stack(frames, values[0])
        t.stack(frames, values[1])
        leaf = frames[-1]
        if not is_func(leaf) and not leaf.startswith("["):
            leaves.setdefault(leaf, [0, None])[0] += values[1]
    return {"period": period, "types": types, "leaves": leaves}, t, periods


def pstats_profile():
    """Times of export --format pstats, read by Python's pstats (tt and
    ct in ns), and its nc: the periods of the stacks a function is on."""
    path = os.path.join(TMP, "sampled.pstats")
    run("export", "--format", "pstats", "-o", path, trace)
    st = pstats.Stats(path).stats
    t, nc = Times(), {}
    for (file, line, name), (cc, n, tt, ct, callers) in st.items():
        key = f"{name} ({file}:{line})"
        t.self[key] = round(tt * 1e9)
        t.incl[key] = round(ct * 1e9)
        t.lines += 1
        nc[key] = n
        if cc != n:
            print(f"FAIL: pstats: {key} cc {cc} != nc {n}")
            sys.exit(1)
    return t, nc


def callgrind_profile():
    """Times of export --format callgrind: a function's self cost, and
    the cost of the calls to it (its inclusive cost), in estimated ns;
    and the same in periods."""
    out = run("export", "--format", "callgrind", "-o", "-", trace)
    names, files = {}, {}
    t, periods = Times(), Times()
    fn = cfn = fl = cfl = None
    after_calls = False
    for line in out.splitlines():
        m = re.match(r"^(c?f[ln])=\((\d+)\)(?: (.*))?$", line)
        if m:
            kind, id_, name = m.group(1), m.group(2), m.group(3)
            table = files if kind.endswith("l") else names
            if name is not None:
                table[id_] = name
            if kind == "fl":
                fl = id_
            elif kind == "cfl":
                cfl = id_
            elif kind == "fn":
                fn = (id_, fl)
            else:
                cfn = (id_, cfl)
            continue
        if line.startswith("calls="):
            after_calls = True
            continue
        m = re.match(r"^\d+ (\d+) (\d+)$", line)
        if not m:
            continue
        ns, per = int(m.group(1)), int(m.group(2))
        target = cfn if after_calls else fn
        name, file = names[target[0]], files[target[1]]
        after = after_calls
        after_calls = False
        if file == "???":
            continue  # a thread's own function: no frame of the trace
        key = f"{name} ({file}:%s)"
        if after:
            t.incl[key] += ns
            periods.incl[key] += per
        else:
            t.self[key] += ns
            periods.self[key] += per
        t.lines += 1
    return t, periods


def with_lines(t, ref):
    """T's keys "name (file:%s)" completed with REF's lines (callgrind
    names a function by file and name)."""
    done = Times()
    done.lines = t.lines
    full = {k.rsplit(":", 1)[0]: k for k in ref.incl}
    for what in ("self", "incl"):
        for k, v in getattr(t, what).items():
            k = full.get(k.rsplit(":", 1)[0], k) if k.endswith(":%s)") else k
            getattr(done, what)[k] += v
    return done


def chrome():
    """Times of export --format chrome: each sample event's stack (its
    "sf" up the stackFrames' parents) and its periods x the period."""
    d = json.loads(run("export", "--format", "chrome", "-o", "-", trace))
    frames = d["stackFrames"]
    full = {}
    for line in run("export", "--format", "folded", "-o", "-",
                    trace).splitlines():
        for f in line.rsplit(" ", 1)[0].split(";"):
            if is_func(f):
                full[(f.rsplit(" (", 1)[0], f.rsplit(" (", 1)[1]
                      .split(":")[0])] = f
    t = Times()
    for e in d["traceEvents"]:
        if e["ph"] != "P":
            continue
        stack, sf = [], str(e["sf"])
        while sf:
            f = frames[sf]
            stack.append(full.get((f["name"], f["category"]), f["name"]))
            sf = f.get("parent")
        t.stack(stack[::-1], e["args"]["periods"] * PERIOD)
    return t


def text():
    """Times of export --format text: each "# sample:" line's stack (its
    node up the "# stack:" lines, the functions of "# function:") and its
    weight x the period; and the summary of the text read back, which
    must be the trace's but for the path it names."""
    out = run("export", "--format", "text", "-o", "-", trace)
    funcs, nodes = {}, {}
    t = Times()
    for line in out.splitlines():
        if line.startswith("# function: "):
            id_, ln, file, name = line[len("# function: "):].split("\t")
            funcs[id_] = f"{name} ({file}:{ln})"
        elif line.startswith("# stack: "):
            id_, parent, func = line.split()[2:]
            nodes[id_] = (parent, func)
        elif line.startswith("# sample: "):
            _, _, _, node, state, weight, unit = line.split()
            stack = []
            while node in nodes:
                stack.append(funcs[nodes[node][1]])
                node = nodes[node][0]
            t.stack(stack[::-1], int(weight) * PERIOD)
    copy = os.path.join(TMP, "sampled.trace")
    with open(copy, "w") as f:
        f.write(out)
    # (the summary's first line names the trace)
    a = run("summary", "--funcs", trace).split("\n", 1)[1] + \
        run("summary", "--lines", trace)
    b = run("summary", "--funcs", copy).split("\n", 1)[1] + \
        run("summary", "--lines", copy)
    if a != b:
        print("FAIL: text: the summary of the text read back differs")
        t.self["(the copy's summary)"] = -1
    return t


def tree():
    """Times of `tree --format raw`: each sample's stack (function names,
    outermost first) and its weight x the period; names are matched to
    the summary's "name (file:line)" through the folded stacks' names."""
    full = {}
    for line in run("export", "--format", "folded", "-o", "-",
                    trace).splitlines():
        for f in line.rsplit(" ", 1)[0].split(";"):
            if is_func(f):
                full[f.rsplit(" (", 1)[0]] = f
    t = Times()
    row = re.compile(r"^\d+\.\d{9} (\d+) \d+ sample \S+ \S+ \S+ \d+ (\S+)$")
    for line in run("tree", "--no-pager", "--format", "raw",
                    trace).splitlines():
        m = row.match(line)
        if m:
            frames = [full.get(f, f) for f in m[2].split(";") if f != "-"]
            t.stack(frames, int(m[1]) * PERIOD)
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
PERIOD = 1000000  # mksampled's: 1 ms
pp_head, pp_times, pp_periods = pprof_profile()
if pp_head["types"] != ["samples", "cpu"] or pp_head["period"] != PERIOD:
    print(f"FAIL: pprof: sample types {pp_head['types']}, period "
          f"{pp_head['period']}")
    bad += 1
ps_times, ps_nc = pstats_profile()
cg_times, cg_periods = callgrind_profile()
cg_times = with_lines(cg_times, ref)
cg_periods = with_lines(cg_periods, ref)
# the periods the profiles count are the estimates' periods
for view, per in [("pprof", pp_periods), ("callgrind", cg_periods)]:
    for f, ns in ref.incl.items():
        if f in per.incl and per.incl[f] * PERIOD != ns:
            print(f"FAIL: {view}: {f} {per.incl[f]} periods on the stacks, "
                  f"summary {ns} ns")
            bad += 1
for f, ns in ref.incl.items():
    if f in ps_nc and ps_nc[f] * PERIOD != ns:
        print(f"FAIL: pstats: {f} nc {ps_nc[f]}, summary {ns} ns")
        bad += 1
for view, got in [("folded", folded()), ("flamegraph", flamegraph()),
                  ("speedscope", speedscope()), ("tree", tree()),
                  ("chrome", chrome()), ("text", text()),
                  ("pprof", pp_times),
                  ("pstats", ps_times), ("callgrind", cg_times)]:
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
op_views = leaf_rows("--ops")
op_views["pprof"] = pprof_profile("--ops")[0]["leaves"]
bad += agree("opcodes", ops, op_views)
bad += agree("lines", lines, leaf_rows("--lines"))
if bad:
    sys.exit(f"{bad} disagreements")
