/*
 * evalprof._tracer: shared state of the stock-interpreter producer (mode B).
 *
 * The extension traces an unmodified CPython 3.11 to 3.15 through the
 * hooks the interpreter offers, and writes what it sees through the
 * recorder library (include/evalprof/recorder.h):
 *
 *   evalhook.c  the PEP 523 frame-evaluation hook: enter, exit, resume,
 *               suspend and runtime other around every evaluation of a
 *               Python frame (all versions);
 *   legacy.c    3.11: a C trace function (PyTrace_OPCODE, PyTrace_EXCEPTION)
 *               and a C profile function (PyTrace_C_CALL and friends);
 *   monitor.c   3.12+: sys.monitoring callbacks written in C (INSTRUCTION,
 *               CALL, C_RETURN, C_RAISE, RAISE, RERAISE);
 *   registry.c  function ids for code objects and C functions, cached in
 *               co_extra and a small hash table, and per-code opcode tables;
 *   module.c    the Python-facing module: start(), stop() and friends;
 *   runmain.c   run_main(): the program's __main__, run as the interpreter
 *               runs it, without evalprof's frames under it;
 *   sample.c    the sampled mode: no hook, a timer signal per thread whose
 *               handler reads the thread's frames (gilstate.c: whether a
 *               thread holds the GIL, from the interpreter's internals;
 *               layout.c: the offsets it reads the frames through).
 *
 * Everything here runs with the GIL held (free-threaded builds are
 * refused), so the shared state needs no locks of its own; the recorder
 * takes its own lock where it needs one.
 *
 * Version differences live in the per-version adapter, version.h (the
 * only file here that tests the interpreter's version), so that the hook
 * and the callbacks read the same on every version.  The module is
 * built with hidden visibility: only PyInit__tracer is exported, so these
 * evp_ names (and the recorder linked in) never meet another copy.
 */
#ifndef EVP_TRACER_H
#define EVP_TRACER_H

#include "version.h" /* Python.h, the frame internals, the version helpers */

#include <stdint.h>

#include "evalprof/recorder.h"

/* ---- session state ------------------------------------------------------ */

struct evp_session {
    uint64_t id;     /* 0: no session; bumps at every start() */
    int ops;         /* op events wanted */
    int lines;       /* op events carry their offset (op at) */
    int all_threads; /* trace every thread, not only the starter */
    int active;      /* between start() and stop() */
    int sample;      /* a sampled session (sample.c): no hooks */
    PyInterpreterState *interp;
    _PyFrameEvalFunction inner; /* the eval function we wrap */
    Py_ssize_t extra_index;     /* co_extra slot (once per process) */
    uint8_t deopt[256];         /* executed opcode -> base instruction */
    int tool_id;                /* sys.monitoring tool, -1 if none (3.12+) */
    char *ignore_prefix;        /* code from files under this is not traced
                                   (evalprof's own package) */
    size_t ignore_len;
    unsigned long untraced; /* threads left out (!all_threads), counted */
};

extern struct evp_session evp_S;

/* Per-thread state: the thread's view of the session. */
struct evp_tls {
    uint64_t session; /* evp_S.id this thread was set up for */
    int on;           /* this thread is traced */
    int named;        /* its Python thread name is known */
    int name_tries;   /* look-ups of the name so far */
    char *stack_low;  /* below this the C stack is nearly exhausted */
    /* The code object of the last event and its record: consecutive
     * events mostly share one.  Valid while code_epoch matches. */
    PyCodeObject *last_code;
    struct evp_code *last_rec;
    uint64_t code_epoch;
    /* The same for op events (3.12+), with what an INSTRUCTION callback
     * reads: the decoded instructions (NULL for code not traced, or a
     * thread not traced) and their count.  Filled only once the thread
     * and the code have passed every check, so that a hit needs none. */
    PyObject *op_code;
    const struct evp_op_slot *op_slots;
    uint32_t op_nunits;
    uint64_t op_epoch;
};

extern __thread struct evp_tls evp_tls
    __attribute__((tls_model("initial-exec")));

/*
 * Set up the calling thread for the current session (slow path of
 * evp_thread_on).  TS may be NULL (looked up then).
 */
void evp_thread_setup(PyThreadState *ts);

/* Retry finding the thread's Python name (threads announce themselves in
 * threading._active only after their first frames). */
void evp_thread_name_retry(void);

/* True when events of the calling thread are recorded. */
static inline int
evp_thread_on(PyThreadState *ts)
{
    struct evp_tls *tl = &evp_tls;
    if (EVP_UNLIKELY(tl->session != evp_S.id))
        evp_thread_setup(ts);
    return tl->on;
}

/* ---- function ids (registry.c) ----------------------------------------- */

/* What evalprof keeps about a code object (in its co_extra slot). */
struct evp_code {
    uint64_t session;    /* session FUNC belongs to */
    uint32_t func;       /* recorder function id, 0 if it could not be had */
    uint8_t creates_gen; /* generator, coroutine or async generator code */
    uint8_t ignore;      /* evalprof's own code: never traced */
    uint32_t nunits;     /* code units in OPS */
    struct evp_op_slot *ops; /* 3.12+: decoded instructions, lazily */
    uint64_t lines_session;  /* session whose trace has FUNC's line table */
};

/* One decoded instruction of a code unit (3.12+). */
struct evp_op_slot {
    uint32_t oparg;  /* with EXTENDED_ARG prefixes folded in */
    uint16_t opcode; /* base instruction */
    uint16_t pad;
};

/* The evalprof record of CO, created on first use; NULL on failure
 * (memory). */
struct evp_code *evp_code_get_slow(PyCodeObject *co);

/* Bumped whenever a code object with a record is freed, and when hooks
 * are installed for a new session: a cached (code, record) pair may then
 * be stale. */
extern uint64_t evp_code_epoch;

static inline struct evp_code *
evp_code_get(PyCodeObject *co)
{
    void *p = NULL;
    evp_code_extra_get(co, evp_S.extra_index, &p);
    struct evp_code *c = p;
    if (EVP_LIKELY(c != NULL && c->session == evp_S.id))
        return c;
    return evp_code_get_slow(co);
}

/* evp_code_get through the thread's one-entry cache (op events). */
static inline struct evp_code *
evp_code_get_cached(PyCodeObject *co)
{
    struct evp_tls *tl = &evp_tls;
    if (EVP_LIKELY(co == tl->last_code && tl->code_epoch == evp_code_epoch &&
                   tl->last_rec->session == evp_S.id))
        return tl->last_rec;
    struct evp_code *c = evp_code_get(co);
    if (c != NULL) {
        tl->last_code = co;
        tl->last_rec = c;
        tl->code_epoch = evp_code_epoch;
    }
    return c;
}

/* Record CO's code unit -> line table once per session (metadata
 * "lines.ID", docs/FORMAT.md), for op at events.  Errors are cleared:
 * the ops stay, without lines. */
void evp_code_lines(PyCodeObject *co, struct evp_code *c);

/* Decode CO's instructions into C->ops (3.12+).  Returns 0 or -1. */
int evp_code_decode(PyCodeObject *co, struct evp_code *c);

/*
 * Function id of a C function for C call events, or 0 for a callable that
 * is not a C function (or evalprof's own).  CALLABLE is what the
 * interpreter reports: a builtin function or method, or a method
 * descriptor.
 */
uint32_t evp_cfunc_id(PyObject *callable);

/* Allocate the co_extra slot.  Returns 0 or -1 with an exception. */
int evp_registry_init(void);

/* ---- hooks -------------------------------------------------------------- */

/* Exceptions are reported where raised (by legacy.c or monitor.c); when
 * 0, the eval hook reports frames left by an exception instead. */
extern int evp_precise_exceptions;

/* Install / remove the frame-evaluation hook (evalhook.c). */
int evp_evalhook_install(void);
void evp_evalhook_remove(void);

#if !EVP_HAVE_MONITORING
/* 3.11: trace and profile functions (legacy.c). */
int evp_legacy_install(void);
void evp_legacy_remove(void);
/* Take the calling thread's trace and profile slots where they are empty
 * (a new thread, or the program removed its own tracer). */
void evp_legacy_thread(PyThreadState *ts);
#else
/* 3.12+: sys.monitoring callbacks (monitor.c). */
int evp_monitor_install(void);
void evp_monitor_remove(void);
#endif

/* runmain.c: run_main(), the program's __main__ without evalprof's frames
 * under it. */
PyObject *evp_run_main(PyObject *self, PyObject *args, PyObject *kw);

/* ---- the sampled mode (sample.c) ------------------------------------------
 */

/* Start sampling the calling thread and, with ALL_THREADS, every other
 * thread (those running now at their next call, later ones as they
 * start through threading).  Returns 0 or -1 with an exception. */
int evp_sample_start(unsigned rate_hz, int cpu_clock, unsigned max_depth,
                     int all_threads);
void evp_sample_stop(void);
/* Which executed opcodes are call instructions, from the opcode table. */
void evp_sample_call_ops(const struct evp_opcode_desc *d, size_t n);
/* The calling thread starts sampling, its stream named NAME (the
 * package's threading wrapper calls it first thing in a new thread).
 * Returns 0 (also when not sampling) or -1 with an exception. */
int evp_sample_thread(const char *name);

/* The calling thread's threading.Thread name into BUF; 1 if found
 * (module.c). */
int evp_python_thread_name(char *buf, size_t n);

#endif /* EVP_TRACER_H */
