#!/usr/bin/env python3
"""Generate src/attach/layouts.c: where evalprof reads another process's
CPython from outside (src/attach, `evalprof dump` and `attach --outside`).

An outside reader sees only the target's memory.  CPython 3.13 and later
publish the offsets of their thread states, frames and code objects for
such readers (_PyRuntime.debug_offsets, a struct of 64-bit words whose
layout is the minor version's); 3.11 and 3.12 publish none.  For each
interpreter this script compiles a small probe against the interpreter's
own headers (Py_BUILD_CORE: the internal ones too) and prints, per minor
version, one table of every field the reader needs: its offset as the
headers give it, and, where the version publishes it, its word in
_Py_DebugOffsets (the reader then takes the target's own value, which an
instrumented interpreter's changed structs make authoritative), and the
facts the offsets leave out (the GIL's struct, a code object's first
traceable instruction, a str's state bits, 3.11's and 3.12's opcode
cache tables).

    tools/gen-layouts.py [--pythons DIR] > src/attach/layouts.c
    tools/gen-layouts.py --check [--pythons DIR] [--table FILE]

The interpreters are those python/find_interpreters.py finds (the ones
the extension is built for); the first of each minor version makes its
table.  --check compiles the probe for every one found and fails when a
table differs from the one in src/attach/layouts.c (another micro
version of the same minor whose layout moved), printing what differs.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

# Each field: (name, C expression of its offset from the headers, or None
# where the version has no such field, the _Py_DebugOffsets member that
# publishes it on 3.13+, or None).  Must match enum evp_pyfield in
# src/attach/pylayout.h, in order.
FIELDS = [
    ("RT_INTERP_HEAD", "offsetof(_PyRuntimeState, interpreters.head)",
     "runtime_state.interpreters_head"),
    ("RT_GIL", "RT_GIL_EXPR", None),
    ("IS_NEXT", "offsetof(PyInterpreterState, next)",
     "interpreter_state.next"),
    ("IS_THREADS_HEAD", "offsetof(PyInterpreterState, threads.head)",
     "interpreter_state.threads_head"),
    ("IS_CEVAL_GIL", "IS_CEVAL_GIL_EXPR", "interpreter_state.ceval_gil"),
    ("GIL_LOCKED", "offsetof(struct _gil_runtime_state, locked)", None),
    ("GIL_LAST_HOLDER", "offsetof(struct _gil_runtime_state, last_holder)",
     None),
    ("GIL_SIZE", "sizeof(struct _gil_runtime_state)", None),
    ("TS_NEXT", "offsetof(PyThreadState, next)", "thread_state.next"),
    ("TS_INTERP", "offsetof(PyThreadState, interp)", "thread_state.interp"),
    ("TS_NATIVE_TID", "offsetof(PyThreadState, native_thread_id)",
     "thread_state.native_thread_id"),
    ("TS_THREAD_ID", "offsetof(PyThreadState, thread_id)",
     "thread_state.thread_id"),
    ("TS_CFRAME", "TS_CFRAME_EXPR", None),
    ("CF_CURRENT_FRAME", "CF_CURRENT_FRAME_EXPR", None),
    ("TS_CURRENT_FRAME", "TS_CURRENT_FRAME_EXPR",
     "thread_state.current_frame"),
    ("FR_PREVIOUS", "offsetof(_PyInterpreterFrame, previous)",
     "interpreter_frame.previous"),
    ("FR_EXECUTABLE", "FR_EXECUTABLE_EXPR", "interpreter_frame.executable"),
    ("FR_INSTR_PTR", "FR_INSTR_PTR_EXPR", "interpreter_frame.instr_ptr"),
    ("FR_OWNER", "offsetof(_PyInterpreterFrame, owner)",
     "interpreter_frame.owner"),
    ("CO_QUALNAME", "offsetof(PyCodeObject, co_qualname)",
     "code_object.qualname"),
    ("CO_FILENAME", "offsetof(PyCodeObject, co_filename)",
     "code_object.filename"),
    ("CO_FIRSTLINENO", "offsetof(PyCodeObject, co_firstlineno)",
     "code_object.firstlineno"),
    ("CO_LINETABLE", "offsetof(PyCodeObject, co_linetable)",
     "code_object.linetable"),
    ("CO_CODE_ADAPTIVE", "offsetof(PyCodeObject, co_code_adaptive)",
     "code_object.co_code_adaptive"),
    ("CO_FIRSTTRACEABLE", "offsetof(PyCodeObject, _co_firsttraceable)",
     None),
    ("CO_SIZE", "offsetof(PyVarObject, ob_size)", None),
    ("OB_TYPE", "offsetof(PyObject, ob_type)", "pyobject.ob_type"),
    ("U_STATE", "offsetof(PyASCIIObject, state)", "unicode_object.state"),
    ("U_LENGTH", "offsetof(PyASCIIObject, length)", "unicode_object.length"),
    ("U_ASCII_SIZE", "sizeof(PyASCIIObject)",
     "unicode_object.asciiobject_size"),
    ("U_COMPACT_SIZE", "sizeof(PyCompactUnicodeObject)", None),
    ("U_UTF8", "offsetof(PyCompactUnicodeObject, utf8)", None),
    ("U_UTF8_LENGTH", "offsetof(PyCompactUnicodeObject, utf8_length)", None),
    ("B_SIZE", "offsetof(PyVarObject, ob_size)", "bytes_object.ob_size"),
    ("B_SVAL", "offsetof(PyBytesObject, ob_sval)", "bytes_object.ob_sval"),
    ("DBG_EVAL_BREAKER", "DBG_EXPR(eval_breaker)",
     "debugger_support.eval_breaker"),
    ("DBG_SUPPORT", "DBG_EXPR(remote_debugger_support)",
     "debugger_support.remote_debugger_support"),
    ("DBG_ENABLED", "DBG_EXPR(remote_debugging_enabled)",
     "debugger_support.remote_debugging_enabled"),
    ("DBG_PENDING", "DBG_EXPR(debugger_pending_call)",
     "debugger_support.debugger_pending_call"),
    ("DBG_PATH", "DBG_EXPR(debugger_script_path)",
     "debugger_support.debugger_script_path"),
    ("DBG_PATH_SIZE", "DBG_EXPR(debugger_script_path_size)",
     "debugger_support.debugger_script_path_size"),
]
# The _Py_DebugOffsets members that exist only from some version on.
PUBLISHED_SINCE = {"debugger_support.": 14}

PROBE = r"""
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX < 0x030D0000
#define NEED_OPCODE_TABLES
#include "internal/pycore_opcode.h"
#undef NEED_OPCODE_TABLES
#endif
#include "internal/pycore_frame.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_code.h"
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_debug_offsets.h"
#endif

#define NONE ((size_t)-1)
#if PY_VERSION_HEX < 0x030C0000
#define RT_GIL_EXPR offsetof(_PyRuntimeState, ceval.gil)
#define IS_CEVAL_GIL_EXPR NONE
#else
#define RT_GIL_EXPR NONE
#define IS_CEVAL_GIL_EXPR offsetof(PyInterpreterState, ceval.gil)
#endif
#if PY_VERSION_HEX < 0x030D0000
#define TS_CFRAME_EXPR offsetof(PyThreadState, cframe)
#define CF_CURRENT_FRAME_EXPR offsetof(_PyCFrame, current_frame)
#define TS_CURRENT_FRAME_EXPR NONE
#define FR_EXECUTABLE_EXPR offsetof(_PyInterpreterFrame, f_code)
#define FR_INSTR_PTR_EXPR offsetof(_PyInterpreterFrame, prev_instr)
#else
#define TS_CFRAME_EXPR NONE
#define CF_CURRENT_FRAME_EXPR NONE
#define TS_CURRENT_FRAME_EXPR offsetof(PyThreadState, current_frame)
#define FR_EXECUTABLE_EXPR offsetof(_PyInterpreterFrame, f_executable)
#define FR_INSTR_PTR_EXPR offsetof(_PyInterpreterFrame, instr_ptr)
#endif
#if PY_VERSION_HEX >= 0x030E0000
#define DBG_EXPR(m) ((size_t)((_Py_DebugOffsets)_Py_DebugOffsets_INIT("")).debugger_support.m)
#else
#define DBG_EXPR(m) NONE
#endif

static void
bits(const char *name, const PyASCIIObject *o)
{
    unsigned char b[sizeof o->state];
    memcpy(b, &o->state, sizeof b);
    unsigned long v = 0;
    for (size_t i = 0; i < sizeof b; i++)
        v |= (unsigned long)b[i] << (8 * i);
    printf("\"%s\": %lu,\n", name, v);
}

int
main(void)
{
    printf("{\"version\": \"%d.%d\", \"micro\": \"%d.%d.%d\",\n",
           PY_MAJOR_VERSION, PY_MINOR_VERSION, PY_MAJOR_VERSION,
           PY_MINOR_VERSION, PY_MICRO_VERSION);
@FIELDS@
#if PY_VERSION_HEX >= 0x030D0000
@SLOTS@
    printf("\"slots\": %zu,\n", sizeof(_Py_DebugOffsets) / 8);
#endif
    PyASCIIObject o;
    memset(&o, 0, sizeof o);
    o.state.kind = 7;
    bits("U_KIND_MASK", &o);
    memset(&o, 0, sizeof o);
    o.state.kind = 1;
    bits("U_KIND_ONE", &o);
    memset(&o, 0, sizeof o);
    o.state.compact = 1;
    bits("U_COMPACT_BIT", &o);
    memset(&o, 0, sizeof o);
    o.state.ascii = 1;
    bits("U_ASCII_BIT", &o);
    printf("\"OWNER_GENERATOR\": %d,\n", (int)FRAME_OWNED_BY_GENERATOR);
    printf("\"OWNER_NOT_PYTHON\": %d,\n", (int)FRAME_OWNED_BY_FRAME_OBJECT + 1);
#if PY_VERSION_HEX < 0x030D0000
    printf("\"deopt\": [");
    for (int i = 0; i < 256; i++)
        printf("%s%d", i ? ", " : "", _PyOpcode_Deopt[i]);
    printf("],\n\"caches\": [");
    for (int i = 0; i < 256; i++)
        printf("%s%d", i ? ", " : "", _PyOpcode_Caches[i]);
    printf("],\n");
#endif
    printf("\"end\": 0}\n");
    return 0;
}
"""


def find_pythons(pythons_dir):
    """The build rows of python/find_interpreters.py: (tag, exe, include,
    X.Y, extra include or None)."""
    cmd = [sys.executable, os.path.join(TOP, "python", "find_interpreters.py")]
    if pythons_dir:
        cmd += ["--pythons", pythons_dir]
    out = subprocess.run(cmd, check=True, capture_output=True,
                         text=True).stdout
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) >= 6 and f[0] == "build":
            rows.append((f[1], f[2], f[3], f[4],
                         None if f[5] == "-" else f[5]))
    return rows


def probe(include, extra, minor):
    fields = []
    for name, expr, _ in FIELDS:
        fields.append('    printf("\\"%s\\": %%zu,\\n", (size_t)(%s));'
                      % (name, expr))
    slots = []
    for name, _, member in FIELDS:
        if member is None:
            continue
        since = [v for k, v in PUBLISHED_SINCE.items()
                 if member.startswith(k)]
        line = ('    printf("\\"slot.%s\\": %%zu,\\n", '
                'offsetof(_Py_DebugOffsets, %s) / 8);' % (name, member))
        if since:
            line = ("#if PY_MINOR_VERSION >= %d\n%s\n#endif"
                    % (since[0], line))
        slots.append(line)
    src = PROBE.replace("@FIELDS@", "\n".join(fields))
    src = src.replace("@SLOTS@", "\n".join(slots))
    with tempfile.TemporaryDirectory(prefix="evalprof-gen-layouts-") as d:
        c = os.path.join(d, "probe.c")
        exe = os.path.join(d, "probe")
        with open(c, "w") as f:
            f.write(src)
        cmd = [os.environ.get("CC", "cc"), "-std=gnu11", "-w", "-isystem",
               include]
        if extra:
            cmd += ["-idirafter", extra]
        cmd += ["-o", exe, c]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("gen-layouts: the probe does not compile against "
                             "%s (CPython %s):\n%s" % (include, minor,
                                                       r.stderr[-3000:]))
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout
    import json
    return json.loads(out)


NONE = (1 << 64) - 1


def table_text(t):
    """The C initializer of one version's table."""
    v = t["version"]
    ident = "layout_" + v.replace(".", "_")
    out = []
    w = out.append
    w("/* CPython %s, from the headers of %s */\n" % (v, t["micro"]))
    if "deopt" in t:
        s = v.replace(".", "_")
        w(byte_array("deopt_" + s, t["deopt"]))
        w(byte_array("caches_" + s, t["caches"]))
    w("static const struct evp_pylayout %s = {\n" % ident)
    w("    .minor = %s,\n" % v.split(".")[1])
    w("    .slots = %d,\n" % t.get("slots", 0))
    w("    .value = {\n")
    for name, _, _ in FIELDS:
        val = t[name]
        w("        [EVP_PF_%s] = %s,\n"
          % (name, "EVP_PF_NONE" if val == NONE else str(val)))
    w("    },\n")
    if "slots" in t:
        w("    .slot = {\n")
        for name, _, member in FIELDS:
            key = "slot." + name
            w("        [EVP_PF_%s] = %d,\n" % (name, t.get(key, -1) if key in t
                                                else -1))
        w("    },\n")
    else:
        w("    .slot = {EVP_PF_UNPUBLISHED},\n")
    for k in ("U_KIND_MASK", "U_KIND_ONE", "U_COMPACT_BIT", "U_ASCII_BIT",
              "OWNER_GENERATOR", "OWNER_NOT_PYTHON"):
        w("    .%s = %d,\n" % (k.lower(), t[k]))
    if "deopt" in t:
        w("    .deopt = deopt_%s,\n" % v.replace(".", "_"))
        w("    .caches = caches_%s,\n" % v.replace(".", "_"))
    w("};\n")
    return "".join(out)


def byte_array(name, values):
    lines = []
    for i in range(0, 256, 16):
        lines.append("    " + ", ".join("%d" % x for x in values[i:i + 16])
                     + ",")
    return ("static const uint8_t %s[256] = {\n%s\n};\n"
            % (name, "\n".join(lines)))


def generate(tables):
    out = []
    w = out.append
    w("/*\n * Where evalprof reads another process's CPython from outside, per\n"
      " * minor version: generated by tools/gen-layouts.py from each\n"
      " * interpreter's own headers (src/attach/pylayout.h says what each\n"
      " * field is).  Do not edit by hand; the attach suite checks it against\n"
      " * every interpreter found (tools/gen-layouts.py --check).\n */\n")
    w("#include <stddef.h>\n#include <stdint.h>\n\n#include \"pylayout.h\"\n\n")
    for t in tables:
        w(table_text(t))
        w("\n")
    w("static const struct evp_pylayout *const layouts[] = {\n")
    for t in tables:
        w("    &layout_%s,\n" % t["version"].replace(".", "_"))
    w("};\n\n")
    w("const struct evp_pylayout *evp_pylayout_find(unsigned minor)\n{\n"
      "    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)\n"
      "        if (layouts[i]->minor == minor)\n"
      "            return layouts[i];\n"
      "    return NULL;\n}\n\n")
    vs = ", ".join(t["version"] for t in tables)
    w("const char *evp_pylayout_versions(void)\n{\n    return \"%s\";\n}\n"
      % vs)
    return "".join(out)


def parse_tables(text):
    """Each version's table in TEXT (the C file) as a dict of its fields
    and arrays, by X.Y: what --check compares, whatever the layout of the
    text."""
    found = {}
    parts = re.split(r"/\* CPython (\d+\.\d+), from the headers of [^*]*\*/",
                     text)
    for ver, body in zip(parts[1::2], parts[2::2]):
        body = body.split("static const struct evp_pylayout *const", 1)[0]
        t = {}
        for name, arr in re.findall(r"static const uint8_t (\w+)_\d+_\d+"
                                    r"\[256\] = \{([^}]*)\}", body):
            t[name] = [int(x) for x in re.findall(r"\d+", arr)]
        for block in ("value", "slot"):
            m = re.search(r"\.%s =\s*\{(.*?)\}," % block, body, re.S)
            if m:
                for k, v in re.findall(r"\[EVP_PF_(\w+)\] = (-?\w+)",
                                       m.group(1)):
                    t["%s.%s" % (block, k)] = v
        for k, v in re.findall(r"\.(u_\w+|owner_\w+|slots|minor) = (\d+)",
                               body):
            t[k] = v
        found[ver] = t
    return found


def formatted(text, path):
    """TEXT as clang-format lays it out with the project's style, when
    clang-format is here (the style suite holds every C file to it)."""
    try:
        r = subprocess.run(["clang-format", "--assume-filename=" + path],
                           input=text, capture_output=True, text=True)
    except OSError:
        return text
    return r.stdout if r.returncode == 0 and r.stdout else text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pythons", help="the launchers' directory "
                    "(BUILD/pythons)")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--table", default=os.path.join(TOP, "src", "attach",
                                                    "layouts.c"))
    a = ap.parse_args()
    rows = find_pythons(a.pythons)
    if a.check:
        with open(a.table) as f:
            have = parse_tables(f.read())
        bad = 0
        for tag, exe, inc, minor, extra in rows:
            t = probe(inc, extra, minor)
            mine = parse_tables(generate([t])).get(minor)
            theirs = have.get(minor)
            if theirs is None:
                print("gen-layouts: CPython %s (%s): no table for %s in %s"
                      % (tag, exe, minor, a.table))
                bad += 1
            elif theirs != mine:
                print("gen-layouts: CPython %s (%s): its layout differs from "
                      "the table of %s in %s" % (tag, exe, minor, a.table))
                for k in sorted(set(theirs) | set(mine)):
                    if theirs.get(k) != mine.get(k):
                        print("  %s: table %s, here %s"
                              % (k, theirs.get(k), mine.get(k)))
                bad += 1
            else:
                print("gen-layouts: CPython %s (%s): as the table of %s"
                      % (tag, exe, minor))
        return 1 if bad else 0
    tables = {}
    for tag, exe, inc, minor, extra in rows:
        if minor not in tables:
            tables[minor] = probe(inc, extra, minor)
    ordered = sorted(tables.values(),
                     key=lambda t: tuple(int(x) for x in
                                         t["version"].split(".")))
    sys.stdout.write(formatted(generate(ordered), a.table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
