/*
 * Python/evalprof.c: evalprof's run-time side in an instrumented CPython
 * (3.11 and 3.13; copied into the source tree by cpython/apply-hooks.py).
 *
 * It decides at start-up whether this process records a trace, opens the
 * recorder (src/recorder, compiled into the interpreter next to this
 * file), registers the interpreter's opcode names and the functions the
 * eval-loop hooks meet, publishes sys._evalprof, and closes the trace at
 * the end of finalisation.  The eval-loop hooks themselves are macros in
 * Python/evalprof_ceval.h.
 *
 * The run-time contract (docs/EVENTS.md):
 *
 *   EVALPROF=FILE or -X evalprof=FILE    record a trace into FILE
 *   EVALPROF_EVENTS=SPEC or -X evalprof_events=SPEC
 *                                        which event classes to record
 *   EVALPROF_FORK=follow                 a forked child records into
 *                                        FILE.<pid> (default: it stops)
 *   EVALPROF_LINES=1 or -X evalprof_lines
 *                                        ops carry their offset (op at)
 *                                        and functions their line table
 *   EVALPROF_MODE=sample or -X evalprof_mode=sample
 *                                        sample the threads' stacks and
 *                                        states instead of recording
 *                                        events (EVALPROF_SAMPLE_RATE,
 *                                        EVALPROF_SAMPLE_CLOCK,
 *                                        EVALPROF_SAMPLE_TIMER=thread for
 *                                        the sampler thread, and
 *                                        EVALPROF_COUNTS=1 for exact
 *                                        instruction counts)
 *
 * A process whose FILE is already being written by another live process
 * (a child started with the same environment) writes FILE.<pid> instead,
 * and says so in one line: the recorder holds an flock() on the file for
 * its whole session, so two writers never truncate or interleave.
 *
 * Nothing here may change what the program does: problems are reported
 * in one line on stderr and tracing stays off.
 */
#include "Python.h"
#include "opcode.h"

/*
 * 3.11 keeps its opcode-name table in pycore_opcode.h under Py_DEBUG only
 * (a static array).  This file reads the table with Py_DEBUG defined for
 * that one header, which holds nothing but tables and opcode macros; no
 * other header is included in between.
 */
#if PY_VERSION_HEX < 0x030C0000
#ifndef Py_DEBUG
#define Py_DEBUG
#define EVP_UNDEF_PY_DEBUG
#endif
#include "pycore_opcode.h" // _PyOpcode_OpName, _PyOpcode_Deopt
#ifdef EVP_UNDEF_PY_DEBUG
#undef Py_DEBUG
#undef EVP_UNDEF_PY_DEBUG
#endif
#else
#include "pycore_opcode_metadata.h" // _PyOpcode_OpName, _PyOpcode_Deopt
#endif

#include "pycore_code.h"  // _PyCode_InitAddressRange
#include "pycore_frame.h" // _PyInterpreterFrame, for the sampler's walk
#include "pycore_initconfig.h"
#include "pycore_pystate.h" // _PyInterpreterState_GET()
#include "pycore_evalprof.h"
#include "evalprof/format.h" // evp_sample_state
#include "evalprof/recorder.h"
#include "evalprof/sanitizer.h" // EVP_UNDER_TSAN (Python/evalprof/)

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#define EVP_HOOKS_VERSION "1"

/* Event classes, for EVALPROF_EVENTS (docs/EVENTS.md). */
struct evp_class {
    const char *name;
    uint64_t kinds;
};

#define K(k) EVP_KIND_BIT(EVP_EV_##k)
/* Every kind the hooks emit: the classic vocabulary, and resume and
 * suspend for generator and coroutine frames (docs/EVENTS.md, "Calls"). */
#define EVP_KINDS_HOOKS \
    (EVP_KINDS_CLASSIC | EVP_KIND_BIT(EVP_EV_RESUME) | \
     EVP_KIND_BIT(EVP_EV_SUSPEND))
static const struct evp_class evp_classes[] = {
    {"all", EVP_KINDS_HOOKS},
    {"frames", K(ENTER) | K(EXIT) | K(RESUME) | K(SUSPEND) | K(RUNTIME_OTHER)},
    {"loop", K(LOOP_ENTER) | K(LOOP_EXIT) | K(LOOP_EXITING) |
                 K(LOOP_EXCEPTION) | K(LOOP_ERROR)},
    {"breaker", K(LOOP_SLOW) | K(LOOP_FAST)},
    {"dispatch", K(DISPATCH)},
    {"op", K(OP)},
    /* and each single kind of those but those always recorded, by its
     * report name with '-' for ' ' (evp_kind_named) */
};
/* init and fini frame every trace, whatever the classes; "recorder"
 * events mark the time a thread spent handing a full buffer over, which
 * views take out of the surrounding events. */
#define EVP_ALWAYS \
    (EVP_KIND_BIT(EVP_EV_INIT) | EVP_KIND_BIT(EVP_EV_FINI) | \
     EVP_KIND_BIT(EVP_EV_RECORDER))
#undef K

static struct {
    int decided;         /* the start-up decision was made */
    int active;          /* this process opened a trace */
    pid_t pid;           /* process that opened it */
    uint64_t kinds;      /* kinds recorded */
    char *path;          /* trace file being written */
    char *events;        /* EVALPROF_EVENTS as given ("all" by default) */
    uint64_t start_ns;   /* when it opened (CLOCK_MONOTONIC), for MB/s */
    int lines;           /* ops are recorded as op at, with line tables */
    uint8_t *lines_done; /* per function id: its line table was written */
    uint32_t lines_cap;
    int sample; /* sample mode: the sampler runs */
} evp;

/* One line on stderr: "evalprof: ...". */
static void
evp_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("evalprof: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    va_end(ap);
}

/* EVALPROF_QUIET set (and not "0"): notices are left out, errors are not.
 * Child interpreters inherit EVALPROF; a test suite that checks what its
 * children print to stderr sets it. */
static int
evp_quiet(void)
{
    const char *q = getenv("EVALPROF_QUIET");
    return q != NULL && *q != '\0' && strcmp(q, "0") != 0;
}

/* ---- the event-class list -------------------------------------------- */

/* T names kind K: its report name (evalprof/kinds.def) with '-' for ' '. */
static int
evp_kind_named(unsigned k, const char *t)
{
    const char *n = evp_kind_name(k);
    for (; *n && *t; n++, t++) {
        if (*t != (*n == ' ' ? '-' : *n)) {
            return 0;
        }
    }
    return *n == *t;
}

/*
 * Parse SPEC ("op", "no-dispatch", "frames,op", "all,-breaker", "0x3ff")
 * into *KINDS.  Terms are applied left to right; a list that starts with
 * a removal starts from "all".  Returns 0, or -1 after reporting the
 * offending term.
 */
static int
evp_parse_events(const char *spec, uint64_t *kinds)
{
    uint64_t set = 0;
    int first = 1;
    const char *p = spec;

    if (spec[0] == '0' && (spec[1] == 'x' || spec[1] == 'X')) {
        char *end;
        unsigned long long v = strtoull(spec, &end, 16);
        if (*end != '\0' || (v & ~(unsigned long long)EVP_KINDS_HOOKS)) {
            evp_say("EVALPROF_EVENTS: bad kind mask '%s'; tracing is off",
                    spec);
            return -1;
        }
        *kinds = (uint64_t)v | EVP_ALWAYS;
        return 0;
    }
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char term[64];
        int remove = 0;
        if (len >= sizeof term) {
            len = sizeof term - 1;
        }
        memcpy(term, p, len);
        term[len] = '\0';
        char *t = term;
        for (char *c = t; *c; c++) {
            if (*c == '_' || *c == ' ') {
                *c = '-';
            }
        }
        if (strncmp(t, "no-", 3) == 0) {
            remove = 1;
            t += 3;
        }
        else if (t[0] == '-') {
            remove = 1;
            t += 1;
        }
        if (*t) {
            uint64_t kinds_of = 0;
            for (size_t i = 0; i < Py_ARRAY_LENGTH(evp_classes); i++) {
                if (strcmp(evp_classes[i].name, t) == 0) {
                    kinds_of = evp_classes[i].kinds;
                    break;
                }
            }
            for (unsigned k = 0; !kinds_of && k < EVP_EV__COUNT; k++) {
                if ((EVP_KINDS_HOOKS & ~EVP_ALWAYS & EVP_KIND_BIT(k)) &&
                    evp_kind_named(k, t)) {
                    kinds_of = EVP_KIND_BIT(k);
                }
            }
            if (kinds_of == 0) {
                evp_say("EVALPROF_EVENTS: unknown event class '%s' (known: "
                        "all, frames, loop, breaker, dispatch, op, or a "
                        "kind such as loop-fast); tracing is off",
                        t);
                return -1;
            }
            if (first && remove) {
                set = EVP_KINDS_HOOKS;
            }
            if (remove) {
                set &= ~kinds_of;
            }
            else {
                set |= kinds_of;
            }
            first = 0;
        }
        p += len;
        if (*p == ',') {
            p++;
        }
    }
    if (first) {
        set = EVP_KINDS_HOOKS; /* empty list: everything */
    }
    *kinds = set | EVP_ALWAYS;
    return 0;
}

/* ---- start-up ---------------------------------------------------------- */

/* Names and base instructions of every opcode this interpreter has. */
static void
evp_register_opcodes(void)
{
    struct evp_opcode_desc ops[256];
    size_t n = 0;

    for (int i = 0; i < 256; i++) {
        const char *name = _PyOpcode_OpName[i];
        if (name == NULL || name[0] == '\0' || name[0] == '<') {
            continue;
        }
        int base = _PyOpcode_Deopt[i];
        if (base == 0 && i != 0) {
            base = i;
        }
        /* INSTRUMENTED_X stands in for X while sys.monitoring is on. */
        if (strncmp(name, "INSTRUMENTED_", 13) == 0) {
            for (int j = 0; j < 256; j++) {
                const char *b = _PyOpcode_OpName[j];
                if (b != NULL && j != i && strcmp(b, name + 13) == 0) {
                    base = j;
                    break;
                }
            }
        }
        ops[n].opcode = (uint16_t)i;
        ops[n].base = (uint16_t)base;
        ops[n].name = name;
        n++;
    }
    evp_rec_opcodes(ops, n);
}

static void
evp_add_meta(void)
{
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = '\0';

    evp_rec_meta("python.version", PY_VERSION);
    evp_rec_meta("python.implementation", "cpython");
    evp_rec_meta("python.executable", exe);
#if PY_VERSION_HEX >= 0x030D0000
    evp_rec_meta("python.interpreter", "generated (bytecodes.c)");
#else
    evp_rec_meta("python.interpreter", "hand-written (ceval.c)");
#endif
#ifdef Py_DEBUG
    evp_rec_meta("python.build", "debug");
#else
    evp_rec_meta("python.build", "release");
#endif
#if defined(_Py_JIT)
    evp_rec_meta("python.jit", "built in: traces it runs skip tier-1 hooks");
#elif defined(_Py_TIER2)
    evp_rec_meta("python.tier2", "built in: traces it runs skip tier-1 hooks");
#endif
    evp_rec_meta("evalprof.hooks", EVP_HOOKS_VERSION);
    evp_rec_meta("evalprof.events", evp.events);
}

/* ---- sampled mode ---------------------------------------------------- */

/*
 * EVALPROF_MODE=sample (docs/EVENTS.md "Sampled mode"): the recorder's
 * sampler interrupts every thread that runs Python code at a fixed rate
 * and evp_on_sample, in its signal handler on that thread, takes one
 * sample: the loop's phase (what the sampled copy of the eval function
 * last stored in the thread's state word), its frames (walked as
 * faulthandler walks them, through a per-thread cache of code objects
 * that keys each function once), the leaf's code unit and the opcode
 * there.  Everything it
 * does is async-signal-safe: memory reads and the recorder's
 * evp_rec_sample_* calls.
 */

__thread struct _evp_sample_tls _PyEvalprof_Sample
    __attribute__((tls_model("initial-exec")));
int _PyEvalprof_Sampling;
int _PyEvalprof_Counting;

/* Code objects a thread's samples have keyed: direct-mapped by address.
 * A slot's key is its index + 1; a code object freed and another one
 * allocated at its address is told apart by its name, file and first
 * line, and keyed again. */
#define EVP_CODE_SLOTS 2048
#define EVP_CODE_HASH_BITS 11

struct evp_code_slot {
    const PyCodeObject *code;
    const PyObject *qualname, *filename;
    int firstline;
};

struct evp_walker {
    struct evp_code_slot slots[EVP_CODE_SLOTS];
    uint32_t keys[EVP_SAMPLE_MAX_DEPTH];
    uint64_t *counts;             /* the thread's _PyEvalprof_Sample.counts */
    uintptr_t stack_lo, stack_hi; /* the thread's C stack (entry frames) */
    unsigned guard_checks;        /* samples walked (evp_guard_usable) */
    unsigned test_walks;          /* EVALPROF_TEST_WALK_FAULT's count */
    struct evp_walker *prev, *next; /* the threads being sampled */
};

static struct {
    pthread_mutex_t lock; /* walkers and done */
    struct evp_walker *walkers;
    uint64_t done[256]; /* counts of the threads that ended */
    pthread_key_t key;  /* a thread that exits unregisters */
    int key_made;
    unsigned max_depth;
    /* Another thread's thread state is being cleared (finalization
     * clears those of daemon threads that still run C code and take
     * signals): from then on no sample walks.  WALKING counts the
     * handlers inside a walk; the clearing thread sets WALKS_OFF, then
     * waits for WALKING to reach 0 before the thread state and its frames
     * are freed (evp_walks_stop).  Both are accessed sequentially
     * consistent, so that a handler either sees WALKS_OFF or is seen
     * walking. */
    int walks_off;
    int walking;
    /* The CPU clock's sampler thread (EVALPROF_SAMPLE_TIMER=thread): the
     * thread whose frames it reads now.  A thread that stops running
     * from its thread state (clears it, or exits) first clears its
     * tstate, then waits while it is the one read (evp_peek_wait); the
     * sampler thread sets this before it loads that tstate, both
     * sequentially consistent, so that one sees the other. */
    struct _evp_sample_tls *peeking;
    /* EVALPROF_TEST_WALK_DELAY_US (tests): a walk on a thread other than
     * the main one first spins this long, which widens the window in
     * which finalization may clear its thread state */
    uint64_t walk_delay_ns;
    /* EVALPROF_TEST_WALK_FAULT=N (tests): every Nth walk of a thread
     * first reads memory that is not readable, as a walk that met a
     * half-written frame could (evp_safe_read): a page mapped with no
     * access, an address of the program's own (a sanitizer checks its
     * shadow before the read; a low address has none under TSan) */
    unsigned walk_fault_every;
    const void *walk_fault_at;
} evs = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void
evp_walk_delay(void)
{
    if (evs.walk_delay_ns == 0 || _Py_IsMainThread()) {
        return;
    }
    uint64_t until = evp_clock_mono_ns() + evs.walk_delay_ns;
    while (evp_clock_mono_ns() < until) {
    }
}

/* A handler about to read a thread state and its frames: 1 if it may. */
static int
evp_walk_begin(void)
{
    __atomic_add_fetch(&evs.walking, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&evs.walks_off, __ATOMIC_SEQ_CST)) {
        __atomic_sub_fetch(&evs.walking, 1, __ATOMIC_SEQ_CST);
        return 0;
    }
    return 1;
}

static void
evp_walk_end(void)
{
    __atomic_sub_fetch(&evs.walking, 1, __ATOMIC_SEQ_CST);
}

/* No walk from now on; returns once none is under way (or, should a
 * walking thread be stopped, after a second: a debugger's). */
static void
evp_walks_stop(void)
{
    __atomic_store_n(&evs.walks_off, 1, __ATOMIC_SEQ_CST);
    for (int i = 0;
         i < 100000 && __atomic_load_n(&evs.walking, __ATOMIC_SEQ_CST) != 0;
         i++) {
        struct timespec pause = {0, 10000};
        nanosleep(&pause, NULL);
    }
}

static uint32_t
evp_code_hash(const void *code)
{
    return (uint32_t)(((uintptr_t)code >> 4) * 0x9E3779B97F4A7C15ull >>
                      (64 - EVP_CODE_HASH_BITS));
}

/* String O as UTF-8 without calling Python: an ASCII string's own bytes,
 * else encoded into BUF (CAP bytes; cut at a character). */
static const char *
evp_str_utf8(const PyObject *o, char *buf, size_t cap, size_t *len)
{
    PyObject *s = (PyObject *)o;
    *len = 0;
    if (s == NULL || Py_TYPE(s) != &PyUnicode_Type) {
        return "";
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (PyUnicode_IS_COMPACT_ASCII(s)) {
        *len = (size_t)n;
        return (const char *)PyUnicode_DATA(s);
    }
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    size_t k = 0;
    for (Py_ssize_t i = 0; i < n && data != NULL; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (k + 4 > cap) {
            break;
        }
        if (c < 0x80) {
            buf[k++] = (char)c;
        }
        else if (c < 0x800) {
            buf[k++] = (char)(0xc0 | c >> 6);
            buf[k++] = (char)(0x80 | (c & 0x3f));
        }
        else if (c < 0x10000) {
            buf[k++] = (char)(0xe0 | c >> 12);
            buf[k++] = (char)(0x80 | (c >> 6 & 0x3f));
            buf[k++] = (char)(0x80 | (c & 0x3f));
        }
        else {
            buf[k++] = (char)(0xf0 | c >> 18);
            buf[k++] = (char)(0x80 | (c >> 12 & 0x3f));
            buf[k++] = (char)(0x80 | (c >> 6 & 0x3f));
            buf[k++] = (char)(0x80 | (c & 0x3f));
        }
    }
    *len = k;
    return buf;
}

/* The sampler thread's copies of a code object's name, file and line
 * table (PEEK): the thread that runs the code may free it meanwhile, so
 * they are copied here, under the walk's fault guard, before the
 * recorder copies them into the ring (a fault inside the recorder would
 * leave the ring held).  One sampler thread walks: one buffer. */
#define EVP_PEEK_LT_MAX 65536
static uint8_t evp_peek_lt[EVP_PEEK_LT_MAX];
static char evp_peek_name[4096], evp_peek_file[4096]; /* (MAX_NAME) */

/* The key of code object CO in this thread's samples, keyed (its name,
 * file, first line and location table handed to the recorder) the first
 * time.  A function the recorder could not take (its ring full) is keyed
 * again by the next sample that meets it.  PEEK: read by the sampler
 * thread, from outside the thread that runs it (a line table over
 * EVP_PEEK_LT_MAX bytes is left out then). */
static uint32_t
evp_code_key(struct evp_walker *w, const PyCodeObject *co, int peek)
{
    uint32_t h = evp_code_hash(co);
    struct evp_code_slot *slot = &w->slots[h];
    if (slot->code == co && slot->qualname == co->co_qualname &&
        slot->filename == co->co_filename &&
        slot->firstline == co->co_firstlineno) {
        return h + 1;
    }
    char nbuf[512], fbuf[1024];
    size_t nlen, flen, ltlen = 0;
    const char *name = evp_str_utf8(co->co_qualname, nbuf, sizeof nbuf, &nlen);
    const char *file = evp_str_utf8(co->co_filename, fbuf, sizeof fbuf, &flen);
    const uint8_t *lt = NULL;
    PyObject *table = co->co_linetable;
    if (table != NULL && Py_TYPE(table) == &PyBytes_Type) {
        lt = (const uint8_t *)PyBytes_AS_STRING(table);
        ltlen = (size_t)PyBytes_GET_SIZE(table);
    }
    int line = co->co_firstlineno > 0 ? co->co_firstlineno : 0;
    if (peek) {
        nlen = nlen < sizeof evp_peek_name ? nlen : sizeof evp_peek_name;
        flen = flen < sizeof evp_peek_file ? flen : sizeof evp_peek_file;
        memcpy(evp_peek_name, name, nlen);
        memcpy(evp_peek_file, file, flen);
        name = evp_peek_name;
        file = evp_peek_file;
        if (ltlen > EVP_PEEK_LT_MAX) {
            lt = NULL;
            ltlen = 0;
        }
        else if (lt != NULL) {
            memcpy(evp_peek_lt, lt, ltlen);
            lt = evp_peek_lt;
        }
    }
    slot->code = NULL;
    if (evp_rec_sample_func(h + 1, name, nlen, file, flen, (uint32_t)line, lt,
                            ltlen,
                            lt ? EVP_LT_CPYTHON311 : EVP_LT_NONE) == 0) {
        slot->qualname = co->co_qualname;
        slot->filename = co->co_filename;
        slot->firstline = co->co_firstlineno;
        slot->code = co;
    }
    return h + 1;
}

/* The frame a thread runs now, and its code object (NULL: a frame the
 * walk skips: the C stack's entry frames). */
static _PyInterpreterFrame *
evp_top_frame(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030D0000
    return ts->current_frame;
#else
    return ts->cframe != NULL ? ts->cframe->current_frame : NULL;
#endif
}

static const PyCodeObject *
evp_frame_code(const _PyInterpreterFrame *f)
{
#if PY_VERSION_HEX >= 0x030D0000
    if (f->owner == FRAME_OWNED_BY_CSTACK) {
        return NULL;
    }
    const PyObject *co = f->f_executable;
#else
    const PyObject *co = (const PyObject *)f->f_code;
#endif
    return co != NULL && ((uintptr_t)co & 7) == 0 ? (const PyCodeObject *)co
                                                  : NULL;
}

/* A frame's instruction pointer: the instruction it runs (as the sampled
 * copy stores it with a phase that ends at the next instruction:
 * EVP_FRAME_IP). */
static const _Py_CODEUNIT *
evp_frame_ip(const _PyInterpreterFrame *f)
{
#if PY_VERSION_HEX >= 0x030D0000
    return f->instr_ptr;
#else
    return f->prev_instr;
#endif
}

/* The code unit FRAME (of CO) executes, + 1; 0 when out of range. */
static uint32_t
evp_frame_unit1(const _PyInterpreterFrame *f, const PyCodeObject *co)
{
    const _Py_CODEUNIT *at = evp_frame_ip(f);
    ptrdiff_t unit = at - _PyCode_CODE((PyCodeObject *)co);
    return unit >= 0 && unit < Py_SIZE(co) ? (uint32_t)unit + 1 : 0;
}

/*
 * Frames are linked and initialised with plain stores the compiler may
 * reorder (a pushed frame's `previous`, its code, the thread's top), so a
 * sample may find a link half-written: the walk reads through memory it
 * has checked.  A frame pointer is taken when the frame lies in the live
 * part of the thread's data stack (where every function frame is);
 * anything else (a generator's frame, 3.13's entry frames on the C
 * stack, or garbage) is copied by a read that cannot crash, and a
 * generator's frame must sit in a generator, coroutine or async
 * generator.  The leaf's code object is checked the same way; the deeper
 * frames' are theirs for their life.
 *
 * Such a read is a plain copy under the recorder's fault guard
 * (recorder.h, which the stock interpreters' sampler walks under too): a
 * SIGSEGV and SIGBUS handler of evalprof's, put in front of the one
 * before it when sampling starts, jumps out of a walk that faulted (the sample
 * is not taken: its periods are counted unsampled, and sample.walk_faults the
 * walks) and hands any other fault to that one.  A program may put its
 * own handler in front later (faulthandler.enable(), which pytest calls;
 * -X faulthandler installs its handler after the sampler starts): a fault
 * of the walk would then reach that handler, so a thread checks, at its
 * first sample and every 64th, that evalprof's is still the one, and
 * once it is not every read is process_vm_readv(2) on this process,
 * which fails instead of faulting (sample.fault_guard says so).  That
 * system call was a read's whole cost: some 3 us a sample on this
 * machine, most of the handler's, for a read that almost never faults.
 */
static pid_t evp_self_pid;

static int evp_guard_installed; /* evalprof's handler put in front */
static int evp_guard_lost;      /* found replaced: process_vm_readv */
static uint64_t evp_walk_faults;
static uint64_t evp_walk_races; /* the sampler thread's: chains moved */
static int evp_peeked;          /* the sampler thread walked (atomic) */

/*
 * The sampler thread's walk reads another thread's frames and code
 * objects while that thread runs on: the reads race with its writes, and
 * with its frees, by design (a value read is used only after the walk's
 * re-check found the frames where they were; a read of memory unmapped
 * meanwhile faults into the guard).  ThreadSanitizer is told to ignore
 * the walk's reads, and its reads only: what the walk writes (the
 * walker's buffers, the thread's ring) is still checked.
 */
#if EVP_UNDER_TSAN
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
#define EVP_RACY_READS_BEGIN(peek) \
    ((peek) ? AnnotateIgnoreReadsBegin(__FILE__, __LINE__) : (void)0)
#define EVP_RACY_READS_END(peek) \
    ((peek) ? AnnotateIgnoreReadsEnd(__FILE__, __LINE__) : (void)0)
#else
#define EVP_RACY_READS_BEGIN(peek) ((void)(peek))
#define EVP_RACY_READS_END(peek) ((void)(peek))
#endif

static int
evp_safe_read(void *dst, const void *src, size_t n)
{
    if (evp_rec_fault_guard_armed() != NULL) {
        memcpy(dst, src, n);
        return 1;
    }
    struct iovec local = {dst, n}, remote = {(void *)src, n};
    return syscall(SYS_process_vm_readv, evp_self_pid, &local, 1UL, &remote,
                   1UL, 0UL) == (long)n;
}

/* Whether the walk of this sample (the thread's *CHECKS-th) may read
 * under the guard. */
static int
evp_guard_usable(unsigned *checks)
{
    if (!evp_guard_installed ||
        __atomic_load_n(&evp_guard_lost, __ATOMIC_RELAXED)) {
        return 0;
    }
    if ((*checks)++ % 64 == 0 && !evp_rec_fault_guard_ours()) {
        __atomic_store_n(&evp_guard_lost, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return 1;
}

/* A walk's end, and for the sampler thread (PEEK) the end of its read of
 * the thread's state. */
static void
evp_walk_leave(int peek)
{
    evp_walk_end();
    if (peek) {
        __atomic_store_n(&evs.peeking, NULL, __ATOMIC_SEQ_CST);
    }
}

/* The calling thread cleared its tstate: wait until the sampler thread
 * no longer reads it (a walk takes microseconds). */
static void
evp_peek_wait(struct _evp_sample_tls *s)
{
    while (__atomic_load_n(&evs.peeking, __ATOMIC_SEQ_CST) == s) {
        sched_yield();
    }
}

/* Put the earlier handlers back where evalprof's is still in front, and
 * say in the trace how the walks read. */
static void
evp_guard_finish(void)
{
    if (!evp_guard_installed) {
        evp_rec_meta("sample.fault_guard",
                     "none (sigaction refused): every read process_vm_readv");
    }
    else {
        int lost = __atomic_load_n(&evp_guard_lost, __ATOMIC_RELAXED);
        lost |= !evp_rec_fault_guard_remove();
        evp_guard_installed = 0;
        int peeked = __atomic_load_n(&evp_peeked, __ATOMIC_RELAXED);
        evp_rec_meta("sample.fault_guard",
                     !lost ? "SIGSEGV and SIGBUS: plain reads"
                     : peeked
                         ? "replaced by the program's handler: plain reads "
                           "until the sampler thread saw it, then each "
                           "thread signalled to sample itself, with "
                           "process_vm_readv"
                         : "replaced by the program's handler: plain reads "
                           "until a thread saw it, then process_vm_readv");
    }
    uint64_t faults = __atomic_load_n(&evp_walk_faults, __ATOMIC_RELAXED);
    char n[32];
    if (faults) {
        snprintf(n, sizeof n, "%llu", (unsigned long long)faults);
        evp_rec_meta("sample.walk_faults", n);
    }
    uint64_t races = __atomic_load_n(&evp_walk_races, __ATOMIC_RELAXED);
    if (races) {
        snprintf(n, sizeof n, "%llu", (unsigned long long)races);
        evp_rec_meta("sample.walk_races", n);
    }
}

static int
evp_in_datastack(PyThreadState *ts, const void *p, size_t n)
{
    const char *q = p;
    _PyStackChunk *c = ts->datastack_chunk;
    const char *lo, *hi = (const char *)ts->datastack_top;
    for (int i = 0; c != NULL && i < 256; i++) {
        lo = (const char *)&c->data[0];
        if (q >= lo && q + n <= hi && hi <= (const char *)c + c->size) {
            return 1;
        }
        c = c->previous;
        if (c != NULL) {
            hi = (const char *)&c->data[0] + c->top * sizeof(PyObject *);
        }
    }
    return 0;
}

/* The frame at F, read safely into BUF when it is not plainly in the data
 * stack or on the thread's C stack (3.13's entry frames); NULL when it
 * cannot be read, is no frame, or when the sample has made *READS safe
 * reads already (a deep stack of generators must not make the handler
 * outlast the timer's period). */
#define EVP_SAFE_READS 24

static const _PyInterpreterFrame *
evp_checked_frame(PyThreadState *ts, const struct evp_walker *w,
                  const _PyInterpreterFrame *f, _PyInterpreterFrame *buf,
                  int *reads)
{
    uintptr_t a = (uintptr_t)f;
    if ((a & 7) != 0) {
        return NULL;
    }
    if (evp_in_datastack(ts, f, sizeof *f)) {
        return f;
    }
#if PY_VERSION_HEX >= 0x030D0000
    if (a >= w->stack_lo && a + sizeof *f <= w->stack_hi) {
        return f->owner == FRAME_OWNED_BY_CSTACK ? f : NULL;
    }
#endif
    if (++*reads > EVP_SAFE_READS || !evp_safe_read(buf, f, sizeof *buf)) {
        return NULL;
    }
#if PY_VERSION_HEX >= 0x030D0000
    if (buf->owner == FRAME_OWNED_BY_CSTACK) {
        return buf;
    }
#endif
    if (buf->owner != FRAME_OWNED_BY_GENERATOR) {
        return NULL;
    }
    PyTypeObject *type;
    const PyObject *gen =
        (const PyObject *)((const char *)f - offsetof(PyGenObject, gi_iframe));
    if (!evp_safe_read(&type, &gen->ob_type, sizeof type) ||
        (type != &PyGen_Type && type != &PyCoro_Type &&
         type != &PyAsyncGen_Type)) {
        return NULL;
    }
    return buf;
}

/* TS holds the GIL (is attached to the interpreter). */
static int
evp_holds_gil(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030D0000
    return ts->state == _Py_THREAD_ATTACHED;
#else
    return _PyRuntimeState_GetThreadState(&_PyRuntime) == ts;
#endif
}

/* The GIL TS takes, registered with the recorder when the thread starts
 * sampling: a thread without it, blocked in a futex wait on one of its
 * words, is waiting for it (evp_rec_sample_thread_gil). */
static const void *
evp_gil_lock(PyThreadState *ts, size_t *size)
{
    *size = sizeof(struct _gil_runtime_state);
#if PY_VERSION_HEX >= 0x030D0000
    return ts->interp->ceval.gil;
#else
    (void)ts;
    return &_PyRuntime.ceval.gil;
#endif
}

/*
 * Where the sampled and counted copies' machine code lies (their hot and
 * cold parts), for the samples' in-eval flag: read once, at the
 * sampler's start, from
 * the symbol table of the file this code was loaded from.  An interpreter
 * whose symbols were stripped gives none, and no sample says it was in
 * the eval function.
 */
#define EVP_EVAL_RANGES 8
static struct {
    uintptr_t lo, hi;
} evp_eval_code[EVP_EVAL_RANGES];
static int evp_eval_nranges;

/* Whether NAME (at most LEN bytes are readable) names a copy of the eval
 * function that samples run in, or a part of one GCC split off
 * (NAME.cold, NAME.part.0). */
static int
evp_is_eval_copy(const char *name, size_t len)
{
    static const char *const copies[] = {"evp_eval_frame_sampled",
                                         "evp_eval_frame_counted"};
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) {
        size_t n = strlen(copies[i]);
        if (n < len && memcmp(name, copies[i], n) == 0 &&
            (name[n] == '\0' || name[n] == '.')) {
            return 1;
        }
    }
    return 0;
}

static void
evp_find_eval_code(void)
{
#if defined(__ELF__) && UINTPTR_MAX == UINT64_MAX
    Dl_info info;
    if (!dladdr((void *)_PyEvalprof_SampleThread, &info)) {
        return;
    }
    const char *file = "/proc/self/exe";
    if (info.dli_fname != NULL && info.dli_fname[0] == '/' &&
        strstr(info.dli_fname, ".so") != NULL) {
        file = info.dli_fname;
    }
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        return;
    }
    if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return;
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        return;
    }
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
    uintptr_t base = eh->e_type == ET_DYN ? (uintptr_t)info.dli_fbase : 0;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size) {
        munmap((void *)map, size);
        return;
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(map + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) {
            continue;
        }
        const Elf64_Shdr *strs = &sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size > size ||
            strs->sh_offset + strs->sh_size > size) {
            continue;
        }
        const Elf64_Sym *sym = (const Elf64_Sym *)(map + sh[i].sh_offset);
        size_t n = sh[i].sh_size / sizeof *sym;
        const char *names = (const char *)map + strs->sh_offset;
        for (size_t k = 0; k < n && evp_eval_nranges < EVP_EVAL_RANGES; k++) {
            if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC ||
                sym[k].st_name >= strs->sh_size ||
                !evp_is_eval_copy(names + sym[k].st_name,
                                  strs->sh_size - sym[k].st_name)) {
                continue;
            }
            evp_eval_code[evp_eval_nranges].lo = base + sym[k].st_value;
            evp_eval_code[evp_eval_nranges].hi =
                base + sym[k].st_value + sym[k].st_size;
            evp_eval_nranges++;
        }
    }
    munmap((void *)map, size);
#endif
}

/* Opcodes that call (CALL and its specializations, CALL_FUNCTION_EX,
 * CALL_KW, CALL_INTRINSIC_*, 3.11's PRECALL_* that make the call
 * themselves, their instrumented forms): a sample outside
 * the eval function's code while one of them executes is in its callee. */
static uint8_t evp_calls[256];

static void
evp_find_calls(void)
{
    for (int i = 0; i < 256; i++) {
        const char *name = _PyOpcode_OpName[i];
        if (name != NULL && strncmp(name, "INSTRUMENTED_", 13) == 0) {
            name += 13;
        }
        evp_calls[i] = name != NULL && (strncmp(name, "CALL", 4) == 0 ||
                                        strncmp(name, "PRECALL", 7) == 0);
    }
}

/* The interrupted thread was running the sampled or counted copy's own
 * code. */
static int
evp_in_eval(const void *ucontext)
{
#if defined(__x86_64__)
    uintptr_t pc =
        (uintptr_t)((const ucontext_t *)ucontext)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    uintptr_t pc = (uintptr_t)((const ucontext_t *)ucontext)->uc_mcontext.pc;
#else
    uintptr_t pc = 0;
#endif
    if (ucontext == NULL) {
        return 0;
    }
    for (int i = 0; i < evp_eval_nranges; i++) {
        if (pc >= evp_eval_code[i].lo && pc < evp_eval_code[i].hi) {
            return 1;
        }
    }
    return 0;
}

/* The opcode + 1 at code unit UNIT1 - 1 of CO (0: none): the
 * instruction the frame runs, as its own instruction pointer names it
 * (3.13: instr_ptr; 3.11: prev_instr). */
static unsigned
evp_unit_op1(const PyCodeObject *co, uint32_t unit1)
{
    if (unit1 == 0) {
        return 0;
    }
    const _Py_CODEUNIT *u = _PyCode_CODE((PyCodeObject *)co) + (unit1 - 1);
#if PY_VERSION_HEX >= 0x030D0000
    return (unsigned)u->op.code + 1;
#else
    return (unsigned)_Py_OPCODE(*u) + 1;
#endif
}

/*
 * The top frame to walk from, and whether it is the one held while the
 * sampled copy's prologue pushes a frame (*HELD).  The top frame is read
 * before the flag: the prologue stores held_top and the flag, then the
 * frame's links and the new top, then clears the flag, and x86-64 shows
 * another CPU those stores in that order (the prologue's signal fences
 * keep the compiler's order), so a reader that sees the new top and then
 * the flag clear sees the links written too; one that sees the flag set
 * walks from held_top.  (On the thread itself, in its handler, the order
 * does not matter.)  A weakly ordered CPU would need release stores
 * there.
 */
static const _PyInterpreterFrame *
evp_peek_top(const struct _evp_sample_tls *s, PyThreadState *ts, int *held)
{
    const _PyInterpreterFrame *top = evp_top_frame(ts);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    *held = __atomic_load_n(&s->held, __ATOMIC_ACQUIRE);
    return *held ? (const _PyInterpreterFrame *)s->held_top : top;
}

/*
 * One sample of the thread whose sampling state is S: by the sampler's
 * callback, in its signal handler on that thread (UCONTEXT its
 * interrupted registers), or (PEEK) by the CPU clock's sampler thread,
 * from outside it while it runs on.
 *
 * The phase is the state word's, unless it is one that ends at the next
 * instruction (_PyEvalprof_SAMPLE_UNTIL) and the thread's top frame has
 * moved on since (its instruction pointer is no longer the one stored
 * with it): then the thread runs an instruction, phase op.  The opcode
 * is the leaf frame's, read at its instruction pointer, or, while the
 * leaf has not started its first instruction (its set-up), that of the
 * frame calling it, as a stock interpreter's sampler names it.
 *
 * From the sampler thread, the frames may be pushed and popped during
 * the walk: it reads only under the fault guard, and walks again (up to
 * three times, then drops the sample: sample.walk_races) when the top
 * frame or its code was not the same at the end as at the start.  A
 * walk that crossed a push and a pop back to the same frame is kept:
 * each frame it names was that thread's at the moment it was read.  It
 * has no registers: EVP_SAMPLE_NO_PC, and neither in-eval nor C call.
 * Returns 1 (no walk, no sample) when the sampler thread may not walk:
 * the guard is not evalprof's any more; else 0.
 */
/* GCC warns that the walk's locals may be clobbered by the fault guard's
 * jump (EVP_LONGJMP): none of them is read on that path, which drops the
 * sample. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wclobbered"
static int
evp_take_sample(struct _evp_sample_tls *s, const void *ucontext,
                uint32_t weight, int peek)
{
    unsigned phase1 = s->state.byte[2];
    const void *until = s->until;
    PyThreadState *ts;
    struct evp_walker *w = s->walker;
    uint32_t flags = 0, unit1 = 0, none[1];
    unsigned depth = 0, op1 = 0;
    int moved = 0;
    if (peek) {
        flags |= EVP_SAMPLE_NO_PC;
        __atomic_store_n(&evs.peeking, s, __ATOMIC_SEQ_CST);
        ts = __atomic_load_n(&s->tstate, __ATOMIC_SEQ_CST);
    }
    else {
        ts = s->tstate;
        if (evp_in_eval(ucontext)) {
            flags |= EVP_SAMPLE_IN_EVAL;
        }
    }
    if (ts != NULL && w != NULL && evp_walk_begin()) {
        evp_jmp_buf jb;
        /* the sampler thread reads frames that their thread may pop and
         * free meanwhile, even those below the top: it walks only under
         * the guard, checked at every walk (a count at 0 checks) */
        unsigned every = 0;
        int guarded = evp_guard_usable(peek ? &every : &w->guard_checks);
        if (peek && !guarded) {
            /* no walk from outside: the thread samples itself */
            evp_walk_leave(peek);
            return 1;
        }
        if (guarded) {
            if (EVP_SETJMP(jb) != 0) {
                /* a read faulted (the recorder's guard): no sample (and
                 * no EVP_RACY_READS_END: ThreadSanitizer clears the
                 * thread's ignores before it runs a signal handler, and
                 * the jump out of the guard's skips their restore) */
                evp_rec_fault_guard_arm(NULL);
                __atomic_fetch_add(&evp_walk_faults, 1, __ATOMIC_RELAXED);
                evp_walk_leave(peek);
                return 0;
            }
            evp_rec_fault_guard_arm(&jb);
        }
        EVP_RACY_READS_BEGIN(peek);
        if (evs.walk_fault_every != 0 &&
            ++w->test_walks % evs.walk_fault_every == 0) {
            const void *volatile bad = evs.walk_fault_at;
            char c = 0;
            if (evp_safe_read(&c, bad, 1)) {
                __asm__ volatile("" : : "r"(c)); /* the read is made */
            }
        }
        if (!peek) {
            evp_walk_delay();
        }
        for (int attempt = 0;; attempt++) {
            if (attempt > 0) {
                phase1 = s->state.byte[2];
                until = s->until;
                flags &= EVP_SAMPLE_NO_PC | EVP_SAMPLE_IN_EVAL;
                depth = op1 = 0;
                unit1 = 0;
                moved = 0;
            }
            if (!evp_holds_gil(ts)) {
                flags |= EVP_SAMPLE_NO_GIL | evp_rec_sample_blocked(ucontext);
            }
            int held;
            const _PyInterpreterFrame *top = evp_peek_top(s, ts, &held);
            const _PyInterpreterFrame *next = top;
            const PyCodeObject *leaf_code = NULL;
            _PyInterpreterFrame buf;
            int reads = 0;
            for (int hops = 0; next != NULL; hops++) {
                const _PyInterpreterFrame *f =
                    evp_checked_frame(ts, w, next, &buf, &reads);
                if (f == NULL || hops > 4 * (int)EVP_SAMPLE_MAX_DEPTH) {
                    flags |= EVP_SAMPLE_TRUNCATED; /* a link not (yet) valid */
                    break;
                }
                if (hops == 0) {
                    leaf_code = evp_frame_code(f);
                    if (!held && phase1 >= 1 &&
                        _PyEvalprof_SAMPLE_UNTIL(phase1 - 1)) {
                        moved = (const void *)evp_frame_ip(f) != until;
                    }
                }
                next = f->previous;
                const PyCodeObject *co = evp_frame_code(f);
                PyTypeObject *type;
                if (co == NULL) {
                    continue;
                }
                if (depth == 0 || peek
                        ? !evp_safe_read(&type, &((PyObject *)co)->ob_type,
                                         sizeof type)
                        : (type = Py_TYPE(co), 0)) {
                    continue;
                }
                if (type != &PyCode_Type) {
                    continue;
                }
                if (depth == evs.max_depth) {
                    flags |= EVP_SAMPLE_TRUNCATED;
                    break;
                }
                if (op1 == 0) {
                    uint32_t u1 = evp_frame_unit1(f, co);
                    unit1 = depth == 0 ? u1 : unit1;
                    op1 = evp_unit_op1(co, u1);
                }
                w->keys[depth++] = evp_code_key(w, co, peek);
            }
            if (!peek) {
                break;
            }
            /* the top frame of the start still running the same code,
             * under the frames the thread has pushed since (calls made
             * meanwhile leave the walk's frames as they were) */
            int held_now;
            const _PyInterpreterFrame *now = evp_peek_top(s, ts, &held_now);
            for (int up = 0; now != top && now != NULL && up < 16; up++) {
                now = evp_checked_frame(ts, w, now, &buf, &reads);
                now = now != NULL ? now->previous : NULL;
            }
            if (now == top &&
                (top == NULL || evp_frame_code(top) == leaf_code)) {
                break;
            }
            if (attempt == 2) {
                __atomic_fetch_add(&evp_walk_races, 1, __ATOMIC_RELAXED);
                EVP_RACY_READS_END(peek);
                evp_rec_fault_guard_arm(NULL);
                evp_walk_leave(peek);
                return 0;
            }
        }
        EVP_RACY_READS_END(peek);
        evp_rec_fault_guard_arm(NULL);
        evp_walk_end();
    }
    if (peek) {
        __atomic_store_n(&evs.peeking, NULL, __ATOMIC_SEQ_CST);
    }
    if (moved) {
        phase1 = EVP_EV_OP + 1;
    }
    if (!(flags & (EVP_SAMPLE_IN_EVAL | EVP_SAMPLE_NO_PC)) &&
        phase1 == EVP_EV_OP + 1 && op1 >= 1 && op1 <= 256 &&
        evp_calls[op1 - 1]) {
        flags |= EVP_SAMPLE_C_CALL;
    }
    if (depth == 0) {
        flags |= EVP_SAMPLE_NO_FRAME;
    }
    evp_rec_sample_put(evp_rec_now(), evp_sample_state(op1, phase1, flags),
                       unit1, weight, w != NULL ? w->keys : none, depth);
    return 0;
}
#pragma GCC diagnostic pop

/* The sampler's callback, in its signal handler on the sampled thread. */
static void
evp_on_sample(void *ucontext, uint32_t weight)
{
    (void)evp_take_sample(&_PyEvalprof_Sample, ucontext, weight, 0);
}

/* The CPU clock's sampler thread's callback: COOKIE is the sampled
 * thread's _PyEvalprof_Sample (evp_rec_sample_thread_peek); 1 when the
 * fault guard is no longer evalprof's: the thread is signalled to sample
 * itself. */
static int
evp_on_peek(void *cookie, uint32_t weight)
{
    __atomic_store_n(&evp_peeked, 1, __ATOMIC_RELAXED);
    return evp_take_sample(cookie, NULL, weight, 1);
}

/* Fold W's counts into the ended threads' and take it off the list
 * (evs.lock held). */
static void
evp_walker_retire(struct evp_walker *w)
{
    for (int i = 0; i < 256; i++) {
        evs.done[i] += w->counts[i];
        w->counts[i] = 0;
    }
    if (w->prev != NULL) {
        w->prev->next = w->next;
    }
    else if (evs.walkers == w) {
        evs.walkers = w->next;
    }
    if (w->next != NULL) {
        w->next->prev = w->prev;
    }
    w->prev = w->next = NULL;
}

/* This thread, which exits, stops being sampled: its timer, its walker,
 * its counts. */
static void
evp_sample_thread_end(void)
{
    struct _evp_sample_tls *s = &_PyEvalprof_Sample;
    struct evp_walker *w = s->walker;
    /* The handler runs on this thread: once these are cleared, no sample
     * walks with them. */
    __atomic_store_n(&s->tstate, NULL, __ATOMIC_SEQ_CST);
    evp_peek_wait(s);
    s->walker = NULL;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    s->started = 0;
    if (w == NULL) {
        return;
    }
    evp_rec_sample_thread_stop();
    pthread_mutex_lock(&evs.lock);
    evp_walker_retire(w);
    pthread_mutex_unlock(&evs.lock);
    if (evs.key_made) {
        pthread_setspecific(evs.key, NULL);
    }
    free(w);
}

/* A thread that exits (its key's destructor: thread-locals still valid). */
static void
evp_walker_exit(void *arg)
{
    (void)arg;
    evp_sample_thread_end();
}

void
_PyEvalprof_SampleThread(PyThreadState *tstate)
{
    struct _evp_sample_tls *s = &_PyEvalprof_Sample;
    if (s->started) {
        if (s->walker != NULL) {
            s->tstate = tstate; /* another thread state of this thread */
        }
        return;
    }
    s->started = 1;
    if (!_PyEvalprof_Sampling) {
        return;
    }
    struct evp_walker *w = calloc(1, sizeof *w);
    if (w == NULL) {
        return;
    }
    evp_rec_prefault(w, sizeof *w);
    w->counts = s->counts;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr;
        size_t size;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            w->stack_lo = (uintptr_t)addr;
            w->stack_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_lock(&evs.lock);
    w->next = evs.walkers;
    if (w->next != NULL) {
        w->next->prev = w;
    }
    evs.walkers = w;
    pthread_mutex_unlock(&evs.lock);
    if (evs.key_made) {
        pthread_setspecific(evs.key, w);
    }
    s->walker = w;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    s->tstate = tstate;
    if (evp_rec_sample_thread_start(_Py_IsMainThread() ? "main" : NULL) == 0) {
        size_t size;
        const void *gil = evp_gil_lock(tstate, &size);
        evp_rec_sample_thread_gil(gil, size);
        evp_rec_sample_thread_peek(s);
    }
}

void
_PyEvalprof_ThreadClear(PyThreadState *tstate)
{
    if (!evp.sample) {
        return;
    }
    /* The thread's own: no more walks from it.  The thread stays
     * sampled, in the same stream, from the next thread state it runs (a
     * subinterpreter's, the main one's again) until it exits
     * (evp_walker_exit): the recorder gives a thread one stream. */
    if (_PyEvalprof_Sample.tstate == tstate) {
        __atomic_store_n(&_PyEvalprof_Sample.tstate, NULL, __ATOMIC_SEQ_CST);
        evp_peek_wait(&_PyEvalprof_Sample);
    }
    else if (tstate->thread_id != 0 &&
             tstate->thread_id != PyThread_get_thread_ident()) {
        /* another thread's, cleared and freed while that thread may
         * still run and take samples (a daemon thread at finalization) */
        evp_walks_stop();
    }
}

/* Stop sampling (the frames still running in the sampled copy go on
 * storing their state) and write the instruction counts: the metadata
 * counts.op.NAME, summed over every thread. */
static void
evp_sample_finish(void)
{
    static int finished;
    if (!evp.sample || finished) {
        return;
    }
    finished = 1;
    _PyEvalprof_Sampling = 0;
    evp_rec_sampler_stop();
    evp_guard_finish();
    if (!_PyEvalprof_Counting) {
        return;
    }
    uint64_t total[256];
    pthread_mutex_lock(&evs.lock);
    memcpy(total, evs.done, sizeof total);
    for (struct evp_walker *w = evs.walkers; w != NULL; w = w->next) {
        for (int i = 0; i < 256; i++) {
            total[i] += w->counts[i];
        }
    }
    pthread_mutex_unlock(&evs.lock);
    for (int i = 0; i < 256; i++) {
        const char *name = _PyOpcode_OpName[i];
        if (total[i] == 0 || name == NULL || name[0] == '\0') {
            continue;
        }
        char key[96], val[32];
        snprintf(key, sizeof key, "counts.op.%s", name);
        snprintf(val, sizeof val, "%llu", (unsigned long long)total[i]);
        evp_rec_meta(key, val);
    }
}

/* A forked child has this thread only.  When its session goes on
 * (EVALPROF_FORK=follow) the recorder has started the sampler again and
 * this thread's ring if the parent sampled it: its frames are walked from
 * the same thread state as before the fork (the child's own; a Python
 * call made by the child need not enter the eval function again), with
 * the code cache emptied before (evp_sample_forget_keys) and counts of its
 * own.  Otherwise, or for a thread the parent did
 * not sample, from its next call of the eval function. */
static void
evp_sample_after_fork(void)
{
    pthread_mutex_init(&evs.lock, NULL);
    evs.walking = 0; /* another thread's handler, in the parent, is not
                      * the child's */
    evp_self_pid = getpid();
    struct evp_walker *mine = _PyEvalprof_Sample.walker;
    memset(_PyEvalprof_Sample.counts, 0, sizeof _PyEvalprof_Sample.counts);
    memset(evs.done, 0, sizeof evs.done);
    for (struct evp_walker *w = evs.walkers, *next; w != NULL; w = next) {
        next = w->next;
        if (w != mine) {
            w->prev = w->next = NULL; /* another thread's: gone */
        }
    }
    evs.walkers = mine;
    if (mine != NULL) {
        mine->prev = mine->next = NULL;
    }
    if (!evp_rec_is_open()) {
        _PyEvalprof_Sampling = 0;
    }
    if (mine == NULL || !_PyEvalprof_Sampling) {
        _PyEvalprof_Sample.tstate = NULL;
        _PyEvalprof_Sample.started = 0;
    }
    else {
        /* the recorder sampled this thread again (a child that follows
         * the fork): the sampler thread reads it through its state */
        evp_rec_sample_thread_peek(&_PyEvalprof_Sample);
    }
}

/* The forking thread's code cache, emptied by the recorder in a child that
 * follows the fork before its sampler starts again (this file's own fork
 * handler runs after that: a sample in between would name a key of the
 * parent's ring, which the child's trace has no function for). */
static void
evp_sample_forget_keys(void)
{
    struct evp_walker *mine = _PyEvalprof_Sample.walker;
    if (mine != NULL) {
        memset(mine->slots, 0, sizeof mine->slots);
    }
}

/* A positive decimal no larger than MAX in TEXT, or 0. */
static unsigned
evp_parse_uint(const char *text, unsigned max)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno || end == text || *end != '\0' || text[0] == '-' || v == 0 ||
        v > max) {
        return 0;
    }
    return (unsigned)v;
}

/* Sample mode's settings from the environment into CFG; -1 after saying
 * what is wrong. */
static int
evp_sample_config(struct evp_rec_sample_config *cfg)
{
    const char *rate = getenv("EVALPROF_SAMPLE_RATE");
    const char *clock = getenv("EVALPROF_SAMPLE_CLOCK");
    memset(cfg, 0, sizeof *cfg);
    if (rate != NULL && *rate != '\0' &&
        (cfg->rate_hz = evp_parse_uint(rate, EVP_SAMPLE_RATE_MAX)) == 0) {
        evp_say("EVALPROF_SAMPLE_RATE: '%s' is not a rate from 1 to %u (Hz); "
                "tracing is off",
                rate, EVP_SAMPLE_RATE_MAX);
        return -1;
    }
    /* CPU time by default, as the stock interpreter's sampler */
    cfg->cpu_clock = 1;
    if (clock != NULL && *clock != '\0' && strcmp(clock, "cpu") != 0) {
        if (strcmp(clock, "wall") != 0) {
            evp_say("EVALPROF_SAMPLE_CLOCK: unknown clock '%s' (wall or cpu); "
                    "tracing is off",
                    clock);
            return -1;
        }
        cfg->cpu_clock = 0;
    }
    /* the sampler (the recorder reads the variable; src/recorder/sample.c) */
    const char *timer = getenv("EVALPROF_SAMPLE_TIMER");
    if (timer != NULL && *timer != '\0' && strcmp(timer, "rt") != 0 &&
        strcmp(timer, "posix") != 0 && strcmp(timer, "thread") != 0) {
        evp_say("EVALPROF_SAMPLE_TIMER: unknown sampler '%s' (thread, rt or "
                "posix); tracing is off",
                timer);
        return -1;
    }
    if (timer != NULL && strcmp(timer, "thread") == 0 && !cfg->cpu_clock) {
        evp_say("EVALPROF_SAMPLE_TIMER=thread samples CPU time, not with "
                "EVALPROF_SAMPLE_CLOCK=wall; tracing is off");
        return -1;
    }
    cfg->on_sample = evp_on_sample;
    cfg->on_peek = evp_on_peek;
    cfg->tells_blocked = 1;
    cfg->on_fork_child = evp_sample_forget_keys;
    return 0;
}

/* Start the sampler in the open session; -1 (the session closed) after
 * saying why it could not. */
static int
evp_sample_start(const struct evp_rec_sample_config *cfg, int counts)
{
#if !defined(_Py_TIER2)
    int rc = evp_rec_sampler_start(cfg);
    if (rc < 0) {
        evp_say("cannot start sampling: %s; tracing is off", strerror(-rc));
        evp_rec_close();
        return -1;
    }
    evs.max_depth = cfg->max_depth ? cfg->max_depth : EVP_SAMPLE_MAX_DEPTH;
    if (evs.max_depth > EVP_SAMPLE_MAX_DEPTH) {
        evs.max_depth = EVP_SAMPLE_MAX_DEPTH;
    }
    evs.key_made = pthread_key_create(&evs.key, evp_walker_exit) == 0;
    const char *delay = getenv("EVALPROF_TEST_WALK_DELAY_US");
    evs.walk_delay_ns = delay ? evp_parse_uint(delay, 1000000) * 1000ull : 0;
    const char *fault = getenv("EVALPROF_TEST_WALK_FAULT");
    evs.walk_fault_every = fault ? evp_parse_uint(fault, 1000000) : 0;
    if (evs.walk_fault_every != 0) {
        void *page =
            mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        evs.walk_fault_at = page != MAP_FAILED ? page : (const void *)16;
    }
    evp_find_eval_code();
    evp_self_pid = getpid();
    evp_guard_installed = evp_rec_fault_guard_install() == 0;
    evp_find_calls();
    evp_rec_meta("evalprof.mode", "sample");
    evp_rec_meta("evalprof.counts", counts ? "on" : "off");
    /* the sampled copy stores no per-instruction phase (Python/
     * evalprof_ceval_common.h): summary says where their time is */
    evp_rec_meta("sample.phases_unseen", "dispatch,loop fast");
    evp.sample = 1;
    _PyEvalprof_Counting = counts;
    _PyEvalprof_Sampling = 1;
    return 0;
#else
    (void)cfg;
    (void)counts;
    evp_say("sample mode needs the sampled copy of the eval function, which "
            "an interpreter built with tier 2 (or the JIT) lacks; tracing is "
            "off");
    evp_rec_close();
    return -1;
#endif
}

/*
 * In a forked child: the recorder either stopped (the default) or goes on
 * into PATH.<pid> (EVALPROF_FORK=follow; its own fork handler ran first).
 */
static void
evp_after_fork_child(void)
{
    if (!evp.active) {
        return;
    }
    if (evp.sample) {
        evp_sample_after_fork();
    }
    if (!evp_rec_is_open()) {
        evp.active = 0;
        return;
    }
    char *p = strdup(evp_rec_path());
    if (p != NULL) {
        free(evp.path);
        evp.path = p;
    }
    evp.pid = getpid();
    evp.start_ns = evp_clock_mono_ns();
}

/* LINES (EVALPROF_LINES, -X evalprof_lines[=V]) asks for lines: set and
 * neither empty nor "0".  EVALPROF_COUNTS reads the same way. */
static int
evp_lines_wanted(const char *lines)
{
    return lines != NULL && *lines != '\0' && strcmp(lines, "0") != 0;
}

/*
 * Start tracing into PATH with the event list EVENTS (NULL: all), ops
 * with their offsets if LINES; or, MODE "sample", sampling (the events
 * are then init and fini only, and EVENTS and LINES do not apply).
 */
static void
evp_start(const char *path, const char *events, int lines, const char *mode)
{
    uint64_t kinds;
    int sample = 0;
    struct evp_rec_sample_config scfg;

    if (path[0] == '\0') {
        return;
    }
    if (mode != NULL && *mode != '\0' && strcmp(mode, "exact") != 0) {
        if (strcmp(mode, "sample") != 0) {
            evp_say("EVALPROF_MODE: unknown mode '%s' (exact or sample); "
                    "tracing is off",
                    mode);
            return;
        }
        if (evp_sample_config(&scfg) < 0) {
            return;
        }
        sample = 1;
        events = "sample";
        lines = 0;
    }
    if (sample) {
        kinds = EVP_ALWAYS;
    }
    else {
        if (events == NULL || events[0] == '\0') {
            events = "all";
        }
        if (evp_parse_events(events, &kinds) < 0) {
            return;
        }
    }
    /* With lines, every op is an op at (the hooks test op first). */
    lines = lines && (kinds & EVP_KIND_BIT(EVP_EV_OP));
    if (lines) {
        kinds =
            (kinds & ~EVP_KIND_BIT(EVP_EV_OP)) | EVP_KIND_BIT(EVP_EV_OP_AT);
    }
    const char *fork_mode = getenv("EVALPROF_FORK");
    struct evp_rec_config cfg = {
        .path = path,
        .producer = EVP_PRODUCER_INSTRUMENTED,
        .can_emit = EVP_KINDS_HOOKS | (lines ? EVP_KIND_BIT(EVP_EV_OP_AT) : 0),
        .enabled = kinds,
        /* quiet: a write error is reported once, by _PyEvalprof_Fini */
        .flags =
            EVP_REC_QUIET | ((fork_mode && strcmp(fork_mode, "follow") == 0)
                                 ? EVP_REC_FOLLOW_FORK
                                 : 0),
    };
    int rc = evp_rec_open(&cfg);
    if (rc < 0) {
        evp_say("cannot write trace %s: %s; tracing is off", path,
                rc == -EINVAL
                    ? "not a regular file (a FIFO, a socket or a device)"
                    : strerror(-rc));
        return;
    }
    evp.path = strdup(evp_rec_path());
    if (evp.path != NULL && strcmp(evp.path, path) != 0 && !evp_quiet()) {
        evp_say("%s is being written by another process: this one writes %s",
                path, evp.path);
    }
    evp.events = strdup(events);
    evp.kinds = kinds;
    evp.pid = getpid();
    evp.start_ns = evp_clock_mono_ns();
    evp.lines = lines;
    evp.active = 1;
    evp_add_meta();
    evp_register_opcodes();
    if (sample &&
        evp_sample_start(&scfg, evp_lines_wanted(getenv("EVALPROF_COUNTS"))) <
            0) {
        evp.active = 0;
        return;
    }
    pthread_atfork(NULL, NULL, evp_after_fork_child);
    if (!sample) {
        /* A sampled trace holds samples only (docs/FORMAT.md "Samples"):
         * no init and fini events.  The mask keeps their bits, so that
         * the untraced copy hands calls on (to the sampled one). */
        evp_rec_thread_attach("main");
        evp_rec_event(EVP_EV_INIT, 0);
    }
}

/* The value of option -X NAME=VALUE in an option word, or NULL. */
static const char *
evp_xoption(const char *opt, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(opt, name, n) == 0 && opt[n] == '=') {
        return opt + n + 1;
    }
    return NULL;
}

/*
 * Find -X evalprof=FILE and -X evalprof_events=SPEC among the
 * interpreter's options (before the script, -c or -m), the way
 * Python's own option parser reads them.
 */
static void
evp_scan_argv(int argc, char **argv, const char **path, const char **events,
              const char **lines, const char **mode)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a == NULL || a[0] != '-' || a[1] == '\0') {
            return; /* script name or "-" */
        }
        if (a[1] == '-') {
            if (a[2] == '\0') {
                return; /* "--" */
            }
            if (strcmp(a, "--check-hash-based-pycs") == 0) {
                i++;
            }
            continue;
        }
        for (int j = 1; a[j]; j++) {
            char c = a[j];
            if (c == 'c' || c == 'm') {
                return; /* the rest is the program's */
            }
            if (c == 'W' || c == 'X') {
                const char *val =
                    a[j + 1] ? a + j + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (c == 'X' && val != NULL) {
                    const char *v;
                    if ((v = evp_xoption(val, "evalprof")) != NULL) {
                        *path = v;
                    }
                    else if ((v = evp_xoption(val, "evalprof_events"))) {
                        *events = v;
                    }
                    else if ((v = evp_xoption(val, "evalprof_lines"))) {
                        *lines = v;
                    }
                    else if ((v = evp_xoption(val, "evalprof_mode"))) {
                        *mode = v;
                    }
                    else if (strcmp(val, "evalprof_lines") == 0) {
                        *lines = "1";
                    }
                    else if (strcmp(val, "evalprof") == 0) {
                        evp_say("-X evalprof needs a file name "
                                "(-X evalprof=FILE); tracing is off");
                    }
                }
                break;
            }
        }
    }
}

void
_PyEvalprof_InitFromArgs(Py_ssize_t argc, int use_bytes_argv,
                         char *const *bytes_argv, wchar_t *const *wchar_argv)
{
    const char *path = NULL, *events = NULL, *lines = NULL, *mode = NULL;
    char **argv = NULL;
    int n = argc > INT_MAX ? INT_MAX : (int)argc;

    if (evp.decided) {
        return;
    }
    evp.decided = 1;
    if (use_bytes_argv) {
        argv = (char **)bytes_argv;
    }
    else if (wchar_argv != NULL && n > 0) {
        /* Py_Main(): options are ASCII; other words come out empty. */
        argv = calloc((size_t)n, sizeof *argv);
        for (int i = 0; argv != NULL && i < n; i++) {
            size_t len = wcslen(wchar_argv[i]);
            argv[i] = malloc(len * 4 + 1);
            if (argv[i] == NULL ||
                wcstombs(argv[i], wchar_argv[i], len * 4 + 1) == (size_t)-1) {
                free(argv[i]);
                argv[i] = strdup("");
            }
        }
    }
    if (argv != NULL) {
        evp_scan_argv(n, argv, &path, &events, &lines, &mode);
    }
    if (path == NULL) {
        path = getenv("EVALPROF");
    }
    if (events == NULL) {
        events = getenv("EVALPROF_EVENTS");
    }
    if (lines == NULL) {
        lines = getenv("EVALPROF_LINES");
    }
    if (mode == NULL) {
        mode = getenv("EVALPROF_MODE");
    }
    if (path != NULL) {
        evp_start(path, events, evp_lines_wanted(lines), mode);
    }
    if (argv != NULL && !use_bytes_argv) {
        for (int i = 0; i < n; i++) {
            free(argv[i]);
        }
        free(argv);
    }
}

void
_PyEvalprof_InitFromEnv(void)
{
    if (evp.decided) {
        return;
    }
    evp.decided = 1;
    const char *path = getenv("EVALPROF");
    if (path != NULL) {
        evp_start(path, getenv("EVALPROF_EVENTS"),
                  evp_lines_wanted(getenv("EVALPROF_LINES")),
                  getenv("EVALPROF_MODE"));
    }
}

/* ---- functions ---------------------------------------------------------- */

static const char *
evp_utf8(PyObject *s, const char *fallback)
{
    const char *u =
        s != NULL && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
    if (u == NULL) {
        PyErr_Clear();
        return fallback;
    }
    return u;
}

/* The exception being raised, taken out while evalprof calls the C API,
 * and put back. */
struct evp_exc {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc;
#else
    PyObject *type, *value, *tb;
#endif
};

static struct evp_exc
evp_exc_save(void)
{
    struct evp_exc e;
#if PY_VERSION_HEX >= 0x030C0000
    e.exc = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&e.type, &e.value, &e.tb);
#endif
    return e;
}

static void
evp_exc_restore(struct evp_exc e)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(e.exc);
#else
    PyErr_Restore(e.type, e.value, e.tb);
#endif
}

uint32_t
_PyEvalprof_RegisterCode(PyCodeObject *co)
{
    if (!evp_rec_is_open()) {
        return 0;
    }
    struct evp_exc exc = evp_exc_save();
    const char *name = evp_utf8(co->co_qualname, "<unnamed>");
    const char *file = evp_utf8(co->co_filename, "");
    int line = co->co_firstlineno > 0 ? co->co_firstlineno : 0;
    uint32_t id = evp_rec_func(name, file, (uint32_t)line);
    co->_co_evalprof_id = id;
    evp_exc_restore(exc);
    return id;
}

/* Write CO's line table (function ID) through the recorder's encoder, as
 * the stock producer does from code.co_lines(): the same address ranges,
 * read without calling into Python. */
static void
evp_write_lines(PyCodeObject *co, uint32_t id)
{
    PyCodeAddressRange r;
    struct evp_rec_lines lines = EVP_REC_LINES_INIT;
    _PyCode_InitAddressRange(co, &r);
    while (_PyLineTable_NextAddressRange(&r)) {
        evp_rec_lines_add(&lines, r.ar_start / 2,
                          r.ar_line < 0 ? 0 : r.ar_line);
    }
    evp_rec_lines_end(&lines, id);
}

uint32_t
_PyEvalprof_CodeLines(PyCodeObject *co)
{
    uint32_t id = _PyEvalprof_CodeId(co);
    if (id == 0) {
        return 0;
    }
    if (id >= evp.lines_cap) {
        uint32_t cap = evp.lines_cap ? evp.lines_cap : 1024;
        while (cap <= id) {
            cap *= 2;
        }
        uint8_t *p = realloc(evp.lines_done, cap);
        if (p == NULL) {
            return id;
        }
        memset(p + evp.lines_cap, 0, cap - evp.lines_cap);
        evp.lines_done = p;
        evp.lines_cap = cap;
    }
    if (!evp.lines_done[id]) {
        evp.lines_done[id] = 1;
        evp_write_lines(co, id);
    }
    return id;
}

/* ---- sys._evalprof, fork, finalisation --------------------------------- */

int
_PyEvalprof_InitSys(PyObject *sysdict)
{
    PyObject *info;

    if (evp.active && evp_rec_is_open() && evp.pid == getpid()) {
        info = Py_BuildValue("{s:s, s:s, s:K, s:l, s:s, s:O, s:s}", "path",
                             evp.path, "events", evp.events, "kinds",
                             (unsigned long long)evp.kinds, "pid",
                             (long)evp.pid, "hooks", EVP_HOOKS_VERSION,
                             "lines", evp.lines ? Py_True : Py_False, "mode",
                             evp.sample ? "sample" : "exact");
        if (info == NULL) {
            return -1;
        }
        if (_Py_IsMainInterpreter(_PyInterpreterState_GET())) {
            const PyConfig *config = _Py_GetConfig();
            if (config->executable != NULL) {
                PyObject *exe = PyUnicode_FromWideChar(config->executable, -1);
                const char *u = exe ? PyUnicode_AsUTF8(exe) : NULL;
                if (u != NULL) {
                    evp_rec_meta("python.executable", u);
                }
                Py_XDECREF(exe);
                PyErr_Clear();
            }
        }
    }
    else {
        info = Py_NewRef(Py_None);
    }
    int rc = PyDict_SetItemString(sysdict, "_evalprof", info);
    Py_DECREF(info);
    return rc;
}

/* ---- the program's roots ------------------------------------------------ */

/* PATH normalised in place as os.path.normpath does: no "//", ".", "x/.."
 * or trailing '/' (an absolute PATH; "/.." is "/"). */
static void
evp_normpath(char *path)
{
    char *out = path + 1;
    const char *p = path;
    if (*path != '/') {
        return;
    }
    while (*p) {
        while (*p == '/') {
            p++;
        }
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || (len == 1 && p[0] == '.')) {
            /* nothing */
        }
        else if (len == 2 && p[0] == '.' && p[1] == '.') {
            while (out > path + 1 && *--out != '/') {
            }
        }
        else {
            if (out > path + 1) {
                *out++ = '/';
            }
            memmove(out, p, len);
            out += len;
        }
        p += len;
    }
    *out = '\0';
}

/* Record KEY: the wide string W, or (W NULL) the str attribute NAME of
 * sys, followed by TAIL, normalised.  Nothing when neither is a non-empty
 * string. */
static void
evp_root(const char *key, const wchar_t *w, const char *name, const char *tail)
{
    PyObject *o =
        w ? PyUnicode_FromWideChar(w, -1) : Py_XNewRef(PySys_GetObject(name));
    const char *u = o && PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (u != NULL && *u != '\0') {
        size_t n = strlen(u) + strlen(tail) + 2;
        char *v = malloc(n);
        if (v != NULL) {
            snprintf(v, n, "%s%s%s", u, *tail ? "/" : "", tail);
            evp_normpath(v);
            evp_rec_meta(key, v);
            free(v);
        }
    }
    Py_XDECREF(o);
    PyErr_Clear();
}

/* PATH's directory (PATH cut at its last '/', "/" for a file in "/"), in
 * a copy, or NULL. */
static char *
evp_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash == NULL ? 0 : slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

/* The program's directory: root.script, and root.script.real where the
 * directory its modules import from (sys.path[0]: the script resolved)
 * differs; the importer path a directory or zip program runs from; the
 * working directory for -m, -c and standard input. */
static void
evp_script_roots(const PyConfig *config, PyObject *importer_path)
{
    if (importer_path != NULL || config->run_filename == NULL ||
        config->run_command != NULL || config->run_module != NULL) {
        const char *u = importer_path && PyUnicode_Check(importer_path)
                            ? PyUnicode_AsUTF8(importer_path)
                            : NULL;
        char cwd[4096];
        if (u == NULL && importer_path == NULL &&
            getcwd(cwd, sizeof cwd) != NULL) {
            u = cwd;
        }
        if (u != NULL) {
            evp_rec_meta("root.script", u);
        }
        PyErr_Clear();
        return;
    }
    PyObject *o = PyUnicode_FromWideChar(config->run_filename, -1);
    const char *file = o ? PyUnicode_AsUTF8(o) : NULL;
    char *dir = file ? evp_dirname(file) : NULL;
    char *real = file ? realpath(file, NULL) : NULL;
    char *real_dir = real ? evp_dirname(real) : NULL;
    if (dir != NULL && *dir == '/') {
        evp_rec_meta("root.script", dir);
        if (real_dir != NULL && strcmp(real_dir, dir) != 0) {
            evp_rec_meta("root.script.real", real_dir);
        }
    }
    free(real_dir);
    free(real);
    free(dir);
    Py_XDECREF(o);
    PyErr_Clear();
}

void
_PyEvalprof_InitRoots(const PyConfig *config, PyObject *importer_path)
{
    if (!evp.active || !evp_rec_is_open() || evp.pid != getpid()) {
        return;
    }
    struct evp_exc exc = evp_exc_save();
    /* sysconfig's posix_prefix (and posix_venv) scheme, from the sys
     * attributes it reads, but the stdlib where this interpreter finds
     * it: the same directory once installed, its source's Lib when run
     * from its build directory. */
    PyObject *lib = PySys_GetObject("platlibdir");
    const char *platlibdir =
        lib && PyUnicode_Check(lib) ? PyUnicode_AsUTF8(lib) : NULL;
    char ver[64], plat[96];
#ifdef Py_GIL_DISABLED
    const char *abi_thread = "t";
#else
    const char *abi_thread = "";
#endif
    snprintf(ver, sizeof ver, "python%d.%d%s", PY_MAJOR_VERSION,
             PY_MINOR_VERSION, abi_thread);
    snprintf(plat, sizeof plat, "%s/%s", platlibdir ? platlibdir : "lib", ver);
    PyErr_Clear();
    if (config->stdlib_dir != NULL) {
        evp_root("root.stdlib", config->stdlib_dir, NULL, "");
    }
    else {
        evp_root("root.stdlib", NULL, "base_prefix", plat);
    }
    evp_root("root.platstdlib", NULL, "exec_prefix", plat);
    if (config->site_import) {
        char pure[96], platsite[128];
        snprintf(pure, sizeof pure, "lib/%s/site-packages", ver);
        snprintf(platsite, sizeof platsite, "%s/site-packages", plat);
        evp_root("root.purelib", NULL, "prefix", pure);
        evp_root("root.platlib", NULL, "exec_prefix", platsite);
    }
    evp_script_roots(config, importer_path);
    evp_exc_restore(exc);
}

int
_PyEvalprof_HelperThreads(void)
{
    return evp_rec_threads();
}

/* N with a ',' between thousands into BUF. */
static const char *
evp_thousands(unsigned long long n, char *buf, size_t len)
{
    char digits[32];
    int nd = snprintf(digits, sizeof digits, "%llu", n);
    size_t k = 0;
    for (int i = 0; i < nd && k + 2 < len; i++) {
        if (i > 0 && (nd - i) % 3 == 0) {
            buf[k++] = ',';
        }
        buf[k++] = digits[i];
    }
    buf[k] = '\0';
    return buf;
}

/*
 * Close the trace and say so in one line: what was written, as `evalprof
 * record` of a stock interpreter says it ("wrote FILE (N events, X MB,
 * Y MB/s)", of a sampled trace "N samples, X kB, Y kB/s", and the events
 * or samples lost if any), or what went wrong.
 * EVALPROF_QUIET leaves out the line of a trace written whole.
 */
static void
evp_close_and_report(void)
{
    int rc = evp_rec_close();
    struct evp_rec_stats st;
    evp_rec_get_stats(&st);
    if (rc == -ENOENT) {
        evp_say("trace %s was removed or replaced while recording: the %llu "
                "events written to it are lost",
                evp.path, (unsigned long long)st.events);
    }
    else if (rc < 0 && rc != -ENOTCONN && st.end_error) {
        evp_say("trace %s is incomplete: %s (%llu events lost, and the end "
                "record that counts them could not be written)",
                evp.path, strerror(-rc), (unsigned long long)st.dropped);
    }
    else if (rc < 0 && rc != -ENOTCONN) {
        evp_say("trace %s is incomplete: %s (%llu events lost)", evp.path,
                strerror(-rc), (unsigned long long)st.dropped);
    }
    else if (st.dropped || !evp_quiet()) {
        char events[40], lost[40], size[32];
        double secs = (double)(evp_clock_mono_ns() - evp.start_ns) / 1e9;
        double bytes = (double)st.bytes;
        struct evp_rec_sample_stats ss;
        memset(&ss, 0, sizeof ss);
        if (evp.sample) {
            evp_rec_sample_get_stats(&ss);
        }
        snprintf(size, sizeof size,
                 bytes >= 10 * 1024 * 1024 ? "%.1f MB" : "%.1f kB",
                 bytes >= 10 * 1024 * 1024 ? bytes / 1e6 : bytes / 1e3);
        fprintf(stderr, "evalprof: wrote %s (%s %s, %s", evp.path,
                evp_thousands(evp.sample ? ss.samples : st.events, events,
                              sizeof events),
                evp.sample ? "samples" : "events", size);
        /* a sampled trace grows by kilobytes a second */
        if (secs > 0 && evp.sample) {
            fprintf(stderr, ", %.1f kB/s", bytes / 1e3 / secs);
        }
        else if (secs > 0) {
            fprintf(stderr, ", %.1f MB/s", bytes / 1e6 / secs);
        }
        fputc(')', stderr);
        if (st.dropped) {
            fprintf(stderr, ", %s events lost",
                    evp_thousands(st.dropped, lost, sizeof lost));
        }
        if (ss.dropped) {
            fprintf(stderr, ", %s samples lost",
                    evp_thousands(ss.dropped, lost, sizeof lost));
        }
        fputc('\n', stderr);
        fflush(stderr);
    }
}

void
_PyEvalprof_Fini(void)
{
    if (!evp.active) {
        return;
    }
    if (evp_rec_is_open()) {
        evp_sample_finish();
        if (!evp.sample) {
            evp_rec_event(EVP_EV_FINI, 0);
        }
        evp_close_and_report();
    }
    evp.active = 0;
}

void
_PyEvalprof_Exit(void)
{
    /* os._exit() skips finalisation and the C exit functions: what the
     * threads recorded since the last flush would be lost.  No fini
     * event, since the interpreter is not finalised. */
    if (evp.active && evp_rec_is_open()) {
        evp_sample_finish();
        evp_close_and_report();
    }
}
