#!/usr/bin/env python3
"""Write a text trace whose `evalprof summary` is the discussion's summary.

The eval-loop profiling discussion shows two summaries (sorted by count
and by mean elapsed time) of a 25 MB trace of `./python -E ./setup.py
build` that was never published.  This script rebuilds a trace with the
same figures, so that the golden tests can hold evalprof's summary to the
discussion's layout byte for byte without a large file in the repository:

  * the same header lines (python, argv, start time, start and end clock);
  * the discussion's excerpt verbatim at the start (init, <module>,
    _DeadlockError, the enter of _ModuleLock) and at the end (close,
    release, shutdown, the last runtime other, fini), timestamps included;
  * in between, 60,376 more frames nested through the ops of their callers,
    with exactly the counts of the discussion's events and ops tables,
    following the grammar the excerpt shows: enter, loop enter, then per
    pass through the top of the loop "loop slow, loop fast" and per
    instruction "dispatch, op"; a handled exception is "loop error, loop
    exception" followed by another pass (that is why loop slow exceeds loop
    enter by exactly the handled exceptions, 1,832 - 493 = 1,339); an
    unhandled one ends the frame with "loop exiting"; 37 frames never reach
    the loop (enter, loop exit, exit);
  * 1,025 distinct function names;
  * elapsed times drawn around a target mean per event kind and per opcode,
    with the totals set exactly so that every mean, truncated to 0.1 us as
    evalprof prints it, is the table's, and so that rows the discussion
    shows with equal means still come out in its order when sorted by
    elapsed time (their exact means are strictly ordered);
  * the first appearances ordered so that rows with equal counts come out
    in the discussion's order when sorted by count;
  * "# log written:" annotations carry the rest of the traced time, so the
    excerpt's last timestamps are reproduced exactly;
  * "# opcode:" lines with CPython's opcode table as it was when the trace
    was taken (see OPCODES below), so that the ops table's "total: 26/125"
    comes out as in the discussion.  --builtin-opcodes leaves them out:
    evalprof then names the opcodes from its built-in 3.10 table.

Everything is deterministic (a fixed splitmix64 stream), so the output is
the same on every machine and every Python 3 version.  Before writing, the
script recomputes both tables from the events it made and checks them
against the discussion's; a mismatch is an error, not a wrong trace.

    gen_discussion_summary.py [--builtin-opcodes] OUTPUT
"""
import sys

# ---- the discussion's figures ------------------------------------------------

HEADER = """\
# python: /home/esnow/projects/work/cpython-perf/cpython/python
# argv: ./python -E ./setup.py build
# start time: 1617222445 s (since epoch)
# start clock: 17137493.663947837 s (on clock)
# end clock: 17137494.467647860 s (on clock)
"""

# The excerpt's first and last events (before and after its "...").
HEAD = """\
17137493.664739837 0
# func: <module>
17137493.666522537 3
17137493.666523537 5
17137493.666523837 6
17137493.666524037 7
17137493.666524237 8
17137493.666524437 9 100
# func: _DeadlockError
17137493.666531637 3
17137493.666531937 5
17137493.666532137 6
17137493.666532337 7
17137493.666532437 8
17137493.666532637 9 101
17137493.666533537 13
# func: _DeadlockError
17137493.666533937 4
17137493.666534137 2
# func: _ModuleLock
17137493.666562437 3
"""
HEAD_LAST_ELAPSED = 200  # the tree shows the enter of _ModuleLock as 0.2 us

TAIL = """\
17137494.445492862 13
# func: close
17137494.445493162 4
17137494.445493362 2
# func: release
17137494.445493862 3
17137494.445494062 5
17137494.445494162 6
17137494.445494362 7
17137494.445494562 8
17137494.445494662 9 124
17137494.445495162 13
# func: release
17137494.445495462 4
17137494.445495662 2
17137494.445496162 13
# func: shutdown
17137494.445496462 4
17137494.445496562 2
17137494.467615160 1
"""

INIT, FINI, RUNTIME_OTHER, ENTER, EXIT, LOOP_ENTER, LOOP_SLOW, LOOP_FAST, \
    DISPATCH, OP, LOOP_EXCEPTION, LOOP_ERROR, LOOP_EXITING, LOOP_EXIT = range(14)

KIND_NAMES = ["init", "fini", "runtime other", "enter", "exit", "loop enter",
              "loop slow", "loop fast", "dispatch", "op", "loop exception",
              "loop error", "loop exiting", "loop exit"]

# Events table: kind, count, mean shown (tenths of a us), the exact mean
# aimed at (ns).  Rows the discussion shows with equal means get strictly
# decreasing exact means in the order of its elapsed-sorted table.
EVENTS = [
    (DISPATCH, 94807, 1, 170),
    (OP, 94807, 34, None),          # the weighted mean of the ops below
    (LOOP_SLOW, 61684, 2, 220),
    (LOOP_FAST, 61684, 1, 130),
    (ENTER, 60382, 2, 280),
    (LOOP_EXIT, 60382, 4, 450),
    (EXIT, 60382, 2, 250),
    (RUNTIME_OTHER, 60382, 55, 5560),
    (LOOP_ENTER, 60345, 2, 235),
    (LOOP_EXCEPTION, 1832, 4, 430),
    (LOOP_ERROR, 1821, 4, 470),
    (LOOP_EXITING, 493, 2, 265),
    (INIT, 1, 17827, None),         # the excerpt's own
    (FINI, 1, 0, None),             # the last event: no elapsed time
]
EVENTS_BY_ELAPSED = ["init", "runtime other", "op", "loop error", "loop exit",
                     "loop exception", "enter", "loop exiting", "exit",
                     "loop enter", "loop slow", "dispatch", "loop fast",
                     "fini"]

# Ops table: name, count, mean shown (tenths of a us), exact mean (ns).
OPS = [
    ("LOAD_FAST", 24094, 20, 2070),
    ("POP_JUMP_IF_FALSE", 21937, 5, 580),
    ("LOAD_GLOBAL", 21223, 30, 3070),
    ("SETUP_FINALLY", 8242, 210, 21070),
    ("JUMP_ABSOLUTE", 5117, 6, 670),
    ("LOAD_CONST", 2841, 16, 1670),
    ("BUILD_LIST", 2640, 11, 1180),
    ("POP_JUMP_IF_TRUE", 2480, 14, 1470),
    ("FOR_ITER", 1997, 7, 770),
    ("POP_TOP", 1545, 4, 445),
    ("DUP_TOP", 1328, 17, 1770),
    ("LOAD_NAME", 550, 61, 6170),
    ("JUMP_FORWARD", 537, 5, 540),
    ("LOAD_DEREF", 56, 15, 1570),
    ("JUMP_IF_NOT_EXC_MATCH", 50, 27, 2770),
    ("JUMP_IF_FALSE_OR_POP", 50, 11, 1140),
    ("JUMP_IF_TRUE_OR_POP", 35, 26, 2670),
    ("LOAD_CLOSURE", 25, 11, 1160),
    ("NOP", 21, 9, 950),
    ("WITH_EXCEPT_START", 11, 9, 970),
    ("BUILD_MAP", 11, 70, 7070),
    ("BUILD_SET", 5, 49, 4970),
    ("YIELD_FROM", 4, 4, 475),
    ("EXTENDED_ARG", 4, 2, 270),
    ("BUILD_CONST_KEY_MAP", 3, 214, 21470),
    ("SETUP_WITH", 1, 97, 9770),
]
OPS_BY_ELAPSED = [
    "BUILD_CONST_KEY_MAP", "SETUP_FINALLY", "SETUP_WITH", "BUILD_MAP",
    "LOAD_NAME", "BUILD_SET", "LOAD_GLOBAL", "JUMP_IF_NOT_EXC_MATCH",
    "JUMP_IF_TRUE_OR_POP", "LOAD_FAST", "DUP_TOP", "LOAD_CONST", "LOAD_DEREF",
    "POP_JUMP_IF_TRUE", "BUILD_LIST", "LOAD_CLOSURE", "JUMP_IF_FALSE_OR_POP",
    "WITH_EXCEPT_START", "NOP", "FOR_ITER", "JUMP_ABSOLUTE",
    "POP_JUMP_IF_FALSE", "JUMP_FORWARD", "YIELD_FROM", "POP_TOP",
    "EXTENDED_ARG"]
# Equal counts, shown in this order when sorted by count: first
# appearances must follow it.
OPS_FIRST_BEFORE = [("JUMP_IF_NOT_EXC_MATCH", "JUMP_IF_FALSE_OR_POP"),
                    ("WITH_EXCEPT_START", "BUILD_MAP"),
                    ("YIELD_FROM", "EXTENDED_ARG")]

N_FUNCS = 1025         # "funcs: 1,025 called (by "simple" name)"
NO_LOOP_FRAMES = 37    # enter 60,382 - loop enter 60,345
ERRORLESS = 11         # loop exception 1,832 - loop error 1,821

# CPython's opcode table on 2021-03-31, when the trace was taken (start time
# 1617222445): CPython 3.10's final table less the two instructions added
# after that day, GEN_START (129, bpo-43683, merged in April 2021) and
# ROT_N (99, bpo-43754), both first released in 3.10b1 (magic numbers 3436
# and 3439 in Lib/importlib/_bootstrap_external.py; 3.10a7, magic 3435,
# was the last release without them).  125 instructions, as the
# discussion's "total: 26/125" counts them.
OPCODES = """
1 POP_TOP 2 ROT_TWO 3 ROT_THREE 4 DUP_TOP 5 DUP_TOP_TWO 6 ROT_FOUR 9 NOP
10 UNARY_POSITIVE 11 UNARY_NEGATIVE 12 UNARY_NOT 15 UNARY_INVERT
16 BINARY_MATRIX_MULTIPLY 17 INPLACE_MATRIX_MULTIPLY 19 BINARY_POWER
20 BINARY_MULTIPLY 22 BINARY_MODULO 23 BINARY_ADD 24 BINARY_SUBTRACT
25 BINARY_SUBSCR 26 BINARY_FLOOR_DIVIDE 27 BINARY_TRUE_DIVIDE
28 INPLACE_FLOOR_DIVIDE 29 INPLACE_TRUE_DIVIDE 30 GET_LEN 31 MATCH_MAPPING
32 MATCH_SEQUENCE 33 MATCH_KEYS 34 COPY_DICT_WITHOUT_KEYS
49 WITH_EXCEPT_START 50 GET_AITER 51 GET_ANEXT 52 BEFORE_ASYNC_WITH
54 END_ASYNC_FOR 55 INPLACE_ADD 56 INPLACE_SUBTRACT 57 INPLACE_MULTIPLY
59 INPLACE_MODULO 60 STORE_SUBSCR 61 DELETE_SUBSCR 62 BINARY_LSHIFT
63 BINARY_RSHIFT 64 BINARY_AND 65 BINARY_XOR 66 BINARY_OR 67 INPLACE_POWER
68 GET_ITER 69 GET_YIELD_FROM_ITER 70 PRINT_EXPR 71 LOAD_BUILD_CLASS
72 YIELD_FROM 73 GET_AWAITABLE 74 LOAD_ASSERTION_ERROR 75 INPLACE_LSHIFT
76 INPLACE_RSHIFT 77 INPLACE_AND 78 INPLACE_XOR 79 INPLACE_OR
82 LIST_TO_TUPLE 83 RETURN_VALUE 84 IMPORT_STAR 85 SETUP_ANNOTATIONS
86 YIELD_VALUE 87 POP_BLOCK 89 POP_EXCEPT 90 STORE_NAME 91 DELETE_NAME
92 UNPACK_SEQUENCE 93 FOR_ITER 94 UNPACK_EX 95 STORE_ATTR 96 DELETE_ATTR
97 STORE_GLOBAL 98 DELETE_GLOBAL 100 LOAD_CONST 101 LOAD_NAME
102 BUILD_TUPLE 103 BUILD_LIST 104 BUILD_SET 105 BUILD_MAP 106 LOAD_ATTR
107 COMPARE_OP 108 IMPORT_NAME 109 IMPORT_FROM 110 JUMP_FORWARD
111 JUMP_IF_FALSE_OR_POP 112 JUMP_IF_TRUE_OR_POP 113 JUMP_ABSOLUTE
114 POP_JUMP_IF_FALSE 115 POP_JUMP_IF_TRUE 116 LOAD_GLOBAL 117 IS_OP
118 CONTAINS_OP 119 RERAISE 121 JUMP_IF_NOT_EXC_MATCH 122 SETUP_FINALLY
124 LOAD_FAST 125 STORE_FAST 126 DELETE_FAST 130 RAISE_VARARGS
131 CALL_FUNCTION 132 MAKE_FUNCTION 133 BUILD_SLICE 135 LOAD_CLOSURE
136 LOAD_DEREF 137 STORE_DEREF 138 DELETE_DEREF 141 CALL_FUNCTION_KW
142 CALL_FUNCTION_EX 143 SETUP_WITH 144 EXTENDED_ARG 145 LIST_APPEND
146 SET_ADD 147 MAP_ADD 148 LOAD_CLASSDEREF 152 MATCH_CLASS
154 SETUP_ASYNC_WITH 155 FORMAT_VALUE 156 BUILD_CONST_KEY_MAP
157 BUILD_STRING 160 LOAD_METHOD 161 CALL_METHOD 162 LIST_EXTEND
163 SET_UPDATE 164 DICT_MERGE 165 DICT_UPDATE
""".split()
OPCODE_TABLE = [(int(OPCODES[i]), OPCODES[i + 1])
                for i in range(0, len(OPCODES), 2)]
OPNUM = {name: num for num, name in OPCODE_TABLE}


class Error(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Error(what)


# ---- deterministic randomness --------------------------------------------------

class Rand:
    """splitmix64: the same stream on every platform and Python version."""

    def __init__(self, seed):
        self.s = seed & (2**64 - 1)

    def u64(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & (2**64 - 1)
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
        return z ^ (z >> 31)

    def below(self, n):
        return self.u64() % n

    def real(self):
        return (self.u64() >> 11) / float(1 << 53)

    def shuffle(self, v):
        for i in range(len(v) - 1, 0, -1):
            j = self.below(i + 1)
            v[i], v[j] = v[j], v[i]


# ---- function names -------------------------------------------------------------

FIXED_NAMES = ["<module>", "_DeadlockError", "_ModuleLock", "close",
               "release", "shutdown"]

VERBS = ["get", "set", "find", "load", "make", "check", "parse", "read",
         "write", "build", "copy", "run", "add", "remove", "update", "join",
         "split", "format", "compile", "resolve", "validate", "convert",
         "init", "create", "handle", "process", "fetch", "match", "apply",
         "walk"]
NOUNS = ["spec", "module", "path", "file", "name", "config", "option",
         "command", "extension", "source", "data", "entry", "item", "dist",
         "package", "header", "library", "flags", "dir", "target", "value",
         "token", "line", "section", "archive", "script", "version", "loader",
         "finder", "cache", "info", "env", "args", "list"]


def function_names(rnd):
    """The 1,019 names besides the excerpt's six: snake_case helpers,
    private helpers and a few dunder methods and code-object names."""
    pool = ["__init__", "__enter__", "__exit__", "__getattr__", "__new__",
            "__repr__", "__eq__", "__hash__", "__iter__", "__next__",
            "__call__", "__len__", "__contains__", "<listcomp>",
            "<genexpr>", "<lambda>", "<dictcomp>", "<setcomp>"]
    for v in VERBS:
        for n in NOUNS:
            pool.append(v + "_" + n)
            pool.append("_" + v + "_" + n)
    rnd.shuffle(pool)
    names = []
    seen = set(FIXED_NAMES)
    for p in pool:
        if p not in seen:
            seen.add(p)
            names.append(p)
        if len(names) == N_FUNCS - len(FIXED_NAMES):
            break
    check(len(names) == N_FUNCS - len(FIXED_NAMES), "not enough names")
    return names


# ---- frames -------------------------------------------------------------------

class Frame:
    __slots__ = ("name", "loop", "segs", "exc", "end", "children", "leaf")

    def __init__(self, name=None, loop=True):
        self.name = name
        self.loop = loop
        self.segs = []       # per pass through the loop top: op count
        self.exc = []        # between passes: "E" (error, exception) or "X"
        self.end = None      # unhandled exception at the end: "E" or "X"
        self.children = {}   # flat op index -> [Frame]
        self.leaf = not loop  # may not call anything

    def nops(self):
        return sum(self.segs)


def build(rnd):
    """The frames, in call order, with their passes, ops and callees."""
    total = {k: c for k, c, _, _ in EVENTS}
    n_frames = total[ENTER]
    n_loop = total[LOOP_ENTER]
    handled = total[LOOP_EXCEPTION] - total[LOOP_EXITING]
    unhandled = total[LOOP_EXITING]
    check(total[LOOP_SLOW] == n_loop + handled,
          "loop slow must be loop enter plus handled exceptions")
    check(n_frames - n_loop == NO_LOOP_FRAMES, "frames without a loop")

    module = Frame("<module>")
    deadlock = Frame("_DeadlockError")
    deadlock.segs = [1]
    deadlock.leaf = True
    modlock = Frame("_ModuleLock")
    shutdown = Frame("shutdown")
    close = Frame("close")
    close.leaf = True
    release = Frame("release")
    release.segs = [1]
    release.leaf = True
    special = [module, modlock, shutdown, close]

    generic = [Frame(loop=False) for _ in range(NO_LOOP_FRAMES)]
    generic += [Frame() for _ in range(n_frames - len(generic) - 6)]
    rnd.shuffle(generic)
    looping = [f for f in generic if f.loop]

    # Passes through the loop: one each, plus one per handled exception.
    for f in special + looping:
        f.segs = [1]
    for _ in range(handled):
        f = looping[rnd.below(len(looping))]
        f.segs.append(1)
        f.exc.append("E")
    ends = list(range(len(looping)))
    rnd.shuffle(ends)
    for i in ends[:unhandled]:
        looping[i].end = "E"
    # Exceptions that do not pass through the error path (a re-raise).
    raised = [(f, i) for f in looping for i in range(len(f.exc))]
    raised += [(f, -1) for f in looping if f.end]
    check(len(raised) == total[LOOP_EXCEPTION], "exception count")
    rnd.shuffle(raised)
    for f, i in raised[:ERRORLESS]:
        if i < 0:
            f.end = "X"
        else:
            f.exc[i] = "X"

    # Instructions: one per pass, the rest spread over the passes.
    extra = total[OP] - total[LOOP_SLOW]
    check(extra >= 0, "fewer ops than passes")
    slots = [(f, i) for f in special + looping for i in range(len(f.segs))]
    for _ in range(extra):
        f, i = slots[rnd.below(len(slots))]
        f.segs[i] += 1

    # Callees: in call order, each frame is called by an op of a frame on
    # the current call path, at or after the op that made the previous
    # call there; the path wanders around a depth of about ten.
    module.children[0] = [deadlock, modlock]
    path = [[module, 0], [modlock, 0]]
    roots = [module]
    for f in generic:
        while path and (path[-1][0].leaf or
                        rnd.real() > (0.62 if len(path) < 8 else
                                      0.5 if len(path) < 14 else 0.3)):
            path.pop()
            if path and rnd.real() < 0.5:
                break
        if not path:
            roots.append(f)
        else:
            parent, cur = path[-1]
            n = parent.nops()
            k = cur
            while k < n - 1 and rnd.real() < 0.35:
                k += 1
            path[-1][1] = k
            parent.children.setdefault(k, []).append(f)
        path.append([f, 0])
    roots.append(shutdown)
    shutdown.children[shutdown.nops() - 1] = [close, release]

    # Names: each once, then the rest weighted towards the first few.
    names = function_names(rnd)
    pick = names + FIXED_NAMES[2:5]
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(pick))]
    cum = []
    s = 0.0
    for w in weights:
        s += w
        cum.append(s)
    drawn = list(names)
    while len(drawn) < len(generic):
        x = rnd.real() * s
        lo, hi = 0, len(cum) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if cum[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        drawn.append(pick[lo])
    rnd.shuffle(drawn)
    for f, n in zip(generic, drawn):
        f.name = n
    return roots


def emit(roots):
    """The events in trace order: (kind, name-or-opcode-slot)."""
    ev = [(INIT, None)]
    add = ev.append

    def frame(f):
        add((ENTER, f.name))
        if f.loop:
            add((LOOP_ENTER, None))
            k = 0
            for si, n in enumerate(f.segs):
                if si:
                    if f.exc[si - 1] == "E":
                        add((LOOP_ERROR, None))
                    add((LOOP_EXCEPTION, None))
                add((LOOP_SLOW, None))
                add((LOOP_FAST, None))
                for _ in range(n):
                    add((DISPATCH, None))
                    add((OP, None))
                    for c in f.children.get(k, ()):
                        frame(c)
                        add((RUNTIME_OTHER, None))
                    k += 1
            if f.end:
                if f.end == "E":
                    add((LOOP_ERROR, None))
                add((LOOP_EXCEPTION, None))
                add((LOOP_EXITING, None))
        add((LOOP_EXIT, None))
        add((EXIT, f.name))

    sys.setrecursionlimit(100000)
    for r in roots:
        frame(r)
        add((RUNTIME_OTHER, None))
    add((FINI, None))
    return ev


def parse_excerpt(text):
    """[(ns, kind, arg)] of an excerpt, names taken from "# func:" lines."""
    out, name = [], None
    for line in text.splitlines():
        if line.startswith("# func: "):
            name = line[len("# func: "):]
            continue
        f = line.split()
        sec, frac = f[0].split(".")
        ns = int(sec) * 10**9 + int(frac)
        kind = int(f[1])
        arg = int(f[2]) if len(f) > 2 else name if kind in (ENTER, EXIT) else None
        out.append((ns, kind, arg))
        name = None
    return out


def assign_opcodes(rnd, ev, head, tail):
    """Opcodes for the op events: the excerpt's where it has them, a shuffle
    of the rest, then the first appearances put in the discussion's order."""
    ops = [i for i, (k, _) in enumerate(ev) if k == OP]
    fixed = {}
    for base, part in ((0, head), (len(ev) - len(tail), tail)):
        for j, (_, k, a) in enumerate(part):
            if k == OP:
                fixed[base + j] = a
    pool = []
    for name, count, _, _ in OPS:
        pool += [OPNUM[name]] * count
    for a in fixed.values():
        pool.remove(a)
    rnd.shuffle(pool)
    it = iter(pool)
    for i in ops:
        ev[i] = (OP, fixed[i] if i in fixed else next(it))
    for a, b in OPS_FIRST_BEFORE:
        na, nb = OPNUM[a], OPNUM[b]
        fa = next(i for i in ops if ev[i][1] == na)
        fb = next(i for i in ops if ev[i][1] == nb)
        if fb < fa:
            ev[fa], ev[fb] = (OP, nb), (OP, na)


def assign_elapsed(rnd, ev, head, tail):
    """Elapsed ns per event: the excerpt's, and around each category's
    target mean for the rest, with each category's total set exactly."""
    el = [None] * len(ev)
    for j in range(len(head) - 1):
        el[j] = head[j + 1][0] - head[j][0]
    el[len(head) - 1] = HEAD_LAST_ELAPSED
    base = len(ev) - len(tail)
    for j in range(len(tail) - 1):
        el[base + j] = tail[j + 1][0] - tail[j][0]
    el[-1] = 0  # fini

    target = {k: m for k, _, _, m in EVENTS if m is not None}
    for name, _, _, m in OPS:
        target[("op", OPNUM[name])] = m
    cats = {}
    for i, (k, a) in enumerate(ev):
        cats.setdefault(("op", a) if k == OP else k, []).append(i)
    for cat, idx in cats.items():
        if cat not in target:
            continue
        total = round(target[cat] * len(idx))
        free = [i for i in idx if el[i] is None]
        left = total - sum(el[i] for i in idx if el[i] is not None)
        check(left >= len(free), "no time left for %r" % (cat,))
        mean = left / len(free)
        for i in free:
            el[i] = max(1, int(mean * (0.4 + 1.2 * rnd.real())))
        diff = left - sum(el[i] for i in free)
        q, r = divmod(abs(diff), len(free))
        step = 1 if diff > 0 else -1
        for n, i in enumerate(free):
            d = q + (n < r)
            if step < 0:
                d = min(d, el[i] - 1)
            el[i] += step * d
            diff -= step * d
        while diff:
            for i in free:
                if diff and (step > 0 or el[i] > 1):
                    el[i] += step
                    diff -= step
    check(all(e is not None for e in el), "an event without elapsed time")
    return el


def verify(ev, el):
    """Recompute the discussion's tables from the events and compare."""
    count, tot, first = {}, {}, {}
    opc, opt, opf = {}, {}, {}
    names = set()
    depth = 0
    for i, ((k, a), e) in enumerate(zip(ev, el)):
        count[k] = count.get(k, 0) + 1
        tot[k] = tot.get(k, 0) + e
        first.setdefault(k, i)
        if k == OP:
            opc[a] = opc.get(a, 0) + 1
            opt[a] = opt.get(a, 0) + e
            opf.setdefault(a, i)
        elif k == ENTER:
            names.add(a)
            depth += 1
        elif k == EXIT:
            depth -= 1
            check(depth >= 0, "exit without enter")
    check(depth == 0, "frames left open")
    check(len(names) == N_FUNCS, "%d distinct names" % len(names))

    def shown(t, c):  # evalprof's truncation to tenths of a us
        return int(int(t / c / 1000.0 * 1000.0) // 100)

    rows = [(KIND_NAMES[k], count[k], tot[k], first[k]) for k in count]
    for k, c, m, _ in EVENTS:
        check(count.get(k) == c, "%s: %d events" % (KIND_NAMES[k], count.get(k, 0)))
        if m is not None or k == OP:
            check(shown(tot[k], c) == m, "%s: mean" % KIND_NAMES[k])
    by_count = [r[0] for r in sorted(rows, key=lambda r: (-r[1], r[3]))]
    check(by_count == [KIND_NAMES[k] for k, _, _, _ in EVENTS], "events by count")
    by_mean = [r[0] for r in sorted(rows, key=lambda r: (-r[2] / r[1], r[3]))]
    check(by_mean == EVENTS_BY_ELAPSED, "events by elapsed: %s" % by_mean)

    name_of = {num: name for num, name in OPCODE_TABLE}
    rows = [(name_of[a], opc[a], opt[a], opf[a]) for a in opc]
    for name, c, m, _ in OPS:
        a = OPNUM[name]
        check(opc.get(a) == c and shown(opt[a], c) == m, "op %s" % name)
    by_count = [r[0] for r in sorted(rows, key=lambda r: (-r[1], r[3]))]
    check(by_count == [r[0] for r in OPS], "ops by count")
    by_mean = [r[0] for r in sorted(rows, key=lambda r: (-r[2] / r[1], r[3]))]
    check(by_mean == OPS_BY_ELAPSED, "ops by elapsed: %s" % by_mean)

    # The ops' weighted mean is the op row of the events table: whatever
    # the exact means behind the ops table, it lies in
    # [sum(count * shown), sum(count * (shown + 0.1))) / count(op).
    n = sum(c for _, c, _, _ in OPS)
    lo = sum(c * m for _, c, m, _ in OPS) * 100 / n
    hi = sum(c * (m + 1) for _, c, m, _ in OPS) * 100 / n
    check(n == count[OP], "ops table does not add up to the op events")
    check(lo < 3500 and hi > 3400,
          "ops table inconsistent with op mean (%.1f..%.1f ns)" % (lo, hi))
    return tot[OP] / count[OP], lo, hi


def main(argv):
    builtin = "--builtin-opcodes" in argv
    args = [a for a in argv if a != "--builtin-opcodes"]
    if len(args) != 1:
        sys.stderr.write(__doc__.splitlines()[-1].strip() + "\n")
        return 2
    check(len(OPCODE_TABLE) == 125, "opcode table")
    rnd = Rand(1617222445)
    head, tail = parse_excerpt(HEAD), parse_excerpt(TAIL)
    ev = emit(build(rnd))
    for base, part in ((0, head), (len(ev) - len(tail), tail)):
        for j, (_, k, a) in enumerate(part):
            check(ev[base + j][0] == k and (k == OP or ev[base + j][1] == a),
                  "excerpt event %d does not fit the frames" % (base + j))
    assign_opcodes(rnd, ev, head, tail)
    el = assign_elapsed(rnd, ev, head, tail)
    verify(ev, el)

    # Timestamps: the excerpt's at both ends; the time the elapsed figures
    # leave out is the tracer writing its log, noted every 16,384 events.
    base = len(ev) - len(tail)
    span = tail[0][0] - head[0][0]
    slack = span - sum(el[:base])
    check(slack >= 0, "the events do not fit between the excerpt's ends")
    marks = list(range(len(head) + 16383, base - 1, 16384))
    logs = {}
    for n, i in enumerate(marks):
        logs[i] = slack // len(marks) + (n < slack % len(marks))

    out = [HEADER]
    if not builtin:
        out.append("# (opcodes of CPython 3.10 as of 2021-03-31: 3.10.0 less "
                   "GEN_START and ROT_N)\n")
        out += ["# opcode: %d %s %d\n" % (num, name, num)
                for num, name in OPCODE_TABLE]
    out.append("\n")
    ts = head[0][0]
    for i, (k, a) in enumerate(ev):
        if k in (ENTER, EXIT):
            out.append("# func: %s\n" % a)
        if k == OP:
            out.append("%d.%09d %d %d\n" % (ts // 10**9, ts % 10**9, k, a))
        else:
            out.append("%d.%09d %d\n" % (ts // 10**9, ts % 10**9, k))
        ts += el[i]
        if i in logs:
            ls = logs[i]
            out.append("# log written: %d.%09d\n" % (ls // 10**9, ls % 10**9))
            ts += ls
    check(ts == tail[-1][0], "the trace does not end at the excerpt's fini")
    text = "".join(out)
    check(HEAD in text and TAIL in text, "the excerpt is not in the trace")
    with open(args[0], "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Error as e:
        sys.stderr.write("gen_discussion_summary: %s\n" % e)
        sys.exit(1)
