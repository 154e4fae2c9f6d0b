/*
 * pycore_evalprof.h: evalprof's entry points inside an instrumented
 * CPython (copied to Include/internal/ by cpython/apply-hooks.py).
 *
 * The interpreter calls these from a handful of places that
 * apply-hooks.py inserts: the start of pymain_init() and
 * Py_InitializeFromConfig() (tracing starts), the creation of the sys
 * module (sys._evalprof), pymain_run_python() before it runs the program
 * (the trace's roots), the end of finalisation (tracing ends),
 * os._exit() (the trace is closed) and the fork warning of os.fork()
 * (the recorder's writer thread is not the program's), and
 * PyThreadState_Clear() (a thread stops being sampled).  The eval-loop hooks
 * themselves live in Python/evalprof_ceval.h and only need
 * _PyEvalprof_CodeId() from here.
 *
 * Everything here is cheap when tracing is off: the start-up functions
 * read one environment variable and scan argv once, and nothing else runs
 * unless a trace is being recorded.
 */
#ifndef Py_INTERNAL_EVALPROF_H
#define Py_INTERNAL_EVALPROF_H

#ifndef Py_BUILD_CORE
#error "this header requires Py_BUILD_CORE define"
#endif

#include <stdint.h>
#include <wchar.h>

#include "evalprof/events.h" /* the event kinds, the sampled phases */

/*
 * Decide whether to trace, from "-X evalprof=FILE" in ARGV or else the
 * EVALPROF environment variable, and if so start the recording and emit
 * the init event.  Called first thing in pymain_init(); only the first
 * call of the process does anything.  Problems (bad event list, an
 * unwritable file) are reported on stderr in one line and leave tracing
 * off; the interpreter runs on unchanged.
 */
extern void _PyEvalprof_InitFromArgs(Py_ssize_t argc, int use_bytes_argv,
                                     char *const *bytes_argv,
                                     wchar_t *const *wchar_argv);

/* The same for embedders that call Py_InitializeFromConfig() directly:
 * only the environment is consulted. */
extern void _PyEvalprof_InitFromEnv(void);

/*
 * Emit the fini event and close the trace.  Called at the very end of
 * Py_FinalizeEx(), after the low-level exit functions.
 */
extern void _PyEvalprof_Fini(void);

/*
 * Close the trace without a fini event: os._exit() calls this just
 * before _exit(), which would lose the records not yet written (a
 * multiprocessing child, or any forked child, leaves this way).
 */
extern void _PyEvalprof_Exit(void);

/*
 * Set sys._evalprof in a new sys module's dict: a dict describing the
 * trace while one is being recorded, else None.  Its presence tells tools
 * that this is an evalprof interpreter.  Returns 0, or -1 with an
 * exception set.
 */
extern int _PyEvalprof_InitSys(PyObject *sysdict);

/*
 * Add the directories the program's files are found under to the trace's
 * metadata (root.stdlib, root.platstdlib, root.purelib and root.platlib,
 * the last two only when site is imported; root.script and
 * root.script.real: docs/FORMAT.md), so that diff --funcs keys functions
 * relative to them.  pymain_run_python() calls it once the paths are
 * final (site imported) and the program is known: IMPORTER_PATH is the
 * directory or zip file run as __main__, or NULL.  Never fails; leaves
 * any exception as it was.
 */
extern void _PyEvalprof_InitRoots(const PyConfig *config,
                                  PyObject *importer_path);

/* Threads evalprof itself runs in this process (the recorder's writer
 * while a trace is open, its sampler thread with the wall clock or
 * EVALPROF_SAMPLE_TIMER=thread), for os.fork()'s multi-threading
 * warning. */
extern int _PyEvalprof_HelperThreads(void);

/*
 * The trace's function id of code object CO (registered on first use
 * under name co_qualname, file co_filename, line co_firstlineno), or 0
 * when no trace is open.  Saves and restores any exception that is set.
 */
extern uint32_t _PyEvalprof_RegisterCode(PyCodeObject *co);

static inline uint32_t
_PyEvalprof_CodeId(PyCodeObject *co)
{
    uint32_t id = co->_co_evalprof_id;
    if (id == 0) {
        id = _PyEvalprof_RegisterCode(co);
    }
    return id;
}

/*
 * The function id of CO, as _PyEvalprof_CodeId, once its line table is
 * in the trace (the lines.ID metadata, written the first time: the op at
 * events of a trace recorded with lines need it).  0 when no trace is
 * open.
 */
extern uint32_t _PyEvalprof_CodeLines(PyCodeObject *co);

/* ---- sampled mode (EVALPROF_MODE=sample) ------------------------------ */

/*
 * Each thread's sampling state.  The sampled copy of the eval function
 * (Python/evalprof_ceval_common.h) stores into `state` where the loop's
 * phase changes; the sampler's signal handler, run on the same thread,
 * reads it, so plain (volatile) stores suffice.  byte[2]: the phase, the
 * event kind of the last hook passed + 1 (0: none yet); the other bytes
 * are 0.  `until`: for a phase that ends when the next instruction starts,
 * the instruction pointer that the thread's top frame has while the phase
 * lasts (_PyEvalprof_SAMPLE_UNTIL): the handler takes the phase only while
 * that frame still has it; the other phases hold until the next store.
 * `counts` are the thread's instructions per executed opcode
 * (EVALPROF_COUNTS).  The rest belongs to Python/evalprof.c.
 */
struct _evp_sample_tls {
    volatile union {
        uint32_t word;
        uint8_t byte[4];
    } state;
    const void *volatile until;
    PyThreadState *tstate; /* the thread state the frames are walked from */
    /* Set while the sampled copy's prologue pushes a frame (the frame
     * links are being written, in any order the compiler chose): samples
     * walk from held_top, the top frame before the push. */
    volatile int held;
    void *volatile held_top;
    void *walker; /* the thread's code cache (evalprof.c) */
    int started;  /* the thread asked for its timer */
    uint64_t counts[256];
};

/*
 * The phases (event kinds) that end when the thread's top frame moves to
 * another instruction, stored with `until`: loop slow, loop error and
 * loop exception (the instruction they interrupted runs on, or a handler
 * starts), exit (the caller's clean-up of a popped frame), runtime other
 * (the eval function returned to C: until the frame that called the C
 * code moves on) and, on 3.13, loop exit (a returning frame, bound to
 * its caller's pointer: the frame is popped while its clean-up runs, and
 * no store follows the pop); on 3.11 loop enter (a frame's pointer moves
 * at its first instruction; on 3.13 RESUME leaves it where it was, and
 * stores phase op instead).
 */
#define _PyEvalprof_SAMPLE_UNTIL_COMMON(k) \
    ((k) == EVP_EV_LOOP_SLOW || (k) == EVP_EV_LOOP_ERROR || \
     (k) == EVP_EV_LOOP_EXCEPTION || (k) == EVP_EV_EXIT || \
     (k) == EVP_EV_RUNTIME_OTHER)
#if PY_VERSION_HEX >= 0x030D0000
#define _PyEvalprof_SAMPLE_UNTIL(k) \
    (_PyEvalprof_SAMPLE_UNTIL_COMMON(k) || (k) == EVP_EV_LOOP_EXIT)
#else
#define _PyEvalprof_SAMPLE_UNTIL(k) \
    (_PyEvalprof_SAMPLE_UNTIL_COMMON(k) || (k) == EVP_EV_LOOP_ENTER)
#endif

/* In the interpreter's executable (a PIE or non-PIC build: libpython
 * linked in) the word is at a fixed offset from the thread pointer, and
 * the sampled copy's stores are one instruction each (local-exec); a
 * shared libpython (-fPIC) or an extension module reads that offset once
 * from the GOT (initial-exec). */
#if defined(__PIE__) || !defined(__PIC__)
#define EVP_SAMPLE_TLS_MODEL "local-exec"
#else
#define EVP_SAMPLE_TLS_MODEL "initial-exec"
#endif
extern __thread struct _evp_sample_tls _PyEvalprof_Sample
    __attribute__((tls_model(EVP_SAMPLE_TLS_MODEL)));

/* The sampled copy runs (a sampler is on), and it counts instructions. */
extern int _PyEvalprof_Sampling;
extern int _PyEvalprof_Counting;

/* The calling thread runs TSTATE in the sampled copy: its frames are
 * walked from TSTATE from now on, and the first time its timer starts. */
extern void _PyEvalprof_SampleThread(PyThreadState *tstate);

/* PyThreadState_Clear(TSTATE) calls this first: the thread's frames are
 * no longer walked from TSTATE (the thread itself stops being sampled and
 * hands its counts over when it exits); a thread state cleared by another
 * thread (finalisation deleting daemon threads) ends the frame walks of
 * every thread, which could otherwise read freed frames. */
extern void _PyEvalprof_ThreadClear(PyThreadState *tstate);

#endif /* !Py_INTERNAL_EVALPROF_H */
