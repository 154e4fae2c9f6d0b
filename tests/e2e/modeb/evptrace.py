"""Read an evalprof trace for the end-to-end tests.

The trace goes through the project's own reader: ``evalprof export
--format text`` turns it into the text format (docs/FORMAT.md), which this
module parses, then replays per thread with its own small stack, so the
tests can ask "how many LOAD_FAST ran in fib" or "is every enter matched".

    t = Trace.load(evalprof_binary, "run.evp")
    t.ops_by_function(file)       Counter {(qualname, base opcode name): n}
    t.kinds_by_function(file)     {qualname: Counter {kind name: n}}
    t.balance()                   [(stream name, open frames, bad pops)]
"""
import array
import collections
import subprocess

KIND = {
    0: "init", 1: "fini", 2: "runtime other", 3: "enter", 4: "exit",
    5: "loop enter", 6: "loop slow", 7: "loop fast", 8: "dispatch", 9: "op",
    10: "loop exception", 11: "loop error", 12: "loop exiting",
    13: "loop exit", 14: "recorder", 15: "c call", 16: "c return",
    17: "c raise", 18: "resume", 19: "suspend",
}
PUSH = {3, 15, 18}
POP = {4, 16, 17, 19}


class Stream(object):
    """One thread's events, kept compactly (traces run to millions)."""

    def __init__(self, sid, tid, name):
        self.id, self.tid, self.name = sid, tid, name
        self.kinds = array.array("b")
        self.args = array.array("q")
        self.aux = array.array("q")

    def add(self, kind, a, b):
        self.kinds.append(kind)
        self.args.append(a)
        self.aux.append(b)

    @property
    def events(self):
        """(kind, a, b) for each event: a is the function id or opcode,
        b the oparg."""
        return zip(self.kinds, self.args, self.aux)

    def __len__(self):
        return len(self.kinds)


class Trace(object):
    def __init__(self):
        self.meta = {}
        self.funcs = {}      # id -> (qualname, file, line)
        self.opcodes = {}    # opcode -> (name, base opcode)
        self.streams = []
        self.warnings = ""

    @classmethod
    def load(cls, evalprof, path):
        p = subprocess.run([evalprof, "export", "--format", "text", path],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise AssertionError("evalprof export %s failed (%d): %s"
                                 % (path, p.returncode, p.stderr))
        t = cls()
        t.warnings = p.stderr
        t._parse(p.stdout)
        return t

    def _parse(self, text):
        cur = None
        for line in text.splitlines():
            if not line:
                continue
            if line.startswith("#"):
                if line.startswith("# meta: "):
                    k, _, v = line[8:].partition("=")
                    self.meta[k] = v
                elif line.startswith("# function: "):
                    f = line[12:].split("\t")
                    self.funcs[int(f[0])] = (f[3], f[2], int(f[1]))
                elif line.startswith("# opcode: "):
                    f = line[10:].split()
                    self.opcodes[int(f[0])] = (f[1], int(f[2]))
                elif line.startswith("# thread: "):
                    f = line[10:].split(" ", 2)
                    cur = Stream(int(f[0]), int(f[1]),
                                 f[2] if len(f) > 2 else "")
                    self.streams.append(cur)
                continue
            f = line.split()
            if cur is None:
                cur = Stream(0, 0, "")
                self.streams.append(cur)
            kind = int(f[1])
            a = int(f[2]) if len(f) > 2 else 0
            b = int(f[3]) if len(f) > 3 else 0
            cur.add(kind, a, b)

    # ---- questions ------------------------------------------------------

    def opname(self, op):
        name, base = self.opcodes.get(op, ("<%d>" % op, op))
        if base != op:
            name = self.opcodes.get(base, (name, base))[0]
        return name

    def func(self, fid):
        return self.funcs.get(fid, ("<%d>" % fid, "", 0))

    def walk(self):
        """Yield (stream, kind, a, b, python function id or 0) for every
        event, the function being the innermost Python frame (c calls are
        skipped when attributing)."""
        for s in self.streams:
            stack = []
            for kind, a, b in s.events:
                if kind in PUSH:
                    stack.append((kind, a))
                elif kind in POP:
                    if stack:
                        stack.pop()
                py = 0
                for k, fid in reversed(stack):
                    if k != 15:
                        py = fid
                        break
                yield s, kind, a, b, py

    def ops_by_function(self, file):
        c = collections.Counter()
        for s, kind, a, b, fid in self.walk():
            if kind == 9 and fid:
                name, ffile, _ = self.func(fid)
                if ffile == file:
                    c[name, self.opname(a)] += 1
        return c

    def kinds_by_function(self, file=None):
        """{qualname: Counter of kind names} for events that carry the
        function (enter, exit, resume, suspend, c call ...)."""
        out = collections.defaultdict(collections.Counter)
        for s in self.streams:
            for kind, a, b in s.events:
                if kind in PUSH or kind in POP:
                    name, ffile, _ = self.func(a)
                    if file is None or ffile == file:
                        out[name][KIND[kind]] += 1
        return out

    def exceptions_by_function(self, file):
        c = collections.Counter()
        for s, kind, a, b, fid in self.walk():
            if kind == 10 and fid:
                name, ffile, _ = self.func(fid)
                if ffile == file:
                    c[name] += 1
        return c

    def kind_counts(self):
        c = collections.Counter()
        for s in self.streams:
            for kind, a, b in s.events:
                c[KIND.get(kind, str(kind))] += 1
        return c

    def balance(self):
        """[(stream name, frames left open, pops without a push)]"""
        out = []
        for s in self.streams:
            depth = bad = 0
            for kind, a, b in s.events:
                if kind in PUSH:
                    depth += 1
                elif kind in POP:
                    if depth:
                        depth -= 1
                    else:
                        bad += 1
            out.append((s.name, depth, bad))
        return out

    def max_depth(self):
        best = 0
        for s in self.streams:
            depth = 0
            for kind, a, b in s.events:
                if kind in PUSH:
                    depth += 1
                    best = max(best, depth)
                elif kind in POP and depth:
                    depth -= 1
        return best
