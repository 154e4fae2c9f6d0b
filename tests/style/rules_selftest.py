#!/usr/bin/env python3
"""The rules check must catch what it is for: in a copy of src/, a view
that prints to stderr, a trace file that calls perror, a file-scope sort
key and a static counter inside a function of a view, a view that grows
a stack of its own and one that walks the stack table must each be
reported, and the clean copy must pass.

    rules_selftest.py ROOT
"""
import os
import shutil
import subprocess
import sys
import tempfile

root = os.path.abspath(sys.argv[1])
check = os.path.join(root, "tools", "check-rules.py")


def run(tree):
    p = subprocess.run([sys.executable, check, tree], capture_output=True,
                       text=True)
    return p.returncode, p.stdout


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


with tempfile.TemporaryDirectory() as tmp:
    shutil.copytree(os.path.join(root, "src"), os.path.join(tmp, "src"),
                    ignore=shutil.ignore_patterns("*.py", "*.js", "*.sh"))
    rc, out = run(tmp)
    if rc != 0:
        sys.exit("clean copy reported violations:\n" + out)
    v = lambda name: os.path.join(tmp, "src", "views", name)
    append(v("tree.c"), '\nstatic void oops(void)\n{\n'
           '    fprintf(stderr, "evalprof: tree: out of memory\\n");\n}\n')
    append(os.path.join(tmp, "src", "trace", "replay.c"),
           '\nstatic void oops(void)\n{\n    perror("replay");\n}\n')
    append(v("summary.c"), "\nstatic enum evp_sort sort_by;\n")
    append(v("diff.c"), "\nstatic int count(void)\n{\n"
           "    static int n;\n    return ++n;\n}\n")
    append(v("folded.c"), "\nstatic int push(struct folded *f)\n{\n"
           "    return evp_grow((void **)&f->stack, &f->cap, 1, 4, 16);\n}\n")
    append(v("lines.c"), "\nstatic uint32_t leaf(const struct evp_trace *t)"
           "\n{\n    return evp_trace_stack(t, 1)->func;\n}\n")
    rc, out = run(tmp)
    want = ["quiet: src/views/tree.c", "names stderr",
            "quiet: src/trace/replay.c", "names perror",
            "no-state: src/views/summary.c", "static enum evp_sort sort_by",
            "no-state: src/views/diff.c", "'static int n' inside a function",
            "no-stack: src/views/folded.c", "grows 'stack'",
            "no-stack: src/views/lines.c", "walks the stack table"]
    missing = [w for w in want if w not in out]
    if rc != 1 or missing:
        sys.exit("violations not reported (rc %d): %s\n%s" % (rc, missing, out))
print("rules check self-test: 6 planted violations reported, clean tree "
      "passes")
