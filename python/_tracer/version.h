/*
 * evalprof._tracer's per-version adapter: every difference between the
 * CPython versions the extension is built for (3.11 to 3.15), and the
 * only file of python/_tracer that may test the interpreter's version
 * (tests/style/version_tests.py fails on a PY_VERSION_HEX, PY_MINOR_VERSION
 * or EVP_PY3xx test anywhere else).  The other files read the interpreter
 * through the helpers below and choose between whole mechanisms by the
 * EVP_HAVE_ names, so that they read the same on every version.
 *
 * A new version is supported by adding its branch here (and to the check
 * just below), building, and reading what fails: docs/HACKING.md,
 * "Supporting another CPython version".
 *
 * What differs, in brief:
 *
 *   3.11  frames hold the code (f_code) and the last executed instruction
 *         (prev_instr); thread state reaches them through cframe; ops and C
 *         calls come from PyTrace_OPCODE and a C profile function (legacy.c);
 *         one recursion counter counts every Python frame;
 *   3.12  sys.monitoring (monitor.c); Python and C recursion counted apart
 *         (each evaluation takes C units); frames owned by the C stack
 *         (entry shims) appear in the chain;
 *   3.13  the frame holds its executable (f_executable) and the instruction
 *         executing (instr_ptr); the thread state holds the current frame;
 *         whether a thread holds the GIL is its state word;
 *   3.14  the frame's code and function are tagged references (_PyStackRef,
 *         internal/pycore_stackref.h) and the frame layout moved to
 *         internal/pycore_interpframe_structs.h; there is no C recursion
 *         counter any more: the interpreter compares the machine stack
 *         pointer with limits of its own, so a hook that nests C calls needs
 *         neither to give units back nor to guard the stack itself; entry
 *         frames are owned by the interpreter (FRAME_OWNED_BY_INTERPRETER);
 *   3.15  as 3.14 for everything the extension reads (a JIT compiled in,
 *         off unless PYTHON_JIT=1).
 *
 * Include it first, in place of <Python.h>.  A file that defines
 * Py_BUILD_CORE before including it (gilstate.c, which needs the
 * interpreter's state headers) gets only the version checks and the GIL
 * helpers' macros, not the frame helpers.
 */
#ifndef EVP_VERSION_H
#define EVP_VERSION_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

/* The versions supported, as the Python package (SUPPORTED in
 * python/evalprof/__init__.py), python/find_interpreters.py and
 * `evalprof record` name them. */
#if PY_VERSION_HEX < 0x030b0000 || PY_VERSION_HEX >= 0x03100000
#error "evalprof._tracer supports CPython 3.11, 3.12, 3.13, 3.14 and 3.15"
#endif
#ifdef Py_GIL_DISABLED
#error "evalprof._tracer needs a build with the GIL (not free-threaded)"
#endif
#ifdef Py_DEBUG
#error "evalprof._tracer supports release builds (not --with-pydebug)"
#endif

#define EVP_PY311 (PY_VERSION_HEX < 0x030c0000)
#define EVP_PY312 (PY_VERSION_HEX >= 0x030c0000 && PY_VERSION_HEX < 0x030d0000)
#define EVP_PY313 (PY_VERSION_HEX >= 0x030d0000)
#define EVP_PY314 (PY_VERSION_HEX >= 0x030e0000)
#define EVP_PY315 (PY_VERSION_HEX >= 0x030f0000)

/* The version the extension was built for (the running interpreter's
 * published offsets are checked against it: layout.c). */
#define EVP_BUILT_FOR_HEX PY_VERSION_HEX

/* ---- mechanisms ----------------------------------------------------------
 */

/* Ops, exceptions and C calls through sys.monitoring (monitor.c, 3.12+),
 * else through PyTrace_OPCODE and a C profile function (legacy.c). */
#define EVP_HAVE_MONITORING (!EVP_PY311)

/* Each evaluation of a frame takes units of a C recursion counter that a
 * hook nesting one C call per Python call must give back (3.12, 3.13);
 * 3.11 counts Python frames once, 3.14+ watch the machine stack instead. */
#define EVP_HAVE_C_RECURSION_UNITS (EVP_PY312 || (EVP_PY313 && !EVP_PY314))

/* The interpreter raises RecursionError near the end of the real C stack
 * by itself (3.14+): no guard of the extension's own is needed. */
#define EVP_INTERPRETER_WATCHES_C_STACK EVP_PY314

/* ---- the sampler's memory layout (layout.c) ------------------------------
 */

/* The interpreter publishes the offsets tools read its threads and frames
 * with (_PyRuntime.debug_offsets, 3.13+); before, layout.c takes them
 * from the headers. */
#define EVP_HAVE_DEBUG_OFFSETS EVP_PY313

/* A thread state names the tier-2 executor it runs (current_executor,
 * 3.14+). */
#define EVP_HAVE_TIER2 EVP_PY314

/* Whether a program counter lies in JIT-compiled code: asked of the
 * interpreter (_PyJIT_AddressInJitCode, 3.15+), or read from its executor
 * lists (3.14). */
#define EVP_JIT_ADDRESS_QUERY EVP_PY315
#define EVP_JIT_EXECUTOR_LISTS (EVP_PY314 && !EVP_PY315)

/* ---- the GIL (gilstate.c, with the interpreter's state headers) ----------
 */

/* EVP_GIL_HELD(ts): TS holds the GIL now (a relaxed read, from a signal
 * handler); EVP_GIL_LOCK(ts): the GIL's state, sizeof(struct
 * _gil_runtime_state) bytes, which the sampler watches for a waiter. */
#if EVP_PY311
#define EVP_GIL_HELD(ts) \
    ((PyThreadState *)_Py_atomic_load_relaxed( \
         &_PyRuntime.gilstate.tstate_current) == (ts))
#define EVP_GIL_LOCK(ts) ((void)(ts), (const void *)&_PyRuntime.ceval.gil)
#elif EVP_PY312
#define EVP_GIL_HELD(ts) \
    ((ts)->interp->ceval.gil != NULL && \
     _Py_atomic_load_relaxed(&(ts)->interp->ceval.gil->locked) > 0 && \
     (PyThreadState *)_Py_atomic_load_relaxed( \
         &(ts)->interp->ceval.gil->last_holder) == (ts))
#define EVP_GIL_LOCK(ts) ((const void *)(ts)->interp->ceval.gil)
#else
#define EVP_GIL_HELD(ts) \
    (__atomic_load_n(&(ts)->state, __ATOMIC_RELAXED) == _Py_THREAD_ATTACHED)
#define EVP_GIL_LOCK(ts) ((const void *)(ts)->interp->ceval.gil)
#endif

#ifndef Py_BUILD_CORE

#include <opcode.h> /* EXTENDED_ARG, RETURN_GENERATOR */

/* The interpreter's frame layout: internal headers, read only. */
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#if EVP_PY314
#include "internal/pycore_interpframe.h" /* the frame, _PyStackRef */
#endif
#undef Py_BUILD_CORE

#if EVP_PY313
/* Exported by libpython, declared in the internal headers only. */
extern int _PyEval_SetProfile(PyThreadState *tstate, Py_tracefunc func,
                              PyObject *arg);
#endif

/* ---- code objects --------------------------------------------------------
 */

static inline Py_ssize_t
evp_code_extra_index(freefunc free_fn)
{
#if EVP_PY311
    return _PyEval_RequestCodeExtraIndex(free_fn);
#else
    return PyUnstable_Eval_RequestCodeExtraIndex(free_fn);
#endif
}

static inline int
evp_code_extra_get(PyCodeObject *co, Py_ssize_t index, void **p)
{
#if EVP_PY311
    return _PyCode_GetExtra((PyObject *)co, index, p);
#else
    return PyUnstable_Code_GetExtra((PyObject *)co, index, p);
#endif
}

static inline int
evp_code_extra_set(PyCodeObject *co, Py_ssize_t index, void *p)
{
#if EVP_PY311
    return _PyCode_SetExtra((PyObject *)co, index, p);
#else
    return PyUnstable_Code_SetExtra((PyObject *)co, index, p);
#endif
}

/* The opcode of a code unit as stored (specialized or instrumented). */
static inline unsigned
evp_unit_opcode(const _Py_CODEUNIT *u)
{
#if EVP_PY311
    return _Py_OPCODE(*u);
#else
    return u->op.code;
#endif
}

/* ---- frames --------------------------------------------------------------
 */

/* The frame's code object (3.13+: its executable, which for a shim is
 * not a code object: check with PyCode_Check). */
static inline PyCodeObject *
evp_frame_code(struct _PyInterpreterFrame *f)
{
#if EVP_PY314
    return (PyCodeObject *)PyStackRef_AsPyObjectBorrow(f->f_executable);
#elif EVP_PY313
    return (PyCodeObject *)f->f_executable;
#else
    return f->f_code;
#endif
}

/* The frame's instruction: the one executing or about to (3.13+), the
 * last one started (3.11, 3.12: prev_instr). */
static inline _Py_CODEUNIT *
evp_frame_instr(struct _PyInterpreterFrame *f)
{
#if EVP_PY313
    return f->instr_ptr;
#else
    return f->prev_instr;
#endif
}

/* A frame of the interpreter's own between C and Python frames (an entry
 * shim), never a function's. */
static inline int
evp_frame_is_shim(struct _PyInterpreterFrame *f)
{
#if EVP_PY314
    return f->owner >= FRAME_OWNED_BY_INTERPRETER;
#elif EVP_PY311
    (void)f;
    return 0;
#else
    return f->owner == FRAME_OWNED_BY_CSTACK;
#endif
}

/* A frame not yet started (before its first RESUME: its arguments are
 * being copied in), as _PyFrame_IsIncomplete tells; CO is its code. */
static inline int
evp_frame_incomplete(struct _PyInterpreterFrame *f, PyCodeObject *co)
{
    return f->owner != FRAME_OWNED_BY_GENERATOR &&
           evp_frame_instr(f) < _PyCode_CODE(co) + co->_co_firsttraceable;
}

static inline int
evp_frame_is_gen(struct _PyInterpreterFrame *f)
{
    return f->owner == FRAME_OWNED_BY_GENERATOR;
}

/*
 * A generator frame about to be evaluated for the first time: its
 * resumption point is just after RETURN_GENERATOR (which copied the frame
 * into the generator), not after a YIELD_VALUE.
 */
static inline int
evp_gen_first_start(struct _PyInterpreterFrame *f)
{
#if EVP_PY313
    return evp_unit_opcode(&f->instr_ptr[-1]) == RETURN_GENERATOR;
#else
    return evp_unit_opcode(f->prev_instr) == RETURN_GENERATOR;
#endif
}

static inline PyGenObject *
evp_frame_gen(struct _PyInterpreterFrame *f)
{
    return (PyGenObject *)((char *)f - offsetof(PyGenObject, gi_iframe));
}

/* The generator suspended (yield, await) rather than finished. */
static inline int
evp_gen_suspended(PyGenObject *g)
{
#if EVP_PY313
    return g->gi_frame_state == FRAME_SUSPENDED ||
           g->gi_frame_state == FRAME_SUSPENDED_YIELD_FROM;
#else
    return g->gi_frame_state == FRAME_SUSPENDED;
#endif
}

/* ---- thread state --------------------------------------------------------
 */

/* The thread's innermost frame (NULL: none), and setting it. */
static inline struct _PyInterpreterFrame *
evp_ts_frame(PyThreadState *ts)
{
#if EVP_PY313
    return ts->current_frame;
#else
    return ts->cframe != NULL ? ts->cframe->current_frame : NULL;
#endif
}

static inline void
evp_ts_set_frame(PyThreadState *ts, struct _PyInterpreterFrame *f)
{
#if EVP_PY313
    ts->current_frame = f;
#else
    ts->cframe->current_frame = f;
#endif
}

/* The thread's recursion accounting, set aside while the program's
 * __main__ runs as if nothing were below it (runmain.c). */
struct evp_recursion {
#if EVP_PY311
    int remaining;
#else
    int py_remaining;
#endif
#if EVP_HAVE_C_RECURSION_UNITS
    int c_remaining;
#endif
};

/* Save TS's counters into S and give the thread its whole budget. */
static inline void
evp_recursion_reset(PyThreadState *ts, struct evp_recursion *s)
{
#if EVP_PY311
    s->remaining = ts->recursion_remaining;
    ts->recursion_remaining = ts->recursion_limit;
#else
    s->py_remaining = ts->py_recursion_remaining;
    ts->py_recursion_remaining = ts->py_recursion_limit;
#endif
#if EVP_HAVE_C_RECURSION_UNITS
    s->c_remaining = ts->c_recursion_remaining;
#if EVP_PY313
    ts->c_recursion_remaining = Py_C_RECURSION_LIMIT;
#else
    ts->c_recursion_remaining = C_RECURSION_LIMIT;
#endif
#endif
}

static inline void
evp_recursion_restore(PyThreadState *ts, const struct evp_recursion *s)
{
#if EVP_PY311
    ts->recursion_remaining = s->remaining;
#else
    ts->py_recursion_remaining = s->py_remaining;
#endif
#if EVP_HAVE_C_RECURSION_UNITS
    ts->c_recursion_remaining = s->c_remaining;
#endif
}

/*
 * Call INNER as the eval function, the C recursion units one evaluation
 * takes (UNITS) given back to the thread first, so that the nested C call
 * each traced Python call adds costs the program none of its limit (3.12,
 * 3.13; elsewhere a plain call).
 */
static inline PyObject *
evp_eval_units_back(_PyFrameEvalFunction inner, PyThreadState *ts,
                    struct _PyInterpreterFrame *f, int throwflag, int units)
{
#if EVP_HAVE_C_RECURSION_UNITS
    ts->c_recursion_remaining += units;
    PyObject *r = inner(ts, f, throwflag);
    ts->c_recursion_remaining -= units;
    return r;
#else
    (void)units;
    return inner(ts, f, throwflag);
#endif
}

/*
 * Call INNER with the thread's recursion budget spent, so that the
 * interpreter's own check raises RecursionError and unwinds the frame
 * cleanly (the hook's guard near the end of the C stack; 3.11-3.13).
 */
static inline PyObject *
evp_eval_exhausted(_PyFrameEvalFunction inner, PyThreadState *ts,
                   struct _PyInterpreterFrame *f, int throwflag)
{
    PyObject *r;
#if EVP_PY311
    int rem = ts->recursion_remaining, lim = ts->recursion_limit;
    ts->recursion_limit = Py_GetRecursionLimit();
    ts->recursion_remaining = 0;
    r = inner(ts, f, throwflag);
    ts->recursion_remaining = rem;
    ts->recursion_limit = lim;
#elif EVP_HAVE_C_RECURSION_UNITS
    int rem = ts->c_recursion_remaining;
    ts->c_recursion_remaining = 0;
    r = inner(ts, f, throwflag);
    ts->c_recursion_remaining = rem;
#else
    r = inner(ts, f, throwflag); /* the interpreter checks the stack */
#endif
    return r;
}

#endif /* !Py_BUILD_CORE */

#endif /* EVP_VERSION_H */
