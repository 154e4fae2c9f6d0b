#!/usr/bin/env python3
"""Check evalprof's layering: one directory, one library, one layer.

    tools/check-layers.py [ROOT]

The layers, lowest first (docs/HACKING.md):

    util  <-  format  <-  recorder, trace  <-  views  <-  perf  <-  cli

A file may include headers of its own directory and of layers below its
own, never of a layer above or beside it (the recorder and the trace
library do not know each other), and never through a "../" path.  The
public headers under include/evalprof/ belong to the layer that
implements them.  The producers outside src/ (the stock-interpreter
extension in python/_tracer, the interpreter hooks in cpython/hooks) may
use the recorder's layer and below (the hooks name a recorder or util
header "evalprof/NAME": the interpreter's tree has them in
Python/evalprof/).  Each src/<layer>/meson.build may name
only the libraries and dependencies of the layers below it.

Inside the directories of ONE_WAY, calls between files run one way:
file A calling a function that file B defines (or naming it, as a table
of callbacks does) and B calling one of A's, directly or around a longer
circle, is a violation.  Two halves of a layer meet at one interface
(src/recorder: the session drives the sampler through the chunk-source
table of session.h; the sampler calls the session), and a directory's
files stand in an order (src/trace: internal.h lists it).

Prints one line per violation and exits 1 when there is any; prints a
one-line summary and exits 0 otherwise.
"""
import os
import re
import sys

ORDER = {"util": 0, "format": 1, "recorder": 2, "trace": 2, "views": 3,
         "attach": 3,
         "perf": 4, "cli": 5}
PUBLIC = {"kinds.def": "format", "events.h": "format", "record.h": "format",
          "format.h": "format", "recorder.h": "recorder", "trace.h": "trace",
          "replay.h": "trace", "attach.h": "attach"}
# Producers outside src/: what they stand on.
OUTSIDE = {"python/_tracer": "recorder", "cpython/hooks": "recorder",
           "examples": "recorder", "bench": "recorder"}
# Directories whose files' calls must run one way (see above).
ONE_WAY = ("src/recorder", "src/trace", "src/views")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MESON_NAME = re.compile(r"\bevp_([a-z]+?)(?:_dep|_sources)?\b")


def may_use(user, used):
    """True when layer USER may include or link layer USED."""
    if user == used:
        return True
    return ORDER[used] < ORDER[user]


def layer_headers(root):
    """Map a local header's file name to the layer whose directory holds it."""
    owner = {}
    for layer in ORDER:
        d = os.path.join(root, "src", layer)
        for name in os.listdir(d) if os.path.isdir(d) else ():
            if name.endswith(".h"):
                owner.setdefault(name, set()).add(layer)
    return owner


def check_file(path, layer, owner, problems, rel):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for m in INCLUDE.finditer(text):
        inc = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        where = "%s:%d" % (rel, line)
        if inc.startswith("../") or "/../" in inc:
            problems.append('%s: includes "%s" through a relative path'
                            % (where, inc))
            continue
        name = inc[len("evalprof/"):]
        if (inc.startswith("evalprof/") and name not in PUBLIC and
                rel.startswith("cpython/hooks/") and name in owner):
            # the interpreter's tree holds the recorder's sources and the
            # util headers they use in Python/evalprof/ (apply-hooks.py)
            inc = name
        if inc.startswith("evalprof/"):
            used = PUBLIC.get(name)
            if used is None:
                problems.append('%s: includes "%s", a public header no layer '
                                'owns (add it to tools/check-layers.py)'
                                % (where, inc))
            elif not may_use(layer, used):
                problems.append('%s: layer %s includes "%s" of layer %s'
                                % (where, layer, inc, used))
            continue
        homes = owner.get(os.path.basename(inc))
        if not homes:
            continue  # a header beside the file, generated, or a system one
        if layer in homes:
            continue
        bad = [h for h in homes if not may_use(layer, h)]
        if len(bad) == len(homes):
            problems.append('%s: layer %s includes "%s" of layer %s'
                            % (where, layer, inc, "/".join(sorted(bad))))


def check_meson(path, layer, problems, rel):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for m in MESON_NAME.finditer(code):
            used = m.group(1)
            if used in ORDER and not may_use(layer, used):
                problems.append("%s:%d: layer %s names evp_%s of layer %s"
                                % (rel, n, layer, m.group(0)[4:], used))


COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"", re.S)
# a function definition's start: a line that begins with its type and
# name (not static, not a declaration: the parameter list is followed by
# a body)
DEFINITION = re.compile(r"^(?!static\b|typedef\b|extern\b|#)"
                        r"[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\(", re.M)


def defined_functions(code):
    """The names of the functions CODE (comments stripped) defines with
    external linkage."""
    names = set()
    for m in DEFINITION.finditer(code):
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        rest = code[i:i + 200].lstrip()
        if rest.startswith("{") or rest.startswith("__attribute__"):
            names.add(m.group(1))
    return names


def check_one_way(root, d, problems):
    """Calls between the .c files of directory D (under ROOT) must not
    form a circle."""
    full = os.path.join(root, d)
    if not os.path.isdir(full):
        return
    code = {}
    for name in sorted(os.listdir(full)):
        if name.endswith(".c"):
            with open(os.path.join(full, name), encoding="utf-8",
                      errors="replace") as f:
                code[name] = COMMENT.sub(" ", f.read())
    owner = {}
    for name, text in code.items():
        for fn in defined_functions(text):
            owner.setdefault(fn, name)
    uses = {name: {} for name in code}
    for name, text in code.items():
        for fn, home in owner.items():
            if home != name and re.search(r"\b%s\b" % re.escape(fn), text):
                uses[name].setdefault(home, fn)
    # a circle: a path from a file back to itself
    reported = set()
    for start in sorted(uses):
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(uses[node]):
                if nxt == start:
                    circle = path + [start]
                    key = frozenset(circle)
                    if key in reported:
                        continue
                    reported.add(key)
                    steps = ", ".join("%s calls %s's %s" % (a, b, uses[a][b])
                                      for a, b in zip(circle, circle[1:]))
                    problems.append("%s: calls go round in a circle: %s"
                                    % (d, steps))
                elif nxt not in path:
                    stack.append((nxt, path + [nxt]))


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    owner = layer_headers(root)
    problems = []
    files = 0
    dirs = [(os.path.join("src", l), l) for l in ORDER]
    dirs += [(d, l) for d, l in OUTSIDE.items()]
    dirs.append(("include/evalprof", None))
    for d, layer in dirs:
        full = os.path.join(root, d)
        if not os.path.isdir(full):
            if d.startswith("src/"):
                problems.append("%s: missing layer directory" % d)
            continue
        for name in sorted(os.listdir(full)):
            path = os.path.join(full, name)
            rel = os.path.join(d, name)
            if name.endswith((".c", ".h")):
                lay = layer or PUBLIC.get(name)
                if lay is None:
                    problems.append("%s: public header that no layer owns"
                                    % rel)
                    continue
                files += 1
                check_file(path, lay, owner, problems, rel)
            elif name == "meson.build" and d.startswith("src/"):
                check_meson(path, layer, problems, rel)
    extra = sorted(n for n in os.listdir(os.path.join(root, "src"))
                   if os.path.isdir(os.path.join(root, "src", n))
                   and n not in ORDER)
    for n in extra:
        problems.append("src/%s: a directory that is not a layer (add it to "
                        "tools/check-layers.py and docs/HACKING.md)" % n)
    for d in ONE_WAY:
        check_one_way(root, d, problems)
    for p in problems:
        print("layers: " + p)
    if problems:
        print("layers: %d violation(s)" % len(problems))
        return 1
    print("layers: %d files checked, util <- format <- recorder, trace <- "
          "views <- perf <- cli holds; calls run one way in %s"
          % (files, ", ".join(ONE_WAY)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
