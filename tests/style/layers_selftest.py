#!/usr/bin/env python3
"""The layer check must catch what it is for: a copy of src/ and include/
with a lower layer including a higher one, a "../" include, a lower
layer's meson.build linking a higher library, a stray directory and the
session calling the sampler by name (a circle of calls inside
src/recorder) must each be reported, and the clean copy must pass.

    layers_selftest.py ROOT
"""
import os
import shutil
import subprocess
import sys
import tempfile

root = os.path.abspath(sys.argv[1])
check = os.path.join(root, "tools", "check-layers.py")


def run(tree):
    p = subprocess.run([sys.executable, check, tree], capture_output=True,
                       text=True)
    return p.returncode, p.stdout


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


with tempfile.TemporaryDirectory() as tmp:
    for d in ("src", "include", "python", "cpython", "examples", "bench"):
        shutil.copytree(os.path.join(root, d), os.path.join(tmp, d),
                        ignore=shutil.ignore_patterns("*.py", "*.js", "*.sh"))
    rc, out = run(tmp)
    if rc != 0:
        sys.exit("clean copy reported violations:\n" + out)
    append(os.path.join(tmp, "src/trace/replay.c"), '\n#include "views.h"\n')
    append(os.path.join(tmp, "src/util/esc.c"),
           '\n#include "evalprof/trace.h"\n')
    append(os.path.join(tmp, "src/views/tree.c"), '\n#include "../perf/perf.h"\n')
    append(os.path.join(tmp, "src/recorder/recorder.c"),
           '\n#include "internal.h"\n')
    append(os.path.join(tmp, "src/format/meson.build"),
           "\nx = evp_views_dep\n")
    append(os.path.join(tmp, "python/_tracer/module.c"),
           '\n#include "evalprof/replay.h"\n')
    append(os.path.join(tmp, "src/recorder/recorder.c"),
           "\nstatic void stop_all(void)\n{\n    evp_rec_sampler_stop();\n}\n")
    append(os.path.join(tmp, "src/trace/trace.c"),
           "\nstatic void reopen(void)\n{\n    evp_trace_open(0, 0, 0);\n}\n")
    os.mkdir(os.path.join(tmp, "src/misc"))
    rc, out = run(tmp)
    want = ['src/trace/replay.c', 'layer trace includes "views.h" of layer views',
            'layer util includes "evalprof/trace.h" of layer trace',
            'src/views/tree.c', 'through a relative path',
            'layer recorder includes "internal.h" of layer trace',
            'src/format/meson.build', 'names evp_views_dep of layer views',
            'layer recorder includes "evalprof/replay.h"',
            'src/misc: a directory that is not a layer',
            "src/recorder: calls go round in a circle: recorder.c calls "
            "sample.c's evp_rec_sampler_stop",
            "src/trace: calls go round in a circle: "]
    missing = [w for w in want if w not in out]
    if rc != 1 or missing:
        sys.exit("violations not reported (rc %d): %s\n%s" % (rc, missing, out))
print("layer check self-test: %d planted violations reported, clean tree passes"
      % out.count("\nlayers: ") )
