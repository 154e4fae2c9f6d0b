/*
 * evalprof recorder: the in-process half of evalprof.
 *
 * A small C library with no CPython dependency, linked into the
 * instrumented interpreter (mode A), the stock-interpreter extension
 * (mode B) and the synthetic demo workload.  One recording session per
 * process writes one `.evp` trace (docs/FORMAT.md).
 *
 * The hot path (evp_rec_event, evp_rec_op) reads a timestamp and stores a
 * 16-byte record into a per-thread buffer: no lock, no system call, no
 * allocation.  Full buffers are handed to a writer thread that encodes them
 * into compact self-contained chunks and writes them; the writer also
 * flushes partly filled buffers every few hundred milliseconds, so a killed
 * process leaves a trace readable up to its last flush.  The time a thread
 * spends handing a buffer over is itself recorded (EVP_EV_RECORDER), and
 * the measured cost of one event is stored in the trace so that views can
 * subtract it.
 *
 * Nothing here aborts the traced program: functions return 0 or a negative
 * errno, a write error stops writing and counts what was dropped, and the
 * trace says so.
 *
 * One file, one writer: the session holds an exclusive flock() on its
 * file, so a second process given the same path (a second `record`, a
 * child started with the same EVALPROF) writes PATH.<pid> instead, says
 * so on stderr, and neither truncates nor interleaves with the first.
 */
#ifndef EVALPROF_RECORDER_H
#define EVALPROF_RECORDER_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "evalprof/events.h"
#include "evalprof/record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Session flags. */
#define EVP_REC_FOLLOW_FORK 0x1u /* a forked child writes PATH.<pid> */
#define EVP_REC_NO_ATEXIT 0x2u   /* do not close the session at exit() */
#define EVP_REC_CLOCK_MONO 0x4u  /* use CLOCK_MONOTONIC even with a TSC */
#define EVP_REC_QUIET 0x8u       /* no warnings on stderr */

struct evp_rec_config {
    const char *path;       /* trace file (evp_rec_open); required */
    const char *producer;   /* EVP_PRODUCER_* (events.h); required */
    uint64_t can_emit;      /* kinds this producer is able to emit */
    uint64_t enabled;       /* kinds to record now (0 means all of can_emit) */
    unsigned flags;         /* EVP_REC_* */
    uint32_t buffer_events; /* records per thread buffer; 0: 65536 */
    uint32_t flush_ms;      /* periodic flush interval; 0: 200 ms */
};

/*
 * Start a session writing cfg->path.  Creates the file (a symbolic link
 * is written through), locks it, truncates it and writes its header and
 * metadata (pid, executable, argv from /proc, clocks), measures the
 * per-event cost and starts the writer thread.  When another live
 * process holds the lock on cfg->path, the session writes
 * cfg->path.<pid> instead and says so on stderr (unless EVP_REC_QUIET);
 * evp_rec_path() names the file.  Only a regular file or /dev/null is
 * written (a FIFO would block the program before it starts).  Returns 0,
 * -EBUSY when a session is already open (or both names are locked),
 * -EINVAL for a bad config or a FIFO, socket or device, -EISDIR, or the
 * -errno of creating the file (nothing is recorded then).
 */
int evp_rec_open(const struct evp_rec_config *cfg);

/* The file the current (or last) session writes: cfg->path, or
 * cfg->path.<pid> (another process was writing that one, or this is a
 * forked child).  NULL before the first session; valid until the next
 * evp_rec_open. */
const char *evp_rec_path(void);

/* True (non-zero) while a session is open in this process. */
int evp_rec_is_open(void);

/* How many threads of its own the recorder runs in this process now: its
 * writer, and the sampler thread of the wall clock or of
 * EVALPROF_SAMPLE_TIMER=thread (0 to 2).  An interpreter that counts the
 * process's threads (CPython 3.12+ before warning of a fork) leaves these
 * out: the program did not start them. */
int evp_rec_threads(void);

/*
 * Add a metadata pair (copied).  Keys documented in docs/FORMAT.md
 * ("python.version", "argv", ...); a later value for the same key
 * replaces an earlier one.  Returns 0, -ENOTCONN without a session,
 * -EINVAL for a NULL key or value, -ENOMEM.
 */
int evp_rec_meta(const char *key, const char *value);

/*
 * A function's code unit -> line table, as its `lines.ID` metadata
 * (docs/FORMAT.md), built from the code's address ranges in order (what
 * code.co_lines() yields): evp_rec_lines_add(L, UNIT, LINE) for each
 * range, UNIT its first code unit, LINE its source line (0: none); a range
 * that continues its predecessor's line adds nothing.  evp_rec_lines_end
 * records the table of function FUNC (if it has any range) and frees it.
 * The two producers write the table through these.
 */
struct evp_rec_lines {
    char *buf;
    size_t len, cap;
    long last; /* line of the last range written (-1: none yet) */
};

void evp_rec_lines_add(struct evp_rec_lines *l, long unit, long line);
void evp_rec_lines_end(struct evp_rec_lines *l, uint32_t func);
#define EVP_REC_LINES_INIT                                                     \
    {                                                                          \
        NULL, 0, 0, -1                                                         \
    }

struct evp_opcode_desc {
    uint16_t opcode; /* executed opcode (may be a specialized form) */
    uint16_t base;   /* its base instruction (== opcode when not specialized) */
    const char *name; /* e.g. "LOAD_ATTR_INSTANCE_VALUE" */
};

/*
 * Record the interpreter's opcode names (copied).  Call once per session,
 * before or after events.  Returns 0 or a negative errno.
 */
int evp_rec_opcodes(const struct evp_opcode_desc *ops, size_t n);

/*
 * Register a function and return its id (>= 1), or 0 when no session is
 * open or memory ran out.  Strings are copied; NULL file means unknown.
 * Thread-safe (takes a lock: call it once per code object, not per call).
 */
uint32_t evp_rec_func(const char *qualname, const char *file,
                      uint32_t firstline);

/*
 * Attach the calling thread to the session, naming it (NULL: "thread
 * <tid>").  Optional: a thread's first event attaches it.  Returns 0 or a
 * negative errno.  evp_rec_thread_detach hands over what the thread
 * recorded; call it before a thread ends.
 */
int evp_rec_thread_attach(const char *name);
void evp_rec_thread_detach(void);

/*
 * Write what this thread has recorded (and every other thread, in the
 * same writer round) to the file before returning: waits for one round
 * of the writer thread, a few microseconds to a few milliseconds.
 * Returns 0, -ENOTCONN without a session, or the first write error.
 */
int evp_rec_flush(void);

/*
 * Stop the writer thread before a fork (1 if it was running, 0 if not),
 * so that the process forks with the program's own threads only, and
 * start it again after (0 or -errno).  Records wait in their buffers.
 */
int evp_rec_writer_pause(void);
int evp_rec_writer_resume(void);

/*
 * End the session: stop recording, write every thread's records, the end
 * record (final clock calibration, dropped counts) and close the file.
 * After a write error the chunk it cut short is removed and the end
 * record still tried, so that the trace counts every event it lacks;
 * when even that fails, or when the path no longer names the file
 * written (removed, its directory deleted, or replaced while recording),
 * one line on stderr says so (unless EVP_REC_QUIET).  Returns 0,
 * -ENOTCONN without a session, the first write error seen (the file then
 * holds everything written before it), or -ENOENT for a file gone.
 */
int evp_rec_close(void);

struct evp_rec_stats {
    uint64_t events;      /* records handed to the writer */
    uint64_t dropped;     /* records that could not be written */
    uint64_t bytes;       /* bytes written to the file */
    uint64_t chunks;      /* chunks written */
    double event_cost_ns; /* measured cost of one event */
    int error;            /* first write error (negative errno) or 0 */
    int end_error;        /* the end record's write error, or 0 */
};

/* Figures of the current (or last closed) session. */
void evp_rec_get_stats(struct evp_rec_stats *st);

/* Change the set of kinds being recorded (masked by can_emit). */
void evp_rec_set_enabled(uint64_t kinds);

/* ---- sampling ---------------------------------------------------------- */

/*
 * Sampled recording (docs/FORMAT.md "Samples"): instead of timestamping
 * every event, a per-thread timer interrupts each attached thread at a
 * fixed rate, and the producer's callback, running in that signal
 * handler on the interrupted thread, walks the thread's Python frames and
 * stores one sample into the thread's ring.  The writer thread drains the
 * rings, gives the producer's per-thread function keys global function
 * ids, interns the stacks into the STACKS table and writes SAMPLES
 * chunks.  A full ring drops the sample and counts it.
 *
 * The signal is a real-time one (SIGRTMIN + 4 unless cfg->signo), so
 * that a program's own SIGPROF, setitimer() and SIGALRM are untouched.
 * The wall clock's signal comes from a sampler thread of the recorder,
 * which does not interrupt a thread that stays blocked in a call: it
 * stores a sample on the thread's behalf, with the stack the thread's
 * handler last stored (sample.sampler; src/recorder/sample.c).
 */
/* The default rate: a few percent of overhead, each signal's delivery
 * being the cost (bench/modeb "sampled", bench/cpython/sampled.py
 * measure it), while a 10 s run still gives 10,000 samples a thread, a
 * share's 95% interval within a point (bench/recorder-measurements.md). */
#define EVP_SAMPLE_RATE_DEFAULT 1000u
#define EVP_SAMPLE_RATE_MAX 100000u
#define EVP_SAMPLE_MAX_DEPTH 512u    /* the default max_depth */
#define EVP_SAMPLE_DEPTH_LIMIT 4096u /* the largest max_depth accepted */

struct evp_rec_sample_config {
    unsigned rate_hz;   /* samples per second and thread; 0: default */
    int cpu_clock;      /* 1: each thread's CPU time; 0: wall clock */
    int signo;          /* 0: SIGRTMIN + 4 */
    uint32_t ring_kb;   /* per-thread ring size; 0: 2048 KiB */
    unsigned max_depth; /* frames a sample walks, at most
                          EVP_SAMPLE_DEPTH_LIMIT; 0: EVP_SAMPLE_MAX_DEPTH */
    /* Called in the signal handler on the interrupted thread, with the
     * handler's ucontext_t and the periods this sample stands for; walks
     * the frames and calls evp_rec_sample_put (and evp_rec_sample_func for
     * a function it has not keyed yet).  Async-signal-safe. */
    void (*on_sample)(void *ucontext, uint32_t weight);
    /* 1: on_sample flags a thread without the GIL as blocked taking it or
     * in another call (evp_rec_sample_blocked); where that can be told
     * (x86-64 Linux), sample.blocked records it, so that the views tell
     * those samples from the rest without the GIL. */
    int tells_blocked;
    /* NULL, or called in a forked child of a session that follows forks
     * (EVP_REC_FOLLOW_FORK), on the forking thread, before the sampler
     * starts again there: the child's rings know none of the keys the
     * parent's were given, so a per-thread cache of keys is emptied
     * here, where no sample can yet use it. */
    void (*on_fork_child)(void);
    /* NULL, or the CPU clock's sampler thread (EVALPROF_SAMPLE_TIMER=
     * thread): called on the recorder's sampler thread, which interrupts
     * no thread, with the COOKIE a sampled thread registered
     * (evp_rec_sample_thread_peek) and the periods of CPU time it used
     * since its last sample; reads that thread's frames from outside it
     * (racily: under the fault guard, checked after the walk) and stores
     * through evp_rec_sample_func and evp_rec_sample_put, which then
     * write that thread's ring.  No registers are read: its samples carry
     * EVP_SAMPLE_NO_PC.  Returns 0, or 1 when it cannot read that thread
     * from outside now (its walk would not be safe): the thread is then
     * sent the signal, and on_sample takes the sample, in its handler,
     * with these periods (sample.peek_signals counts them). */
    int (*on_peek)(void *cookie, uint32_t weight);
};

/*
 * Start sampling in the open session: installs the signal handler and
 * records the sample.* metadata.  Threads are sampled once they call
 * evp_rec_sample_thread_start.  Returns 0, -ENOTCONN without a session,
 * -EBUSY when already sampling, -EINVAL for a bad config, or -errno.
 */
int evp_rec_sampler_start(const struct evp_rec_sample_config *cfg);

/* Stop every thread's timer, wait for handlers in flight, restore the
 * signal's previous disposition and hand the rings to the writer.  Called
 * by evp_rec_close too. */
void evp_rec_sampler_stop(void);

/*
 * The calling thread: give it a ring and a stream (named NAME; NULL:
 * "thread <tid>") and arm its timer.  Not from a signal handler.  Returns
 * 0, -ENOTCONN when not sampling, or -errno (timer_create failed, memory).
 * evp_rec_sample_thread_stop disarms it and hands its samples over; call
 * it before a thread ends (the ring is also freed at close).
 */
int evp_rec_sample_thread_start(const char *name);
void evp_rec_sample_thread_stop(void);

/*
 * The calling thread (sampled): its GIL's words are [LOCK, LOCK + SIZE)
 * (LOCK NULL: none).  A sample of the thread blocked in a futex wait on
 * one of them is flagged EVP_SAMPLE_GIL_WAIT, any other call
 * EVP_SAMPLE_SYSCALL: the wall clock's sampler thread's on its behalf,
 * and the handler's through evp_rec_sample_blocked.  Returns 0, or -ENOTCONN
 * when it is not sampled.
 */
int evp_rec_sample_thread_gil(const void *lock, size_t size);

/*
 * The calling thread (sampled): with the sampler thread of the CPU clock
 * (cfg->on_peek), it is sampled through on_peek(COOKIE, weight) from
 * then on (NULL: no longer; its periods are counted unsampled).  Returns
 * 0, or -ENOTCONN when it is not sampled.
 */
int evp_rec_sample_thread_peek(void *cookie);

/*
 * In the handler (async-signal-safe: no lock, no allocation, no system
 * call).  Key a function for the calling thread: KEY (>= 1) names it in
 * this thread's later samples until it is keyed again.  NAME, FILE are
 * not NUL-terminated; LINETABLE (may be NULL) is the code's location table
 * in format LT_FORMAT (EVP_LT_*), decoded by the writer into the
 * function's lines.ID.  Returns 0, -ENOSPC (ring full: the function
 * record is lost, and counted in sample.funcs_lost; the samples naming
 * KEY until it is keyed again are counted under the function
 * "<unknown>"), -EINVAL for key 0, or -ENOTCONN (the thread has no ring).
 */
#define EVP_LT_NONE 0
#define EVP_LT_CPYTHON311 1 /* co_linetable of CPython 3.11-3.13 (PEP 657) */
int evp_rec_sample_func(uint32_t key, const char *name, size_t namelen,
                        const char *file, size_t filelen, uint32_t firstline,
                        const uint8_t *linetable, size_t ltlen,
                        unsigned lt_format);

/*
 * The fault guard of a frame walk (both producers' handlers): a SIGSEGV
 * and SIGBUS handler of evalprof's, put in front of those the process had.
 * A handler that walks memory it cannot trust arms the guard with a
 * EVP_SETJMP() buffer of its own frame; a fault while it is armed jumps
 * there (the walk is dropped, its sample not taken), and any other fault,
 * or such a signal sent (kill, raise), goes to the disposition that was
 * there before, the default included.  A program may install its own
 * handler in front later (faulthandler.enable()): a fault of the walk
 * would then reach it, so a producer that can read otherwise asks
 * evp_rec_fault_guard_ours() now and then.
 *
 * install: 0, or -errno (nothing changed); installing again is a no-op.
 * ours: 1 while evalprof's handler is the one for both signals (two
 * sigaction() calls: async-signal-safe).  remove: put the earlier
 * handlers back where evalprof's is still in front; returns 1 when it was
 * in front of both, 0 otherwise (or when not installed).  arm (in the
 * handler): JB, or NULL to disarm; armed: the calling thread's JB.
 */
int evp_rec_fault_guard_install(void);
int evp_rec_fault_guard_ours(void);
int evp_rec_fault_guard_remove(void);
/*
 * The jump itself: GCC's __builtin_setjmp and __builtin_longjmp, which save
 * and restore a few registers inline and import nothing from the C library:
 * sigsetjmp and siglongjmp would add .plt entries to the instrumented
 * interpreter and move its eval loop's code
 * (bench/recorder-measurements.md).  Neither saves the signal mask, which
 * the interrupted handler's return restores.  Under ASan and TSan, whose
 * runtimes must see a jump over frames (their shadow stacks), the C
 * library's.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EVP_JMP_LIBC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EVP_JMP_LIBC 1
#endif
#endif
#ifdef EVP_JMP_LIBC
typedef sigjmp_buf evp_jmp_buf;
#define EVP_SETJMP(b) sigsetjmp((b), 0)
#define EVP_LONGJMP(b) siglongjmp((b), 1)
#else
typedef void *evp_jmp_buf[5];
#define EVP_SETJMP(b) __builtin_setjmp(b)
#define EVP_LONGJMP(b) __builtin_longjmp((b), 1)
#endif
void evp_rec_fault_guard_arm(evp_jmp_buf *jb);
evp_jmp_buf *evp_rec_fault_guard_armed(void);

/*
 * Store one sample for the calling thread: its time (evp_rec_now()),
 * state (evp_sample_state(), format.h), the leaf's code unit + 1, the
 * weight, and DEPTH function keys, leaf first.  Async-signal-safe.
 * Returns 0, -ENOSPC (ring full: dropped and counted) or -ENOTCONN (the
 * thread has no ring).
 */
int evp_rec_sample_put(uint64_t ts, uint32_t state, uint32_t unit1,
                       uint32_t weight, const uint32_t *keys, unsigned depth);

/*
 * In the handler: was the interrupted thread blocked in a system call?
 * Read from the handler's UCONTEXT (its registers; x86-64 Linux, else 0
 * always).  Returns EVP_SAMPLE_GIL_WAIT when the call is a futex wait on
 * a word of the calling thread's GIL, the range it registered with
 * evp_rec_sample_thread_gil (none registered, or a thread not sampled:
 * never), EVP_SAMPLE_SYSCALL for any other call, 0 when the thread was
 * not in one.  A thread that the sampler's signal finds in a
 * call is either just past its `syscall` instruction, returning (-EINTR,
 * or woken while the signal was pending), or set back onto it to restart
 * the call, whose number is then in RAX; RDI still holds the call's
 * first argument, a futex's address.  A thread caught returning from a
 * call that did not block counts as in it: the signal is delivered only
 * when the kernel returns to the thread, so the call's time is where the
 * period ran out.
 */
uint32_t evp_rec_sample_blocked(const void *ucontext);

/*
 * Fault in every page of the N bytes at P now (by writing back the byte
 * found at each page), so that a signal handler's first touch of that
 * memory takes no page fault: a producer's per-thread tables that its
 * on_sample writes.  Not from a signal handler.
 */
void evp_rec_prefault(void *p, size_t n);

struct evp_rec_sample_stats {
    uint64_t samples; /* stored into rings */
    uint64_t dropped; /* lost to full rings */
    uint64_t missed;  /* timer overruns (periods folded into weights) */
    uint64_t threads; /* threads that started sampling */
    uint64_t stacks;  /* stack nodes written */
};
void evp_rec_sample_get_stats(struct evp_rec_sample_stats *st);

/* ---- hot path -------------------------------------------------------- */

/* Per-thread state; only the first two fields are touched inline. */
struct evp_rec_thread {
    struct evp_rec_record *pos; /* next free record */
    struct evp_rec_record *end; /* end of the buffer (pos == end: slow path) */
};

extern __thread struct evp_rec_thread *evp_rec_tls_
    __attribute__((tls_model("initial-exec")));
extern uint64_t evp_rec_mask_; /* kinds recorded now; 0 when off */
extern int evp_rec_use_tsc_;   /* 1: TSC ticks, 0: CLOCK_MONOTONIC ns */

void evp_rec_slow_(unsigned kind, unsigned aux, uint32_t arg);
uint64_t evp_clock_mono_ns(void);

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define EVP_HAVE_TSC 1
#endif

/* The recorder's clock: TSC ticks when invariant, else monotonic ns. */
static inline uint64_t evp_rec_now(void)
{
#ifdef EVP_HAVE_TSC
    if (EVP_LIKELY(evp_rec_use_tsc_))
        return __rdtsc();
#endif
    return evp_clock_mono_ns();
}

/* Store one record; the caller has checked the mask. */
static inline void evp_rec_emit(unsigned kind, unsigned aux, uint32_t arg)
{
    struct evp_rec_thread *t = evp_rec_tls_;
    if (EVP_LIKELY(t != NULL)) {
        struct evp_rec_record *r = t->pos;
        if (EVP_LIKELY(r < t->end)) {
            r->ts = evp_rec_now();
            r->kind = (uint16_t)kind;
            r->aux = (uint16_t)aux;
            r->arg = arg;
            /* Recycled buffers are cold: ask for lines well ahead. */
            __builtin_prefetch(r + 32, 1, 3);
            /* Release: the writer may read records below pos. */
            __atomic_store_n(&t->pos, r + 1, __ATOMIC_RELEASE);
            return;
        }
    }
    evp_rec_slow_(kind, aux, arg);
}

/* True when events of KIND are being recorded. */
static inline int evp_rec_wants(unsigned kind)
{
    return EVP_UNLIKELY(
        (__atomic_load_n(&evp_rec_mask_, __ATOMIC_RELAXED) >> kind) & 1);
}

/* Record an event of KIND with ARG (a function id for enter/exit...). */
static inline void evp_rec_event(unsigned kind, uint32_t arg)
{
    if (evp_rec_wants(kind))
        evp_rec_emit(kind, 0, arg);
}

/* Record the start of an instruction. */
static inline void evp_rec_op(unsigned opcode, uint32_t oparg)
{
    if (evp_rec_wants(EVP_EV_OP))
        evp_rec_emit(EVP_EV_OP, opcode, oparg);
}

#ifdef __cplusplus
}
#endif

#endif /* EVALPROF_RECORDER_H */
