#!/usr/bin/env python3
"""Insert evalprof's hooks into a CPython source tree (3.11 or 3.13).

    apply-hooks.py [--pristine DIR] [--check] TREE

TREE is a CPython source tree.  The tool finds every place it needs by
name (labels of the eval loop, macro definitions, function heads), checks
that each is there exactly as expected, and only then edits: it adds small
statements at those places, one #include of evalprof's macro overrides
into Python/ceval.c, a field to the code object, and evalprof's own
sources (cpython/hooks/, the recorder in src/recorder/ and its headers).

The eval function is compiled four times: Python/evalprof_traced.h,
generated from the hooked Python/ceval.c, holds a second copy of the
hooked body of _PyEval_EvalFrameDefault() (the traced copy, every hook
compiled in), which the original (every hook compiled to nothing) calls
while a trace is being recorded; Python/evalprof_sampled.h a third (the
sampled copy, whose hooks store the thread's state word), which the
original calls while sampling; and Python/evalprof_counted.h a fourth
(the sampled copy with exact op counts), called instead while sampling
with EVALPROF_COUNTS.  Python/evalprof_ceval_common.h says why.

If any place does not match, nothing is written and every mismatch is
listed: the version or source layout is not one evalprof knows.

Every inserted line mentions "evalprof", so a hooked tree can be hooked
again: the old insertions are taken out first (running twice is harmless).
With --pristine DIR the original files are read from DIR instead and TREE
files are rewritten only when their content changes, which keeps
incremental builds incremental.  --check verifies without writing.
"""
import argparse
import hashlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
MARK = "/* evalprof-hook */"


# The recorder's sources (src/recorder/NAME.c), and its private headers.
RECORDER = ("clock", "recorder", "sample", "linetable")
RECORDER_HEADERS = ("clock", "linetable", "sampler", "session")


def util_used():
    """The pieces of src/util the recorder uses, found from its includes
    (and theirs): copied into the interpreter with it, so that a new one
    can never be left behind.  A piece is its header, and its .c where
    it has one (UTIL_SOURCES)."""
    want, todo = set(), ["src/recorder/" + f + ".c" for f in RECORDER]
    while todo:
        with open(os.path.join(TOP, todo.pop()), encoding="utf-8") as f:
            text = f.read()
        for name in re.findall(r'^\s*#\s*include\s+"(\w+)\.h"', text, re.M):
            base = os.path.join("src", "util", name)
            if name not in want and os.path.exists(os.path.join(TOP,
                                                                base + ".h")):
                want.add(name)
                todo.append(base + ".h")
                if os.path.exists(os.path.join(TOP, base + ".c")):
                    todo.append(base + ".c")
    return tuple(sorted(want))


UTIL = util_used()
UTIL_SOURCES = tuple(u for u in UTIL if os.path.exists(
    os.path.join(TOP, "src", "util", u + ".c")))


class Insert:
    """Insert TEXT before/after the line matching TARGET.

    ANCHORS are regexes located in order: the first must match exactly one
    line of the file, each next one is the first match after the previous.
    TARGET is then the first match after the last anchor, within WITHIN
    lines.  Without anchors, TARGET must match exactly one line.
    """

    def __init__(self, path, target, text, where="after", anchors=(),
                 within=120, what=None, mark=True):
        self.path = path
        self.target = target
        self.text = text
        self.where = where
        self.anchors = list(anchors)
        self.within = within
        self.what = what or target
        self.mark = mark


class Expect:
    """The file must contain REGEX (multi-line) exactly COUNT times."""

    def __init__(self, path, regex, what, count=1):
        self.path = path
        self.regex = regex
        self.what = what
        self.count = count


class Generate:
    """Write DST in the tree from the original text of SRC with FUNC."""

    def __init__(self, src, dst, func, what):
        self.src = src
        self.dst = dst
        self.func = func
        self.what = what


class Copy:
    """Copy SRC (relative to the evalprof checkout) to DST in the tree."""

    def __init__(self, src, dst):
        self.src = src
        self.dst = dst


class TracedCopy:
    """Write DST in the tree: the traced copy of the eval function.

    It is made from the *hooked* text of SRC (after every Insert), so the
    two copies of the function carry the same hooks: the one in SRC is
    compiled with EVP_COPY_TRACED 0 (every hook compiles to nothing), the
    one in DST with 1.  HEAD matches the function's name line; the body
    runs from the line before it (the return type) to the first "}" in
    column 0.
    """

    def __init__(self, src, dst, head, name, what, copy=("EVP_COPY_TRACED",)):
        self.src = src
        self.dst = dst
        self.head = head
        self.name = name
        self.what = what
        self.copy = copy


def traced_targets(plain, handlers_text, exits, part, pairs=()):
    """The traced dispatch of evalprof_ceval.h, from opcode_targets.h.

    PART "table": Python/evalprof_targets.h, CPython's table with each
    handler's EVP_TRACED_ entry instead; PART "entries":
    Python/evalprof_entries.h, those entries (record the op, jump to the
    handler).  Opcodes in EXITS, and labels that TARGET() does not make,
    keep their plain entry; those in PAIRS (superinstructions) record the
    op of the instruction they also run.  Returns (text, problem).
    """
    entries = re.findall(r"&&(\w+)", plain)
    if len(entries) != 256 or "opcode_targets[256]" not in plain:
        return None, ("Python/opcode_targets.h: expected a table of 256 "
                      "label addresses, found %d" % len(entries))
    made = set(re.findall(r"\bTARGET\((\w+)\)", handlers_text))
    table, blocks = [], []
    for label in entries:
        name = label[len("TARGET_"):] if label.startswith("TARGET_") else None
        if name and name in made and name not in exits:
            table.append("    &&EVP_TRACED_%s," % name)
            if all(b[0] != name for b in blocks):
                entry = "EVP_OP_ENTRY_PAIR" if name in pairs else "EVP_OP_ENTRY"
                blocks.append((name,
                               "EVP_TRACED_%s: __attribute__((cold));\n"
                               "    %s(%s);\n"
                               "    goto TARGET_%s;\n"
                               % (name, entry, name, name)))
        else:
            table.append("    &&%s," % label)
    if len(blocks) < 100:
        return None, ("Python/opcode_targets.h: fewer than 100 of its labels "
                      "are TARGET() handlers")
    head = ("/* evalprof: generated by cpython/apply-hooks.py from "
            "Python/opcode_targets.h\n * (see Python/evalprof_ceval.h); "
            "only the traced and counted\n * copies of the eval function "
            "have them. */\n"
            "#if EVP_COPY_TRACED || EVP_COPY_COUNTED\n")
    if part == "table":
        return (head + "static void *evp_traced_targets[256] = {\n%s\n};\n"
                "#endif\n#if EVP_COPY_TRACED\nEVP_TARGETS\n#endif\n"
                "#if EVP_COPY_COUNTED\nEVP_COUNTED_TABLE_SET();\n#endif\n"
                % "\n".join(table)), None
    return head + "".join(b for _, b in blocks) + "#endif\n", None


def traced_copy(text, head, name, copy=("EVP_COPY_TRACED",)):
    """A copy of the eval function in TEXT (the hooked ceval.c) compiled
    with the macros in COPY 1: Python/evalprof_traced.h (EVP_COPY_TRACED),
    Python/evalprof_sampled.h (EVP_COPY_SAMPLED), Python/
    evalprof_counted.h (EVP_COPY_SAMPLED and EVP_COPY_COUNTED).  Returns
    (text, problem)."""
    lines = text.splitlines(keepends=True)
    rx = re.compile(head)
    hits = [n for n, line in enumerate(lines) if rx.search(line)]
    if len(hits) != 1:
        return None, "the head of the eval function matched %d lines" % len(
            hits)
    start = hits[0]
    end = next((n for n in range(start + 1, len(lines))
                if lines[n].rstrip("\n") == "}"), None)
    if (end is None or start == 0 or lines[start + 1].rstrip("\n") != "{"
            or not re.match(r"^PyObject\* _Py_HOT_FUNCTION$",
                            lines[start - 1])):
        return None, ("_PyEval_EvalFrameDefault() is not 'PyObject* "
                      "_Py_HOT_FUNCTION', its head, '{' ... '}'")
    body = "".join(lines[start + 1:end + 1])
    fname = "_PyEval_EvalFrameDefault"
    kind = name[len("evp_eval_frame_"):]
    on = "".join("#undef %s\n#define %s 1\n" % (m, m) for m in copy)
    off = "".join("#undef %s\n#define %s 0\n" % (m, m) for m in copy)
    out = ("/* evalprof: generated by cpython/apply-hooks.py from the hooked "
           "Python/ceval.c\n"
           " * (see Python/evalprof_ceval_common.h): the %s copy of %s(),\n"
           " * the same body with its hooks compiled in. */\n"
           "#if EVP_TWO_COPIES\n%s\n"
           "static PyObject* _Py_HOT_FUNCTION\n%s\n%s\n%s"
           "#endif\n" % (kind, fname, on, lines[start].rstrip(
               "\n").replace(fname, name, 1), body, off))
    return out, None


def c_line(indent, stmt):
    return " " * indent + stmt + " " + MARK


# ---- what both versions share -------------------------------------------

def common_edits(ver):
    e = []
    # evalprof's sources
    e.append(Copy("cpython/hooks/pycore_evalprof.h",
                  "Include/internal/pycore_evalprof.h"))
    e.append(Copy("cpython/hooks/evalprof.c", "Python/evalprof.c"))
    e.append(Copy("cpython/hooks/ceval-%s.h" % ver, "Python/evalprof_ceval.h"))
    e.append(Copy("cpython/hooks/ceval-common.h",
                  "Python/evalprof_ceval_common.h"))
    # kinds.def: the event vocabulary that events.h and kinds.c expand
    for h in ("kinds.def", "events.h", "record.h", "recorder.h", "format.h"):
        e.append(Copy("include/evalprof/" + h,
                      "Include/internal/evalprof/" + h))
    for f in tuple("src/recorder/%s.c" % r for r in RECORDER) + tuple(
            "src/recorder/%s.h" % r for r in RECORDER_HEADERS) + (
              "src/format/codec.c", "src/format/kinds.c") + tuple(
                  "src/util/%s.h" % u for u in UTIL) + tuple(
                      "src/util/%s.c" % u for u in UTIL_SOURCES):
        e.append(Copy(f, "Python/evalprof/" + f.split("/")[-1]))

    # the function id cached in each code object
    e.append(Insert(
        "Include/cpython/code.h", r"^\s*void \*co_extra;\s*\\$",
        "    uint32_t _co_evalprof_id; /* evalprof function id, 0: none */"
        "      \\",
        where="before", anchors=[r"^#define _PyCode_DEF\(SIZE\) \{"],
        within=80, what="the co_extra field of _PyCode_DEF"))
    e.append(Insert(
        "Objects/codeobject.c", r"^    co->co_extra = NULL;$",
        c_line(4, "co->_co_evalprof_id = 0;"),
        anchors=[r"^init_code\(PyCodeObject \*co, struct _PyCodeConstructor"
                 r" \*con\)$"],
        within=200, what="co->co_extra = NULL in init_code()"))

    # start-up, sys module, finalisation
    for f in ("Modules/main.c", "Python/pylifecycle.c", "Python/sysmodule.c"):
        e.append(Insert(f, r'^#include "Python\.h"$',
                        '#include "pycore_evalprof.h"   ' + MARK,
                        what='#include "Python.h"'))
    e.append(Insert(
        "Modules/main.c", r"^    status = _PyRuntime_Initialize\(\);$",
        c_line(4, "_PyEvalprof_InitFromArgs(args->argc, args->use_bytes_argv,"
               " args->bytes_argv, args->wchar_argv);"),
        where="before", anchors=[r"^pymain_init\(const _PyArgv \*args\)$"],
        within=10, what="the start of pymain_init()"))
    # the program's roots, once site is imported and the program known
    e.append(Insert(
        "Modules/main.c", r"^    pymain_import_readline\(config\);$",
        c_line(4, "_PyEvalprof_InitRoots(config, main_importer_path);"),
        where="before", anchors=[r"^pymain_run_python\(int \*exitcode\)$"],
        within=40, what="pymain_import_readline() in pymain_run_python()"))
    e.append(Insert(
        "Python/pylifecycle.c", r"^\{$",
        c_line(4, "_PyEvalprof_InitFromEnv();"),
        anchors=[r"^Py_InitializeFromConfig\(const PyConfig \*config\)$"],
        within=2, what="the start of Py_InitializeFromConfig()"))
    e.append(Insert(
        "Python/pylifecycle.c", r"^    call_ll_exitfuncs\(runtime\);$",
        c_line(4, "_PyEvalprof_Fini();"),
        what="call_ll_exitfuncs() at the end of finalisation"))
    e.append(Insert(
        "Python/sysmodule.c",
        r'^    if \(_PyImport_FixupBuiltin\(.*sysmod, "sys", .*\) < 0\) \{$',
        "\n".join([c_line(4, "if (_PyEvalprof_InitSys(sysdict) < 0) {"),
                   c_line(8, "goto error;"),
                   c_line(4, "}")]),
        where="before",
        anchors=[r"^_PySys_Create\(PyThreadState \*tstate, "
                 r"PyObject \*\*sysmod_p\)$"],
        within=80, what="_PyImport_FixupBuiltin() in _PySys_Create()"))

    # os._exit() closes the trace: a forked child usually leaves that way
    e.append(Insert("Modules/posixmodule.c", r'^#include "Python\.h"$',
                    '#include "pycore_evalprof.h"   ' + MARK,
                    what='#include "Python.h"'))
    e.append(Insert(
        "Modules/posixmodule.c", r"^    _exit\(status\);$",
        c_line(4, "_PyEvalprof_Exit();"), where="before",
        anchors=[r"^os__exit_impl\(PyObject \*module, int status\)$"],
        within=4, what="_exit(status) in os__exit_impl()"))

    # the eval function's locals and the labels both loops share
    ceval = "Python/ceval.c"
    head = (r"^_PyEval_EvalFrameDefault\(PyThreadState \*tstate, "
            r"_PyInterpreterFrame \*frame, int throwflag\)$")
    e.append(Insert(ceval, r"^\{$", c_line(4, "EVP_LOCALS"),
                    anchors=[head], within=2,
                    what="the body of _PyEval_EvalFrameDefault()"))
    e.append(Insert(ceval, r'^#include "opcode_targets\.h"$',
                    '#include "evalprof_targets.h"   ' + MARK,
                    anchors=[head], within=20,
                    what="the opcode_targets table in the eval function"))
    # the traced, sampled and counted copies of the eval function, after it
    e.append(Insert(ceval, r"^\}$",
                    '#include "evalprof_traced.h"   ' + MARK + "\n" +
                    '#include "evalprof_sampled.h"   ' + MARK + "\n" +
                    '#include "evalprof_counted.h"   ' + MARK,
                    anchors=[head], within=6000,
                    what="the end of _PyEval_EvalFrameDefault()"))
    e.append(TracedCopy(ceval, "Python/evalprof_traced.h", head,
                        "evp_eval_frame_traced", "the traced copy of the "
                        "eval function"))
    e.append(TracedCopy(ceval, "Python/evalprof_sampled.h", head,
                        "evp_eval_frame_sampled", "the sampled copy of the "
                        "eval function", copy=("EVP_COPY_SAMPLED",)))
    e.append(TracedCopy(ceval, "Python/evalprof_counted.h", head,
                        "evp_eval_frame_counted", "the counted copy of the "
                        "eval function",
                        copy=("EVP_COPY_SAMPLED", "EVP_COPY_COUNTED")))
    # a thread that ends stops being sampled
    e.append(Insert("Python/pystate.c", r'^#include "Python\.h"$',
                    '#include "pycore_evalprof.h"   ' + MARK,
                    what='#include "Python.h"'))
    e.append(Insert(
        "Python/pystate.c", r"^\{$",
        c_line(4, "_PyEvalprof_ThreadClear(tstate);"),
        anchors=[r"^PyThreadState_Clear\(PyThreadState \*tstate\)$"],
        within=2, what="the start of PyThreadState_Clear()"))
    for label, hook in (("start_frame", "EVP_HOOK_START_FRAME();"),
                        ("resume_frame", "EVP_HOOK_RESUME_FRAME();"),
                        ("exception_unwind", "EVP_HOOK_EXCEPTION_UNWIND();"),
                        ("exit_unwind", "EVP_HOOK_EXIT_UNWIND();")):
        e.append(Insert(ceval, r"^%s:$" % label, c_line(4, hook),
                        anchors=[head], within=6000,
                        what="label %s: in _PyEval_EvalFrameDefault()"
                        % label))
    return e


# ---- 3.13: the generated interpreter ------------------------------------

def edits_313():
    e = common_edits("3.13")
    ceval = "Python/ceval.c"
    macros = "Python/ceval_macros.h"
    head = (r"^_PyEval_EvalFrameDefault\(PyThreadState \*tstate, "
            r"_PyInterpreterFrame \*frame, int throwflag\)$")
    e.append(Insert(ceval, r'^#include "ceval_macros\.h"$',
                    '#include "evalprof_ceval.h"   ' + MARK,
                    what='#include "ceval_macros.h"'))
    # error: is the label after pop_1_error:
    e.append(Insert(ceval, r"^error:$", c_line(8, "EVP_HOOK_ERROR();"),
                    anchors=[head, r"^pop_1_error:$"], within=6,
                    what="label error: after pop_1_error:"))
    e.append(Insert(ceval, r"^    if \(frame == &entry_frame\) \{$",
                    c_line(4, "EVP_HOOK_UNWOUND();"), where="before",
                    anchors=[head, r"^exit_unwind:$"], within=15,
                    what="the entry-frame test in exit_unwind:"))
    for part, dst in (("table", "Python/evalprof_targets.h"),
                      ("entries", "Python/evalprof_entries.h")):
        e.append(Generate(
            "Python/opcode_targets.h", dst,
            lambda text, orig, part=part: traced_targets(
                text, orig("Python/generated_cases.c.h"),
                {"INSTRUMENTED_INSTRUCTION", "INTERPRETER_EXIT"}, part),
            "the traced dispatch table"))
    e.append(Insert(ceval, r"^pop_4_error:$",
                    '#include "evalprof_entries.h"   ' + MARK,
                    where="before", anchors=[head], within=6000,
                    what="label pop_4_error: after the instructions"))
    # The macros evalprof_ceval.h redefines must still look like this.
    e += [
        Expect(macros, r"#  define TARGET\(op\) TARGET_##op:\n"
               r"#  define DISPATCH_GOTO\(\) goto \*opcode_targets\[opcode\]",
               "TARGET(op) as label TARGET_op and DISPATCH_GOTO() through "
               "opcode_targets"),
        Expect(macros, r"#define INSTRUCTION_STATS\(op\) \(\(void\)0\)",
               "INSTRUCTION_STATS(op) defined as ((void)0)"),
        Expect(macros, r"#define PRE_DISPATCH_GOTO\(\) \(\(void\)0\)",
               "PRE_DISPATCH_GOTO() defined as ((void)0)"),
        Expect(macros, r"#define DISPATCH\(\) \\\n\s*\{ \\\n\s*NEXTOPARG\(\);"
               r" \\\n\s*PRE_DISPATCH_GOTO\(\); \\\n\s*DISPATCH_GOTO\(\); \\",
               "DISPATCH() as NEXTOPARG; PRE_DISPATCH_GOTO; DISPATCH_GOTO"),
        Expect(macros, r"#define DISPATCH_SAME_OPARG\(\) \\\n\s*\{ \\\n\s*"
               r"opcode = next_instr->op\.code; \\\n\s*PRE_DISPATCH_GOTO\(\);"
               r" \\\n\s*DISPATCH_GOTO\(\); \\\n\s*\}",
               "DISPATCH_SAME_OPARG() as written in 3.13"),
        Expect(macros, r"#define CHECK_EVAL_BREAKER\(\) \\\n\s*"
               r"_Py_CHECK_EMSCRIPTEN_SIGNALS_PERIODICALLY\(\); \\\n\s*"
               r"QSBR_QUIESCENT_STATE\(tstate\); \\\n\s*if \("
               r"_Py_atomic_load_uintptr_relaxed\(&tstate->eval_breaker\) & "
               r"_PY_EVAL_EVENTS_MASK\) \{ \\\n\s*if \(_Py_HandlePending\("
               r"tstate\) != 0\) \{ \\\n\s*GOTO_ERROR\(error\); \\\n\s*\} "
               r"\\\n\s*\}\n",
               "CHECK_EVAL_BREAKER() as written in 3.13"),
        Expect(macros, r"#define DEOPT_IF\(COND, INSTNAME\)\s*\\\n\s*if "
               r"\(\(COND\)\) \{\s*\\\n[^\n]*\n\s*UPDATE_MISS_STATS\(\("
               r"INSTNAME\)\);\s*\\\n\s*assert\(_PyOpcode_Deopt\[opcode\] == "
               r"\(INSTNAME\)\);\s*\\\n\s*GO_TO_INSTRUCTION\(INSTNAME\);\s*"
               r"\\\n\s*\}\n",
               "DEOPT_IF() as written in 3.13"),
        Expect(macros, r"#define SKIP_OVER\(x\)\s+\(next_instr \+= \(x\)\)",
               "SKIP_OVER(x) as (next_instr += (x))"),
        Expect(macros, r"#define LLTRACE_RESUME_FRAME\(\) \(\(void\)0\)",
               "LLTRACE_RESUME_FRAME() defined as ((void)0)"),
        Expect(macros, r"static inline void _Py_LeaveRecursiveCallPy\("
               r"PyThreadState \*tstate\)",
               "the function _Py_LeaveRecursiveCallPy()"),
        # the frame switches LLTRACE_RESUME_FRAME() follows
        Expect("Python/generated_cases.c.h",
               r"_Py_LeaveRecursiveCallPy\(tstate\);", "frame exits", 7),
        Expect("Python/generated_cases.c.h",
               r"tstate->py_recursion_remaining--;\n\s*LOAD_SP\(\);\n\s*"
               r"LOAD_IP\(0\);\n\s*LLTRACE_RESUME_FRAME\(\);",
               "the _PUSH_FRAME micro-op", 5),
        Expect("Python/generated_cases.c.h", r"\bSKIP_OVER\(", "SKIP_OVER()",
               2),
        Expect(ceval, r"^extern const struct _PyCode_DEF\(8\) "
               r"_Py_InitCleanup;$", "the __init__ shim _Py_InitCleanup"),
    ]
    # os.fork() warns when the process has more than one thread (3.12+).
    e.append(Insert(
        "Modules/posixmodule.c", r"^    if \(num_python_threads <= 0\) \{$",
        c_line(4, "num_python_threads -= _PyEvalprof_HelperThreads();"),
        where="before",
        anchors=[r"^warn_about_fork_with_threads\(const char\* name\)$"],
        within=60, what="the thread count in warn_about_fork_with_threads()"))
    return e


# ---- 3.11: the hand-written loop ----------------------------------------

SUPERINSTRUCTIONS_311 = ("LOAD_FAST__LOAD_FAST", "LOAD_FAST__LOAD_CONST",
                         "STORE_FAST__LOAD_FAST", "STORE_FAST__STORE_FAST",
                         "LOAD_CONST__LOAD_FAST")

def edits_311():
    e = common_edits("3.11")
    ceval = "Python/ceval.c"
    head = (r"^_PyEval_EvalFrameDefault\(PyThreadState \*tstate, "
            r"_PyInterpreterFrame \*frame, int throwflag\)$")
    # the overrides go after ceval.c's own macros, before the function
    e.append(Insert(ceval, r"^PyObject\* _Py_HOT_FUNCTION$",
                    '#include "evalprof_ceval.h"   ' + MARK,
                    where="before",
                    what="the line before _PyEval_EvalFrameDefault()"))
    labels = (("handle_eval_breaker", "EVP_HOOK_EVAL_BREAKER();", 4),
              ("miss", "EVP_HOOK_MISS();", 4),
              ("error", "EVP_HOOK_ERROR();", 8),
              ("resume_with_error", "EVP_HOOK_RESUME_WITH_ERROR();", 4))
    for label, hook, ind in labels:
        e.append(Insert(ceval, r"^%s:$" % label, c_line(ind, hook),
                        anchors=[head], within=6000,
                        what="label %s: in _PyEval_EvalFrameDefault()"
                        % label))
    e.append(Insert(ceval, r"^        return NULL;$",
                    c_line(8, "EVP_HOOK_C_RETURN();"), where="before",
                    anchors=[head, r"^exit_unwind:$"], within=10,
                    what="return NULL in exit_unwind:"))
    # the returns of the three instructions that end a frame
    for target, ret in (("RETURN_VALUE", "return retval;"),
                        ("YIELD_VALUE", "return retval;"),
                        ("RETURN_GENERATOR", "return (PyObject *)gen;")):
        anchor = r"^        TARGET\(%s\) \{$" % target
        e.append(Insert(ceval, r"^            _Py_LeaveRecursiveCallTstate"
                        r"\(tstate\);$", c_line(12, "EVP_HOOK_LEAVE();"),
                        where="before", anchors=[head, anchor], within=25,
                        what="_Py_LeaveRecursiveCallTstate in %s" % target))
        e.append(Insert(ceval, r"^            %s$" % re.escape(ret),
                        c_line(12, "EVP_HOOK_C_RETURN();"), where="before",
                        anchors=[head, anchor], within=40,
                        what="%s in %s" % (ret, target)))
    e.append(Expect(ceval, r"\n    if \(throwflag\) \{\n",
                    "the throwflag branch of _PyEval_EvalFrameDefault()"))
    e.append(Insert(ceval, r"^            DISPATCH\(\);$",
                    c_line(12, "EVP_HOOK_RESUME_QUICK();"), where="before",
                    anchors=[head, r"^        TARGET\(RESUME_QUICK\) \{$"],
                    within=12, what="the fast path of RESUME_QUICK"))
    for fused in ("COMPARE_OP_FLOAT_JUMP", "COMPARE_OP_INT_JUMP",
                  "COMPARE_OP_STR_JUMP"):
        e.append(Insert(ceval, r"^            NEXTOPARG\(\);$",
                        c_line(12, "EVP_HOOK_FUSED_OP();"),
                        anchors=[head, r"^        TARGET\(%s\) \{$" % fused],
                        within=40, what="NEXTOPARG() in %s" % fused))
    for part, dst in (("table", "Python/evalprof_targets.h"),
                      ("entries", "Python/evalprof_entries.h")):
        e.append(Generate(
            "Python/opcode_targets.h", dst,
            lambda text, orig, part=part: traced_targets(
                text, orig(ceval), set(), part, SUPERINSTRUCTIONS_311),
            "the traced dispatch table"))
    e.append(Insert(ceval, r"^miss:$",
                    '#include "evalprof_entries.h"   ' + MARK,
                    where="before", anchors=[head], within=6000,
                    what="label miss: after the instructions"))
    for sup in SUPERINSTRUCTIONS_311:
        # the pair: the second instruction is the next code unit
        e.append(Expect(ceval, r"TARGET\(%s\) \{\n(?:[^\n]*\n){0,6}\s*"
                        r"NEXTOPARG\(\);\n\s*next_instr\+\+;" % sup,
                        "superinstruction %s reading its second half "
                        "from the next code unit" % sup))
    e += [
        Expect(ceval, r"#define DISPATCH_GOTO\(\) goto \*opcode_targets"
               r"\[opcode\]", "DISPATCH_GOTO() through opcode_targets"),
        Expect(ceval, r"#define INSTRUCTION_START\(op\) \(frame->prev_instr "
               r"= next_instr\+\+\)", "INSTRUCTION_START(op) as in 3.11"),
        Expect(ceval, r"#define TARGET\(op\) TARGET_##op: "
               r"INSTRUCTION_START\(op\);", "TARGET(op) using "
               "INSTRUCTION_START(op)"),
        Expect(ceval, r"#define PRE_DISPATCH_GOTO\(\) \(\(void\)0\)",
               "PRE_DISPATCH_GOTO() defined as ((void)0)"),
        Expect(ceval, r"#define DISPATCH_SAME_OPARG\(\) \\\n\s*\{ \\\n\s*"
               r"opcode = _Py_OPCODE\(\*next_instr\); \\\n\s*"
               r"PRE_DISPATCH_GOTO\(\); \\\n\s*opcode \|= cframe\.use_tracing"
               r" OR_DTRACE_LINE; \\\n\s*DISPATCH_GOTO\(\); \\\n\s*\}",
               "DISPATCH_SAME_OPARG() as written in 3.11"),
        Expect(ceval, r"#define CHECK_EVAL_BREAKER\(\) \\\n\s*"
               r"_Py_CHECK_EMSCRIPTEN_SIGNALS_PERIODICALLY\(\); \\\n\s*if "
               r"\(_Py_atomic_load_relaxed_int32\(eval_breaker\)\) \{ \\\n\s*"
               r"goto handle_eval_breaker; \\\n\s*\}\n",
               "CHECK_EVAL_BREAKER() as written in 3.11"),
        Expect(ceval, r"#define SKIP_CALL\(\) \\\n\s*JUMPBY\("
               r"INLINE_CACHE_ENTRIES_PRECALL \+ 1 \+ "
               r"INLINE_CACHE_ENTRIES_CALL\)\n", "SKIP_CALL() as in 3.11"),
        Expect(ceval, r"\bgoto start_frame;", "inlined calls", 4),
    ]
    return e


SPECS = {"3.13": edits_313, "3.11": edits_311}
LATER = {
    "3.12": "3.12's generated loop starts instructions with "
            "INSTRUCTION_START, not INSTRUCTION_STATS, and inlines calls "
            "through DISPATCH_INLINED only",
    "3.14": "3.14 generates the loop's labels from bytecodes.c and may "
            "run as tail calls",
}


# ---- machinery ------------------------------------------------------------

class Refusal(Exception):
    pass


def tree_version(tree):
    path = os.path.join(tree, "Include", "patchlevel.h")
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as exc:
        raise Refusal("%s: not a CPython source tree (%s)"
                      % (tree, exc.strerror))
    major = re.search(r"#define PY_MAJOR_VERSION\s+(\d+)", text)
    minor = re.search(r"#define PY_MINOR_VERSION\s+(\d+)", text)
    full = re.search(r'#define PY_VERSION\s+"([^"]+)"', text)
    if not (major and minor):
        raise Refusal("%s: no version in Include/patchlevel.h" % tree)
    return "%s.%s" % (major.group(1), minor.group(1)), (
        full.group(1) if full else "?")


def strip_hooks(text):
    """The file as it was before evalprof's insertions."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if "evalprof" not in line.lower())


def locate(lines, ins):
    """Index of the target line of INS, or an error message."""
    start = 0
    for i, anchor in enumerate(ins.anchors):
        rx = re.compile(anchor)
        if i == 0:
            hits = [n for n, line in enumerate(lines) if rx.search(line)]
            if len(hits) != 1:
                return "%s: %s: anchor /%s/ matched %d lines (expected 1)" % (
                    ins.path, ins.what, anchor, len(hits))
            start = hits[0] + 1
        else:
            n = next((n for n in range(start, len(lines))
                      if rx.search(lines[n])), None)
            if n is None:
                return "%s: %s: anchor /%s/ not found" % (
                    ins.path, ins.what, anchor)
            start = n + 1
    rx = re.compile(ins.target)
    if not ins.anchors:
        hits = [n for n, line in enumerate(lines) if rx.search(line)]
        if len(hits) != 1:
            return "%s: %s: /%s/ matched %d lines (expected 1)" % (
                ins.path, ins.what, ins.target, len(hits))
        return hits[0]
    for n in range(start, min(len(lines), start + ins.within)):
        if rx.search(lines[n]):
            return n
    return "%s: %s: /%s/ not found within %d lines" % (
        ins.path, ins.what, ins.target, ins.within)


def plan(tree, pristine, ver):
    """New contents {relpath: text} for TREE, or raise Refusal."""
    edits = SPECS[ver]()
    originals, problems, out = {}, [], {}

    def original(rel):
        if rel not in originals:
            src = os.path.join(pristine or tree, rel)
            try:
                with open(src, encoding="utf-8", newline="") as f:
                    text = f.read()
            except OSError as exc:
                problems.append("%s: cannot read (%s)" % (rel, exc.strerror))
                text = None
            if text is not None and pristine is None:
                text = strip_hooks(text)
            if text is not None and "evalprof" in text.lower():
                problems.append("%s: mentions evalprof in its original text"
                                % rel)
            originals[rel] = text
        return originals[rel]

    # Locate everything against the original text first.
    inserts = {}
    for ed in edits:
        if isinstance(ed, (Copy, Generate, TracedCopy)):
            continue
        text = original(ed.path)
        if text is None:
            continue
        if isinstance(ed, Expect):
            n = len(re.findall(ed.regex, text, re.M))
            if n != ed.count:
                problems.append("%s: expected %s (%d time%s), found %d" % (
                    ed.path, ed.what, ed.count, "" if ed.count == 1 else "s",
                    n))
            continue
        lines = text.splitlines(keepends=True)
        at = locate(lines, ed)
        if isinstance(at, str):
            problems.append(at)
            continue
        inserts.setdefault(ed.path, []).append((at, ed))
    if problems:
        raise Refusal("\n".join(problems))

    for rel, items in inserts.items():
        lines = originals[rel].splitlines(keepends=True)
        # apply from the bottom so earlier indices stay valid
        for at, ed in sorted(items, key=lambda x: x[0], reverse=True):
            text = ed.text if ed.text.endswith("\n") else ed.text + "\n"
            pos = at + 1 if ed.where == "after" else at
            lines.insert(pos, text)
        out[rel] = "".join(lines)

    for ed in edits:
        if isinstance(ed, Copy):
            with open(os.path.join(TOP, ed.src), encoding="utf-8") as f:
                out[ed.dst] = f.read()
        elif isinstance(ed, Generate):
            text = original(ed.src)
            if text is None:
                continue
            gen, problem = ed.func(text, lambda rel: original(rel) or "")
            if problem:
                problems.append("%s: %s" % (ed.what, problem))
            else:
                out[ed.dst] = gen
        elif isinstance(ed, TracedCopy):
            if ed.src not in out:
                continue
            gen, problem = traced_copy(out[ed.src], ed.head, ed.name,
                                       ed.copy)
            if problem:
                problems.append("%s: %s: %s" % (ed.src, ed.what, problem))
            else:
                out[ed.dst] = gen
    out["Makefile.pre.in"] = makefile(original("Makefile.pre.in"), problems)
    if problems:
        raise Refusal("\n".join(problems))
    return out


OBJS = (["Python/evalprof.o", "Python/evalprof/codec.o",
         "Python/evalprof/kinds.o"] +
        ["Python/evalprof/%s.o" % r for r in RECORDER] +
        ["Python/evalprof/%s.o" % u for u in UTIL_SOURCES])


def makefile(text, problems):
    """Makefile.pre.in with evalprof's objects linked into libpython."""
    if text is None:
        return None
    lines = text.splitlines(keepends=True)
    hits = [n for n, line in enumerate(lines)
            if re.match(r"^PYTHON_OBJS=\s*\\$", line)]
    if len(hits) != 1:
        problems.append("Makefile.pre.in: expected one 'PYTHON_OBJS=\\' "
                        "line, found %d" % len(hits))
        return None
    n = hits[0]
    lines.insert(n + 1, "\t\t$(EVALPROF_OBJS) \\\n")
    lines.insert(n, "# evalprof: the recorder and evalprof's run-time side\n"
                 "EVALPROF_OBJS= %s\n" % " ".join(OBJS))
    hdrs = ("$(srcdir)/Include/internal/pycore_evalprof.h "
            "$(srcdir)/Include/internal/evalprof/kinds.def "
            "$(srcdir)/Include/internal/evalprof/events.h "
            "$(srcdir)/Include/internal/evalprof/record.h "
            "$(srcdir)/Include/internal/evalprof/recorder.h "
            "$(srcdir)/Include/internal/evalprof/format.h")
    lines.append(
        "# evalprof: build rules for evalprof's objects\n"
        "EVALPROF_HEADERS= %s\n"
        "Python/evalprof/%%.o: $(srcdir)/Python/evalprof/%%.c %s %s "
        "$(EVALPROF_HEADERS)\n"
        "\t@mkdir -p Python/evalprof # evalprof\n"
        "\t$(CC) -c $(PY_CORE_CFLAGS) -std=gnu11 -o $@ $< # evalprof\n"
        "Python/ceval.o: $(srcdir)/Python/evalprof_ceval.h "
        "$(srcdir)/Python/evalprof_ceval_common.h "
        "$(srcdir)/Python/evalprof_targets.h "
        "$(srcdir)/Python/evalprof_entries.h "
        "$(srcdir)/Python/evalprof_traced.h "
        "$(srcdir)/Python/evalprof_sampled.h "
        "$(srcdir)/Python/evalprof_counted.h $(EVALPROF_HEADERS) # evalprof\n"
        "Python/evalprof.o: $(EVALPROF_HEADERS) # evalprof\n"
        "Modules/main.o Python/pylifecycle.o Python/sysmodule.o "
        "Python/pystate.o "
        "Modules/posixmodule.o: $(EVALPROF_HEADERS) # evalprof\n"
        % (hdrs, " ".join("$(srcdir)/Python/evalprof/%s.h" % r
                          for r in RECORDER_HEADERS),
           " ".join("$(srcdir)/Python/evalprof/%s.h" % u for u in UTIL)))
    return "".join(lines)


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8", newline="") as f:
            if f.read() == text:
                return False
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".evalprof-tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)
    return True


def main():
    ap = argparse.ArgumentParser(
        description="Insert evalprof's hooks into a CPython source tree.")
    ap.add_argument("tree", nargs="?", help="CPython source tree to edit")
    ap.add_argument("--pristine", help="read original files from this "
                    "unmodified copy of the same sources")
    ap.add_argument("--check", action="store_true",
                    help="verify every insertion point; write nothing")
    ap.add_argument("--fingerprint", action="store_true",
                    help="print a hash of evalprof's hook sources and exit")
    args = ap.parse_args()

    if args.fingerprint:
        h = hashlib.sha256()
        # this tool and every file it copies into a tree
        files = [os.path.join("cpython", "apply-hooks.py")]
        files += sorted({ed.src for v in SPECS.values() for ed in v()
                         if isinstance(ed, Copy)})
        for rel in files:
            h.update(rel.encode() + b"\0")
            with open(os.path.join(TOP, rel), "rb") as f:
                h.update(f.read())
        print(h.hexdigest())
        return 0
    if args.tree is None:
        ap.error("the CPython source tree to edit is required")
    try:
        ver, full = tree_version(args.pristine or args.tree)
        if ver not in SPECS:
            why = LATER.get(ver, "")
            raise Refusal("CPython %s (%s) is not supported; evalprof hooks "
                          "3.11 and 3.13%s (docs/EVENTS.md says how other "
                          "versions map)" % (ver, full,
                                            ": " + why if why else ""))
        out = plan(args.tree, args.pristine, ver)
    except Refusal as exc:
        msg = str(exc).splitlines()
        print("apply-hooks: refusing %s: it does not match evalprof's "
              "hooks:" % args.tree, file=sys.stderr)
        for line in msg:
            print("  " + line, file=sys.stderr)
        return 2
    if args.check:
        print("apply-hooks: %s (CPython %s): all %d files match"
              % (args.tree, full, len(out)))
        sys.stdout.flush()
        return 0
    changed = [rel for rel, text in sorted(out.items())
               if write_if_changed(os.path.join(args.tree, rel), text)]
    print("apply-hooks: %s (CPython %s): %d of %d files updated"
          % (args.tree, full, len(changed), len(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
