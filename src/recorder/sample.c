/*
 * The sampled mode of the recorder (recorder.h "sampling", docs/FORMAT.md
 * "Samples"): per-thread timers, the signal handler, per-thread rings,
 * and the writer's half that turns the rings into STACKS and SAMPLES
 * chunks.  The session (recorder.c) knows the sampler as one of its chunk
 * sources (session.h: sampler_source, at the end of this file), which
 * it drives at every writer round, at close and around fork(); the
 * sampler calls the session, never the other way round.
 *
 * Timers.  Each sampled thread arms a timer of its own, timer_create()
 * with SIGEV_THREAD_ID, on its CPU-time clock (CLOCK_THREAD_CPUTIME_ID:
 * where its CPU time goes) or on CLOCK_MONOTONIC (wall time: waits
 * included), so the signal interrupts exactly the thread it samples.  The
 * first expiry is a pseudo-random fraction of the period, so that threads
 * started together do not fire in lockstep.  The signal is a real-time
 * one (SIGRTMIN + 4 by default): the program's own SIGPROF, SIGALRM and
 * setitimer() stay its own, and a timer signal that cannot be delivered
 * in time is not lost but counted: its overruns (si_overrun) become the
 * weight of the sample that is delivered.  So a thread that blocks the
 * signal for a while (a critical section under pthread_sigmask) gets one
 * sample, when it unblocks, standing for every period it missed; the
 * total goes to the trace as sample.missed.  The signal is blocked while
 * its handler runs (sa_mask), so handlers of one thread never nest.
 *
 * What the clocks give.  The wall clock's timer is a high-resolution one: it
 * fires at the rate asked for.  A CPU-time POSIX timer is checked by the
 * kernel at its scheduler tick (CONFIG_HZ: 250 Hz on Debian's kernels), so a
 * thread would get at most HZ samples a second of its CPU time whatever the
 * rate, each weighing the periods since the last (at 20 kHz and HZ 250,
 * about 80), and when threads contend for the CPUs the kernel's overruns
 * miss periods (bench/recorder-measurements.md).  So the CPU clock is a perf
 * task-clock event of each thread where the kernel allows one (perf_open
 * below: an hrtimer on the thread's CPU time, at the rate asked for; each
 * signal re-arms it, and its weight is the thread's CPU time,
 * CLOCK_THREAD_CPUTIME_ID, in periods less those sampled before, so a
 * blocked signal's periods are still counted), and the POSIX CPU-time timer
 * only where perf events are refused (sample.sampler says which).
 *
 * How the perf event signals.  Where the kernel takes attr.sigtrap (Linux
 * 5.13+) and no debugger traces the process, the event sends the thread
 * SIGTRAP itself (si_code TRAP_PERF, si_perf_data the thread's struct),
 * queued as task work that runs on the thread's way back to user mode from
 * the timer interrupt: no inter-processor interrupt, no re-arming ioctl in
 * the handler, the interrupted registers still the user code's: cheaper than
 * a signal through F_SETSIG (bench/signal/signal_cost measures both).  The
 * event keeps counting while a signal waits (SIGTRAP is a standard signal:
 * one pending at most), the weight is the CPU time in periods as above.  The
 * SIGTRAP handler, once installed, stays: a trap that is not this sampler's
 * (a breakpoint, raise(SIGTRAP)) goes to the disposition it found, SIG_DFL's
 * included (reset and raised again), and a perf trap that comes late, after
 * the sampler stopped, is dropped.  Under a debugger or Valgrind, in a
 * ThreadSanitizer build (trap_usable says why), or with
 * EVALPROF_SAMPLE_TIMER=rt, the event signals through F_SETSIG with the
 * real-time signal and each handler re-arms it for one more overflow
 * (PERF_EVENT_IOC_REFRESH).
 *
 * The wall clock's sampler thread.  A timer's signal interrupts a
 * blocked call, and CPython takes the GIL back to check for signals
 * before it blocks again: a blocked thread then waits for the GIL at
 * every sample.  So, unless EVALPROF_SAMPLE_WALL=timer, the wall clock
 * is a thread of the recorder (ticker_main) that ticks every period on
 * absolute CLOCK_MONOTONIC deadlines, owes each sampled thread the
 * periods since its last tick (a late tick counts those it missed) and
 * looks at it: /proc/self/task/TID/syscall ("running", or the call's
 * number and arguments), read with pread on a descriptor kept open, and
 * the thread's CPU clock.  A thread running, past its CPU budget since
 * its handler last sampled it (a tenth of a period, at least 100 us:
 * more than CPython's wake-up and signal check cost a blocked thread, so
 * that one signal does not call for the next) and waiting for its GIL or
 * blocked so for STALE_MAX_NS, is sent the signal (rt_tgsigqueueinfo,
 * SI_QUEUE, the struct as its value), and its handler takes every period
 * owed as its weight.  Any other is sampled on its behalf: the stack,
 * unit and state its handler last stored (kept by evp_rec_sample_put; a
 * function keyed since voids the copy; the opcode and unit not when the
 * thread ran Python code since: blocked_state), flagged GIL_WAIT for a
 * futex on the thread's GIL (evp_rec_sample_thread_gil) or SYSCALL.  The ring
 * stays single producer: the sampler thread writes one only while no signal to
 * its thread is in flight (sent == done; the handler sets done when finished),
 * under sampler.mu, and a per-ring flag (producer) turns any overlap that a
 * stray signal could make into a dropped sample.  It is paused around a fork,
 * as the writer is (CPython 3.12+ counts threads).
 *
 * The CPU clock's sampler thread (EVALPROF_SAMPLE_TIMER=thread, and a
 * producer with on_peek).  No timer and no signal: the same thread of the
 * recorder ticks at the rate, owes each thread the periods of CPU time
 * it used (its CPU clock), and a thread that owes one or more and is
 * running is sampled by the producer's on_peek on the sampler thread,
 * which reads that thread's frames from outside it and stores into its
 * ring (enter() finds the ring through peek_tls there): the ring's one
 * producer is then the sampler thread, under sampler.mu.  A producer that
 * cannot read the thread safely now has it signalled instead (tick_peek).
 *
 * The handler calls the producer's on_sample, which walks the thread's
 * frames and stores through evp_rec_sample_func and evp_rec_sample_put.
 * Those are async-signal-safe: no lock, no allocation, no system call;
 * they only copy bytes into the thread's ring.
 *
 * Rings.  One per sampled thread, a power of two of bytes (2 MiB by
 * default), single producer (the thread itself, in its handler) and
 * single consumer (the writer): head and tail are byte counts that only
 * grow, published with release stores and read with acquire loads.  A
 * record is 8-byte aligned, an 8-byte header (length, type, a 16-bit
 * field) and its body, which may wrap around the end of the ring.  A
 * record that does not fit is dropped and counted: a sample in the
 * ring's dropped count (it reaches the trace in the next SAMPLES chunk's
 * prefix), a function record in funcs_lost, and the function's key is
 * remembered (up to 16 of them, then "all of them"), so that a LOST
 * record stored before the thread's next record tells the writer to
 * forget what it knew of those keys: their samples are counted under the
 * placeholder function "<unknown>" instead of under a function the key
 * named before.
 *
 * Stopping.  Each thread's struct has a counter of handlers (and puts)
 * in flight, raised before the sampler's stopping flag is read; the
 * stopper raises the flag and then waits for every counter to fall to 0
 * (the order of both sides is sequentially consistent), after which no
 * handler touches a ring and the writer may free them.  A thread that
 * stops itself needs no wait: it clears its own pointer to the ring, and
 * only its own handler uses it.  Thread structs are never freed (a
 * thread's pointer may outlive the sampler); a stopped thread's struct is
 * reused once the writer has drained its ring.  At the sampler's stop the
 * signal is set to SIG_IGN for a moment, which discards the timer
 * signals still pending, before its previous disposition is restored: a
 * previous SIG_DFL would otherwise kill the process with them.
 *
 * Writer.  The session's writer thread, every round (50 ms apart while
 * sampling, 10 ms while a ring fills by a quarter from one round to the
 * next, 200 ms once nothing asks for more: poll_pace), drains each ring
 * in order under the session lock:
 * a FUNC record maps the thread's key to a global function id, functions
 * being one per (name, file, first line) across threads, registered as
 * evp_rec_func does (so they are in the FUNCS chunks) and given their
 * lines.ID table from the record's line table, once; a SAMPLE record's
 * keys are mapped to functions and its stack, root to leaf, interned in
 * a prefix tree of (parent node, function) -> node, ids dense from 1.
 * New nodes go in a STACKS chunk queued before the round's SAMPLES
 * chunks, parents before children; each thread's samples go in a SAMPLES
 * chunk of its stream, zstd-compressed as EVENTS chunks are.
 *
 * Memory.  The rings are fixed; the writer's tables grow only with
 * distinct functions, keys and stacks, and its batch with what one ring
 * holds.
 *
 * Fork.  A forked child has no timers (they are not inherited): it
 * forgets the parent's rings and tables without freeing them (pages it
 * shares copy-on-write with the parent and never touches, and that other
 * threads of the parent may have been writing), restores the signal's
 * previous disposition and starts again with no sampler.  A child that
 * follows the fork (EVP_REC_FOLLOW_FORK: its own trace, PATH.<pid>)
 * starts the parent's sampler again, with the parent's settings, and
 * samples the forking thread if the parent sampled it: the only thread
 * a child has.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "clock.h"
#include "evalprof/format.h"
#include "itab.h"
#include "linetable.h"
#include "sanitizer.h"
#include "sampler.h"
#include "session.h"

#define DEFAULT_RING_KB 2048u
#define MIN_RING_KB 4u
#define MAX_RING_KB (1u << 20) /* 1 GiB */
#define MAX_NAME 4096u         /* longer names and files are cut */
#define MAX_LINETABLE (1u << 20)
#define LOST_MAX 16
#define CHUNK_SAMPLES 65536u  /* samples per SAMPLES chunk at most */
#define BUDGET_MIN_NS 100000u /* the wall clock's CPU budget, at least */
/* How long a blocked thread past its CPU budget, not waiting for its GIL,
 * is sampled on its behalf before it is signalled. */
#define STALE_MAX_NS 50000000u

/* ---- the ring ----------------------------------------------------------- */

enum rec_type { REC_SAMPLE = 1, REC_FUNC = 2, REC_LOST = 3 };

/* Record header: u32 length (header included, a multiple of 8), u16
 * type, u16 type-specific (SAMPLE: depth; FUNC: line table format; LOST:
 * 1 when every key is lost). */
#define HDR 8u
/* SAMPLE body: u64 ts, u32 state, u32 unit1, u32 weight, u32 keys[depth]. */
#define SAMPLE_FIXED 20u
/* FUNC body: u32 key, firstline, namelen, filelen, ltlen; the bytes. */
#define FUNC_FIXED 20u

struct ring {
    uint8_t *buf;
    uint64_t size;       /* a power of two */
    uint64_t head;       /* bytes ever stored (producer; release) */
    uint64_t tail;       /* bytes ever consumed (writer; release) */
    uint64_t samples;    /* samples stored (producer) */
    uint64_t dropped;    /* samples lost to a full ring (producer) */
    uint64_t funcs_lost; /* function records lost (producer) */
    uint64_t missed;     /* timer overruns (handler) */
    uint64_t unsampled;  /* periods of signals the producer took no
                            sample in (handler) */
    uint64_t puts;       /* evp_rec_sample_put calls (the thread) */
    uint64_t populated;  /* bytes faulted in from buf on (writer) */
    uint64_t seen;       /* head at the writer's last round (writer) */
    /* keys whose function record was lost, not yet told (producer) */
    uint32_t lost[LOST_MAX];
    unsigned nlost;
    int lost_all;
};

/*
 * A ring's pages are faulted in ahead of the samples, by the thread that
 * starts it (the first POPULATE_START bytes, before it takes sampler.mu) and
 * by the writer (up to POPULATE_AHEAD past the head of a ring in use, each
 * round: 16 pages at most under sampler.mu, which the wall clock's sampler
 * thread takes at every tick; a ring never used keeps 16 KiB), never in a
 * handler: a first touch of a page there would be charged to the sampled
 * thread, at many times a handler's usual cost
 * (bench/recorder-measurements.md).  MADV_POPULATE_WRITE (Linux 5.14) faults
 * them in as a write would, without a write: the producer may store there
 * meanwhile.  Where the kernel has it not, the producer takes the faults, as
 * before.
 */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define POPULATE_START (16u << 10)
#define POPULATE_AHEAD (64u << 10)
/* The writer's pace while sampling (poll_pace) */
#define POLL_MS 50u
#define POLL_FAST_MS 10u
#define POLL_IDLE_MS 200u
static int populate_refused; /* MADV_POPULATE_WRITE unknown (atomic) */

static void ring_populate(struct ring *r, uint64_t upto)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    upto = (upto + (uint64_t)page - 1) & ~((uint64_t)page - 1);
    if (upto > r->size)
        upto = r->size;
    if (r->populated >= upto || !r->buf ||
        __atomic_load_n(&populate_refused, __ATOMIC_RELAXED))
        return;
    if (madvise(r->buf + r->populated, upto - r->populated,
                MADV_POPULATE_WRITE) == 0) {
        r->populated = upto;
        return;
    }
    if (errno == EINVAL)
        __atomic_store_n(&populate_refused, 1, __ATOMIC_RELAXED);
    r->populated = r->size; /* (no memory: the producer's faults fail as
                               they would have) */
}

void evp_rec_prefault(void *p, size_t n)
{
    volatile char *c = p;
    for (size_t o = 0; o < n; o += 4096)
        c[o] = c[o];
    if (n > 0)
        c[n - 1] = c[n - 1];
}

static inline uint32_t pad8(size_t n)
{
    return (uint32_t)((n + 7) & ~(size_t)7);
}

/* Producer-only counters, read by the writer. */
static inline void bump(uint64_t *c, uint64_t by)
{
    __atomic_store_n(c, *c + by, __ATOMIC_RELAXED);
}

static void ring_copy_in(struct ring *r, uint64_t at, const void *src, size_t n)
{
    if (!n)
        return; /* (SRC may be NULL then) */
    size_t off = (size_t)(at & (r->size - 1)), first = r->size - off;
    if (first > n)
        first = n;
    memcpy(r->buf + off, src, first);
    memcpy(r->buf, (const uint8_t *)src + first, n - first);
}

static void ring_copy_out(const struct ring *r, uint64_t at, void *dst,
                          size_t n)
{
    size_t off = (size_t)(at & (r->size - 1)), first = r->size - off;
    if (first > n)
        first = n;
    memcpy(dst, r->buf + off, first);
    memcpy((uint8_t *)dst + first, r->buf, n - first);
}

/* Room for LEN bytes at *AT?  (Producer.) */
static inline int ring_reserve(struct ring *r, uint32_t len, uint64_t *at)
{
    uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    if (len > r->size - (r->head - tail))
        return 0;
    *at = r->head;
    return 1;
}

static inline void ring_header(struct ring *r, uint64_t at, uint32_t len,
                               unsigned type, unsigned extra)
{
    uint8_t *h = r->buf + (at & (r->size - 1)); /* never wraps: aligned */
    uint32_t w[2] = {len, (uint32_t)type | (uint32_t)extra << 16};
    memcpy(h, w, sizeof w);
}

static inline void ring_commit(struct ring *r, uint64_t at, uint32_t len)
{
    __atomic_store_n(&r->head, at + len, __ATOMIC_RELEASE);
}

/* Tell the writer of the keys whose function record was lost: 1, or 0
 * when even that does not fit (the record after it must be dropped). */
static int ring_flush_lost(struct ring *r)
{
    if (!r->nlost && !r->lost_all)
        return 1;
    uint32_t n = r->lost_all ? 0 : r->nlost;
    uint32_t len = pad8(HDR + 4u * n);
    uint64_t at;
    if (!ring_reserve(r, len, &at))
        return 0;
    ring_header(r, at, len, REC_LOST, r->lost_all ? 1 : 0);
    ring_copy_in(r, at + HDR, r->lost, 4u * n);
    ring_commit(r, at, len);
    r->nlost = 0;
    r->lost_all = 0;
    return 1;
}

static void ring_lose_key(struct ring *r, uint32_t key)
{
    bump(&r->funcs_lost, 1);
    for (unsigned i = 0; i < r->nlost; i++)
        if (r->lost[i] == key)
            return;
    if (r->nlost < LOST_MAX)
        r->lost[r->nlost++] = key;
    else
        r->lost_all = 1;
}

/* ---- per-thread state --------------------------------------------------- */

enum { ST_FREE, ST_ACTIVE, ST_STOPPED };

struct keyent {
    uint32_t key, func; /* func 0: not known (lost) */
};

struct sthread {
    struct ring ring;
    int state;     /* ST_* (atomic) */
    unsigned busy; /* handlers and puts in flight (the thread; atomic) */
    void *owner;   /* the owning thread's &sample_tls (atomic) */
    uint64_t gen;  /* the sampler it belongs to */
    int tid;
    timer_t timer;
    int has_timer;
    int perf_fd;            /* CPU clock through perf: its event, or -1 */
    uint64_t periods_told;  /* the perf event's periods already sampled */
    uint64_t handled;       /* the perf event's signals handled (atomic) */
    uint64_t handler_ticks; /* the time in the handlers (any signal's) */
    uint64_t event_ns;      /* the perf event's period now (perf_throttle) */
    uint64_t watch_cpu;     /* perf_throttle's last look: CPU ns, */
    uint64_t watch_handled; /* signals handled, */
    uint64_t watch_ticks;   /* and the time in their handlers */
    uint64_t cpu_base;      /* the thread's CPU ns when it started */
    uint32_t stream;
    /* the wall clock's sampler thread (ticker_main) */
    int sys_fd;       /* /proc/self/task/TID/syscall, or -1 */
    clockid_t cpu_id; /* the thread's CPU clock */
    int has_cpu_id;
    uintptr_t gil_lo;       /* the thread's GIL words (atomic) */
    size_t gil_size;        /* (atomic) */
    uint64_t ticks_seen;    /* the sampler's ticks already owed (ticker) */
    uint64_t owed;          /* periods not sampled yet (atomic) */
    uint64_t sent, done;    /* signals sent (ticker), handled (atomic) */
    uint64_t cpu_at_sample; /* CPU ns at the handler's last sample */
    uint64_t signals;       /* signals handled in under sampler.long_ticks, */
    uint64_t short_ticks;   /* their time, */
    uint64_t long_signals;  /* and those that took longer (atomic) */
    /* (ticker) periods sampled on its behalf past its CPU budget since
     * the handler's sample at CPU ns stale_at */
    uint64_t stale_periods, stale_at;
    int producer;      /* the ring is being written (atomic) */
    void *peek_cookie; /* the CPU clock's sampler thread: on_peek's (atomic) */
    /* the handler's last sample, copied by evp_rec_sample_put */
    int last_ok; /* 0 after a key changed meaning (evp_rec_sample_func) */
    uint32_t last_state, last_unit1;
    unsigned last_depth;
    uint32_t *last_keys;
    unsigned last_cap;
    /* writer side */
    uint64_t dropped_told; /* ring.dropped already in a chunk's prefix */
    uint64_t unbatched;    /* samples the writer had no memory for */
    struct evp_itab key_index;
    struct keyent *keys;
    size_t nkeys, keys_cap;
    struct evp_sample_rec *batch;
    size_t nbatch, batch_cap;
    struct sthread *next;
};

static __thread struct sthread *sample_tls
    __attribute__((tls_model("initial-exec")));
/* The sampler thread, while on_peek samples a thread: that thread's */
static __thread struct sthread *peek_tls
    __attribute__((tls_model("initial-exec")));

/* A function of the sampled stacks, one per (name, file, first line). */
struct gfunc {
    char *name, *file; /* NUL-terminated copies */
    size_t namelen, filelen;
    uint32_t line;
    uint32_t id;   /* the session's function id */
    int has_lines; /* lines.ID written (or its table was malformed) */
};

struct node {
    uint32_t parent, func;
};

static struct {
    /* The thread list and the sampler's start and stop; taken after the
     * session lock when both are held. */
    pthread_mutex_t mu;
    int running;  /* a sampler is installed */
    int stopping; /* handlers return at once (atomic) */
    uint64_t gen;
    int used;         /* sampled in this session: sample.missed at close */
    unsigned poll_ms; /* evp_rec_sample_poll_ms_ (atomic) */
    struct evp_rec_sample_config cfg;
    uint64_t period_ns;
    uint64_t ring_bytes;
    int signo;
    int use_perf;       /* CPU clock through perf_event_open */
    int use_trap;       /* ... its overflows sending SIGTRAP (attr.sigtrap) */
    int trap_installed; /* evp_sample_on_trap is SIGTRAP's handler */
    /* What SIGTRAP had before evp_sample_on_trap, the disposition it
     * passes the traps that are not the sampler's on to: two slots, the
     * writer fills the one not published and then publishes it
     * (old_trap_gen, its low bit the slot), so that a trap delivered
     * meanwhile, on the writer's thread too, reads a whole one
     * (trap_old). */
    struct {
        void *fn;    /* sa_sigaction or sa_handler (SIG_DFL, SIG_IGN) */
        int siginfo; /* SA_SIGINFO: fn is an sa_sigaction */
    } old_trap[2];
    unsigned old_trap_gen;
    uint64_t trap_retaken; /* times the program replaced evp_sample_on_trap */
    uint64_t throttled;    /* perf periods raised (perf_throttle) */
    uint64_t throttled_max_ns; /* the longest period raised to */
    int use_ticker;            /* wall clock through the sampler thread */
    int use_peek;              /* CPU clock through it: on_peek, no signal */
    uint64_t peeks;            /* on_peek's calls (ticker) */
    uint64_t peek_signals;     /* ... that asked for the signal instead */
    uint64_t sampler_cpu_ns;   /* the sampler thread's CPU, at its stop */
    /* EVALPROF_TEST_SAMPLE_NOP=1 (benchmarks and tests): a perf event's
     * signal is handled by returning at once, no sample, no clock read,
     * so that bench/cpython/sampled.py --nop measures what the signals
     * cost the thread with no handler work (its delivery, and what it
     * evicts); the handled signals are counted (sample.nop_signals).
     * =2: the perf event's overflows interrupt the thread and send no
     * signal at all (the timer interrupts alone, sample.nop).  =3: no
     * timer and no signal; the sampler thread wakes every period and
     * reads each thread's CPU clock and a word the thread writes, as a
     * sampler that never interrupts a thread would (ticker_peek; its
     * reads counted in sample.nop_signals). */
    int nop;
    uint64_t nop_signals; /* ... of the threads released */
    uint64_t started_ns;  /* the sampler's start (mono) */
    uint64_t round_ns;    /* the writer's last round (mono) */
    pthread_t ticker;
    int has_ticker;
    int ticker_stop;    /* (atomic) */
    int ticker_paused;  /* around a fork */
    int ticker_tid;     /* (atomic) */
    uint64_t ticks;     /* the sampler thread's ticks so far */
    uint64_t budget_ns; /* CPU a blocked thread may use between samples */
    pid_t pid;
    struct sigaction old;
    struct sthread *threads;
    pthread_key_t exit_key;
    /* figures, of rings freed already */
    uint64_t samples, dropped, missed, unsampled, funcs_lost, threads_started,
        stacks;
    /* sample.signals, sample.handler_ns, sample.handler_long */
    uint64_t signals, short_ticks, long_signals;
    uint64_t long_ticks; /* HANDLER_LONG_NS in evp_rec_now's ticks */
    /* writer side */
    struct gfunc *funcs;
    size_t nfuncs, funcs_cap;
    struct evp_itab func_index;
    uint32_t unknown; /* the id of "<unknown>", 0 until needed */
    uint32_t *seq_of; /* next SAMPLES chunk number, by stream */
    size_t seq_cap;
    struct node *nodes;
    size_t nnodes, nodes_cap, nodes_written;
    struct evp_itab node_index;
    uint8_t *scratch; /* one record, contiguous */
    size_t scratch_cap;
    uint8_t *out; /* a chunk being encoded */
    size_t out_cap;
    uint32_t path[EVP_SAMPLE_DEPTH_LIMIT];
} sampler = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* ---- the thread's clock -------------------------------------------------- */

/*
 * The CPU clock through perf_event_open: a task-clock software event of
 * the calling thread, overflowing every period of its CPU time (an
 * hrtimer: the rate asked for, where a CPU-time POSIX timer gets the
 * kernel's tick), its overflow signalling the thread itself (F_SETSIG,
 * F_SETOWN_EX to the thread).  Returns the event or -1 (perf events
 * refused: kernel.perf_event_paranoid, a seccomp filter), with user and
 * kernel time first, then user time only.
 */
static int perf_open(int signo, uint64_t period_ns, int trap, void *cookie)
{
    struct perf_event_attr a;
    int quiet = sampler.nop == 2 && cookie; /* a thread's, sending nothing */
    for (int user_only = 0; user_only < 2; user_only++) {
        memset(&a, 0, sizeof a);
        a.type = PERF_TYPE_SOFTWARE;
        a.size = sizeof a;
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        a.sample_period = period_ns;
        a.disabled = 1;
        a.wakeup_events = 1;
        a.exclude_kernel = (unsigned)user_only;
        a.exclude_hv = 1;
        if (trap && !quiet) {
            a.sigtrap = 1;
            a.remove_on_exec = 1; /* (the kernel requires it) */
            a.sig_data = (uint64_t)(uintptr_t)cookie;
        }
        int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
                              PERF_FLAG_FD_CLOEXEC);
        if (fd < 0)
            continue;
        if (trap || quiet)
            return fd;
        struct f_owner_ex o = {F_OWNER_TID, evp_rec_gettid_()};
        if (fcntl(fd, F_SETFL, O_ASYNC) == 0 &&
            fcntl(fd, F_SETSIG, signo) == 0 && fcntl(fd, F_SETOWN_EX, &o) == 0)
            return fd;
        close(fd);
    }
    return -1;
}

/* The wall clock through the sampler thread, unless
 * EVALPROF_SAMPLE_WALL=timer asks for each thread's own timer. */
static int wall_ticker_wanted(void)
{
    const char *e = getenv("EVALPROF_SAMPLE_WALL");
    return !(e && strcmp(e, "timer") == 0);
}

/* Can this process sample CPU time through perf?  EVALPROF_SAMPLE_TIMER
 * (TIMER) =posix says no (the POSIX CPU-time timer instead). */
static int perf_usable(int signo, uint64_t period_ns, const char *timer)
{
    if (timer && strcmp(timer, "posix") == 0)
        return 0;
    int fd = perf_open(signo, period_ns, 0, NULL);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* The first line of file PATH (of /proc) holding NEEDLE, into LINE of
 * LEN bytes: 1, or 0 when there is none or the file cannot be read. */
static int proc_line(const char *path, const char *needle, char *line,
                     size_t len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    int found = 0;
    while (!found && fgets(line, (int)len, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* Is the process traced (/proc/self/status TracerPid)?  A debugger
 * stops at every SIGTRAP. */
static int traced(void)
{
    char line[128];
    int pid = 0;
    return proc_line("/proc/self/status", "TracerPid:", line, sizeof line) &&
           sscanf(line, "TracerPid: %d", &pid) == 1 && pid != 0;
}

/* Does the process run under Valgrind (its preloaded vgpreload_*.so in
 * the maps)?  Valgrind takes a SIGTRAP that arrives while it runs the
 * program's translated code for a fault of its own and ends the run
 * ("Valgrind received a signal 5"). */
static int under_valgrind(void)
{
    char line[512];
    return proc_line("/proc/self/maps", "/vgpreload_", line, sizeof line);
}

static void evp_sample_on_trap(int sig, siginfo_t *si, void *uc);

static int is_on_trap(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) &&
           sa->sa_sigaction == evp_sample_on_trap;
}

/* ThreadSanitizer takes every SIGTRAP for a synchronous one (a fault of
 * the instruction it interrupts: is_sync_signal in its runtime) and runs
 * the handler at once, wherever the thread is, its own runtime included,
 * for each trap; an asynchronous signal it defers to the thread's next
 * safe point, where the expiries that came meanwhile are one.  A checked
 * handler walking a deep stack can cost more than a period at high
 * rates: with SIGTRAP the thread would then run little but its handler.
 * So a TSan build of the recorder signals through F_SETSIG. */

/* Can the perf event send SIGTRAP itself?  Not under a debugger,
 * Valgrind or ThreadSanitizer (each takes SIGTRAP for the fault of an
 * instruction), nor with EVALPROF_SAMPLE_TIMER=rt, nor when the program
 * handles or ignores SIGTRAP already, nor where the kernel refuses
 * attr.sigtrap (before 5.13: EINVAL). */
static int trap_usable(uint64_t period_ns, const char *timer)
{
    if ((timer && strcmp(timer, "rt") == 0) || EVP_UNDER_TSAN || traced() ||
        under_valgrind())
        return 0;
    struct sigaction cur;
    if (sigaction(SIGTRAP, NULL, &cur) != 0 ||
        !(is_on_trap(&cur) ||
          (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL)))
        return 0;
    int fd = perf_open(0, period_ns, 1, NULL);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

static uint64_t clock_ns(clockid_t id);

/* The CPU clock's sampler thread: the whole periods of CPU time thread
 * ST has used since it started sampling (0 where its clock is not
 * read). */
static uint64_t peek_periods(const struct sthread *st)
{
    uint64_t cpu = st->has_cpu_id ? clock_ns(st->cpu_id) : UINT64_MAX;
    return cpu != UINT64_MAX && cpu > st->cpu_base
               ? (cpu - st->cpu_base) / sampler.period_ns
               : 0;
}

/* Stop the thread's timer or perf event (the sampler's lock held).  With
 * the CPU clock's sampler thread, the periods the thread still owed (it
 * was blocked at the ticks since, or its signal was in flight) are
 * counted unsampled: every period is in a weight or there. */
static void clock_stop(struct sthread *st)
{
    if (sampler.use_peek && st->ring.buf) {
        uint64_t periods = peek_periods(st);
        uint64_t owed = __atomic_exchange_n(&st->owed, 0, __ATOMIC_ACQ_REL);
        if (periods > st->periods_told) {
            owed += periods - st->periods_told;
            st->periods_told = periods;
        }
        if (owed)
            bump(&st->ring.unsampled, owed);
    }
    if (st->has_timer)
        timer_delete(st->timer);
    st->has_timer = 0;
    if (st->perf_fd >= 0) {
        ioctl(st->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
        close(st->perf_fd);
    }
    st->perf_fd = -1;
    if (st->sys_fd >= 0)
        close(st->sys_fd);
    st->sys_fd = -1;
}

/* ---- in the handler ------------------------------------------------------ */

/*
 * The calling thread's ring, counted as in use until leave(), or NULL
 * when it has none (no sampler, stopping, another thread's struct).  The
 * count is raised before the stopping flag is read, and the stopper sets
 * the flag before it reads the counts: one of the two sees the other.
 * The count is changed with atomic read-modify-writes: a thread whose
 * pointer outlived its struct (stopped with the sampler, the struct then
 * reused by another thread) may touch it for a moment outside a handler.
 */
static struct sthread *enter_peek(void);

static inline struct sthread *enter(void)
{
    struct sthread *st = sample_tls;
    if (!st)
        return enter_peek();
    if (__atomic_load_n(&st->owner, __ATOMIC_RELAXED) != (void *)&sample_tls)
        return NULL;
    __atomic_add_fetch(&st->busy, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&sampler.stopping, __ATOMIC_SEQ_CST) &&
        __atomic_load_n(&st->state, __ATOMIC_ACQUIRE) == ST_ACTIVE &&
        __atomic_load_n(&st->owner, __ATOMIC_RELAXED) == (void *)&sample_tls)
        return st;
    __atomic_sub_fetch(&st->busy, 1, __ATOMIC_RELEASE);
    return NULL;
}

static inline void leave(struct sthread *st)
{
    __atomic_sub_fetch(&st->busy, 1, __ATOMIC_RELEASE);
}

/* On the sampler thread, inside on_peek: the ring of the thread it
 * samples (which the sampler thread alone writes: that thread has no
 * timer, and its struct stays active while sampler.mu is held). */
static __attribute__((noinline)) struct sthread *enter_peek(void)
{
    struct sthread *st = peek_tls;
    if (st)
        __atomic_add_fetch(&st->busy, 1, __ATOMIC_SEQ_CST);
    return st;
}

/* The periods a perf task-clock signal stands for: the thread's CPU time
 * since it started sampling (CLOCK_THREAD_CPUTIME_ID: the event's own
 * count stops while it waits to be re-armed, a blocked signal's time
 * would be lost), in periods, less those sampled before (at least one);
 * then the event is armed for one more overflow.  clock_gettime() and
 * ioctl() are async-signal-safe. */
static uint32_t perf_weight(struct sthread *st)
{
    struct timespec ts;
    uint32_t weight = 1;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) {
        uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        uint64_t periods =
            ns > st->cpu_base ? (ns - st->cpu_base) / sampler.period_ns : 0;
        if (periods > st->periods_told + 1) {
            uint64_t w = periods - st->periods_told;
            weight = w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
        }
    }
    st->periods_told += weight;
    __atomic_store_n(&st->handled, st->handled + 1, __ATOMIC_RELAXED);
    if (!sampler.use_trap)
        ioctl(st->perf_fd, PERF_EVENT_IOC_REFRESH, 1);
    return weight;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return UINT64_MAX;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The flag of thread ST (NULL: not known) without the GIL, blocked in
 * call NR (-1: not known) whose first argument is ARG: a futex wait on a
 * word of the GIL range it registered (evp_rec_sample_thread_gil; none:
 * never) is waiting for it; any other call is another call. */
static uint32_t call_flag(const struct sthread *st, long nr, uintptr_t arg)
{
    uintptr_t lo = st ? __atomic_load_n(&st->gil_lo, __ATOMIC_RELAXED) : 0;
    size_t size = st ? __atomic_load_n(&st->gil_size, __ATOMIC_RELAXED) : 0;
    return lo && (nr == -1 || nr == SYS_futex) && arg - lo < size
               ? EVP_SAMPLE_GIL_WAIT
               : EVP_SAMPLE_SYSCALL;
}

/* SIGSEGV and SIGBUS let through to the calling thread, so that a fault
 * of the producer's walk reaches the fault guard (a synchronous fault
 * while it is blocked kills the process). */
static void unblock_faults(void)
{
    sigset_t faults;
    sigemptyset(&faults);
    sigaddset(&faults, SIGSEGV);
    sigaddset(&faults, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
}

/* One signal's sample, standing for WEIGHT periods: the periods past
 * the first are missed ones (counted in its weight); a signal the
 * producer takes no sample in (evalprof's own code running, a frame walk
 * that faulted) leaves all its periods unsampled, told apart
 * (sample.unsampled), so that every period is in the weights, missed
 * included, or unsampled. */
static void take(struct sthread *st, void *uc, uint32_t weight)
{
    if (!weight)
        return;
    /* ThreadSanitizer runs a signal's handler later, at a call it
     * intercepts, with every signal blocked */
    if (EVP_UNDER_TSAN)
        unblock_faults();
    uint64_t puts = st->ring.puts;
    sampler.cfg.on_sample(uc, weight);
    if (st->ring.puts == puts)
        bump(&st->ring.unsampled, weight);
    else if (weight > 1)
        bump(&st->ring.missed, weight - 1u);
}

/* A signal handled since T0 (evp_rec_now's ticks), its time counted for
 * perf_throttle, and for the trace (sample.signals, sample.handler_ns)
 * unless it took over sampler.long_ticks (HANDLER_LONG_NS): evalprof's handler
 * takes a few microseconds, and one that took 100 µs of real time or more
 * had its thread descheduled inside it (the clock runs on).  Those are
 * counted apart (sample.handler_long), so that the few whose thread
 * was descheduled do not swamp sample.handler_ns. */
#define HANDLER_LONG_NS 100000.0
static void count_signal(struct sthread *st, uint64_t t0)
{
    uint64_t d = evp_rec_now() - t0;
    __atomic_store_n(&st->handler_ticks, st->handler_ticks + d,
                     __ATOMIC_RELAXED);
    if (d < sampler.long_ticks) {
        __atomic_store_n(&st->short_ticks, st->short_ticks + d,
                         __ATOMIC_RELAXED);
        __atomic_store_n(&st->signals, st->signals + 1, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&st->long_signals, st->long_signals + 1,
                         __ATOMIC_RELAXED);
    }
}

/* A perf event's signal: its sample, and the time its handler took
 * (perf_throttle tells from it whether the signals' cost is why they are
 * lost). */
static void take_perf(struct sthread *st, void *uc)
{
    if (sampler.nop) {
        /* EVALPROF_TEST_SAMPLE_NOP: counted (so that perf_throttle sees
         * the signal arrive), the event re-armed where it must be,
         * nothing else */
        __atomic_store_n(&st->handled, st->handled + 1, __ATOMIC_RELAXED);
        if (!sampler.use_trap)
            ioctl(st->perf_fd, PERF_EVENT_IOC_REFRESH, 1);
        return;
    }
    uint64_t t0 = evp_rec_now();
    take(st, uc, perf_weight(st));
    count_signal(st, t0);
}

/* The timer signal's handler.  The two handlers' names are what the perf
 * cross-check knows them by in a perf stack (src/perf/crosscheck.c). */
static void evp_sample_on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    int saved = errno;
    struct sthread *st = sample_tls;
    /* Only this thread's own timer or perf event: a stray signal (another
     * sender, a deleted timer's last one) is ignored. */
    int timer =
        st && si && si->si_code == SI_TIMER && si->si_value.sival_ptr == st;
    int perf = st && si && st->perf_fd >= 0 && si->si_fd == st->perf_fd &&
               (si->si_code == POLL_IN || si->si_code == POLL_HUP);
    int tick = st && si && si->si_code == SI_QUEUE &&
               si->si_value.sival_ptr == st && si->si_pid == sampler.pid;
    if (perf && (st = enter()) != NULL) {
        take_perf(st, uc);
        leave(st);
    } else if ((timer || tick) && (st = enter()) != NULL) {
        uint64_t t0 = evp_rec_now();
        uint32_t weight = 1;
        if (tick) {
            /* what the sampler thread read of this thread before it sent
             * the signal (its last sample) happens before this handler
             * writes it again: the send is no synchronisation of C's */
            (void)__atomic_load_n(&st->sent, __ATOMIC_ACQUIRE);
            uint64_t w = __atomic_exchange_n(&st->owed, 0, __ATOMIC_ACQ_REL);
            weight = w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
        } else if (si->si_overrun > 0) {
            weight += (uint32_t)si->si_overrun;
        }
        take(st, uc, weight);
        if (tick) {
            uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
            if (cpu != UINT64_MAX)
                __atomic_store_n(&st->cpu_at_sample, cpu, __ATOMIC_RELAXED);
            /* The sampler thread may write for this thread from here. */
            __atomic_store_n(&st->done,
                             __atomic_load_n(&st->sent, __ATOMIC_ACQUIRE),
                             __ATOMIC_RELEASE);
        }
        count_signal(st, t0);
        leave(st);
    }
    errno = saved;
}

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

/* siginfo's si_perf_data (glibc before 2.37 does not name it): right
 * after si_addr, in the union that holds si_addr_lsb */
static uintptr_t perf_data(const siginfo_t *si)
{
    uintptr_t v;
    memcpy(&v, (const char *)&si->si_addr + sizeof(void *), sizeof v);
    return v;
}

/* SIGTRAP: this thread's perf event (TRAP_PERF, its struct as the data)
 * is a sample; another perf trap (a stopped sampler's, late) is dropped;
 * any other trap goes where it went before. */
/* The published disposition of sampler.old_trap (async-signal-safe): read the
 * slot, and again if the writer published another meanwhile. */
static void *trap_old(int *siginfo)
{
    unsigned gen;
    void *fn;
    do {
        gen = __atomic_load_n(&sampler.old_trap_gen, __ATOMIC_ACQUIRE);
        /* (acquire: the second look at gen comes after these) */
        fn = __atomic_load_n(&sampler.old_trap[gen & 1].fn, __ATOMIC_ACQUIRE);
        *siginfo = __atomic_load_n(&sampler.old_trap[gen & 1].siginfo,
                                   __ATOMIC_ACQUIRE);
    } while (__atomic_load_n(&sampler.old_trap_gen, __ATOMIC_RELAXED) != gen);
    return fn;
}

/* Publish SA as the disposition evp_sample_on_trap passes other traps
 * to (sampler.mu held: one writer). */
static void trap_old_set(const struct sigaction *sa)
{
    unsigned gen = sampler.old_trap_gen + 1;
    int siginfo = (sa->sa_flags & SA_SIGINFO) != 0;
    void *fn = siginfo ? (void *)sa->sa_sigaction : (void *)sa->sa_handler;
    /* (release: a reader that reads one of these stores sees the
     * publication before them too, so its second look at the generation
     * finds it moved and it reads again) */
    __atomic_store_n(&sampler.old_trap[gen & 1].fn, fn, __ATOMIC_RELEASE);
    __atomic_store_n(&sampler.old_trap[gen & 1].siginfo, siginfo,
                     __ATOMIC_RELEASE);
    __atomic_store_n(&sampler.old_trap_gen, gen, __ATOMIC_RELEASE);
}

static void evp_sample_on_trap(int sig, siginfo_t *si, void *uc)
{
    if (si && si->si_code == TRAP_PERF) {
        int saved = errno;
        struct sthread *st = sample_tls;
        if (st && perf_data(si) == (uintptr_t)st && st->perf_fd >= 0 &&
            (st = enter()) != NULL) {
            take_perf(st, uc);
            leave(st);
        }
        errno = saved;
        return;
    }
    int siginfo;
    void *fn = trap_old(&siginfo);
    if (siginfo) {
        if (fn)
            ((void (*)(int, siginfo_t *, void *))fn)(sig, si, uc);
    } else if (fn == (void *)SIG_DFL) {
        /* what the trap would have done: the default action, once this
         * handler returns (SIGTRAP is blocked in it) */
        signal(SIGTRAP, SIG_DFL);
        raise(SIGTRAP);
    } else if (fn != (void *)SIG_IGN) {
        ((void (*)(int))fn)(sig);
    }
}

/* Make evp_sample_on_trap SIGTRAP's handler, the one it replaces into
 * OLD (NULL: not kept).  Returns 0 or -errno. */
static int trap_set(struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = evp_sample_on_trap;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGTRAP);
    return sigaction(SIGTRAP, &sa, old) == 0 ? 0 : -errno;
}

/* SIGTRAP's handler again, if the program replaced it while sampling
 * (the writer, every round; sampler.mu held): the program's disposition is
 * then the one its own traps go to, and the perf traps of the round
 * before went to it. */
static void trap_guard(void)
{
    struct sigaction cur;
    if (!sampler.running || !sampler.use_trap ||
        sigaction(SIGTRAP, NULL, &cur) != 0 || is_on_trap(&cur))
        return;
    trap_old_set(&cur);
    if (trap_set(NULL) == 0)
        sampler.trap_retaken++;
}

/* Make evp_sample_on_trap SIGTRAP's handler, once (sampler.mu held). */
static int trap_install(void)
{
    if (sampler.trap_installed)
        return 0;
    struct sigaction old;
    int rc = trap_set(&old);
    if (rc == 0)
        trap_old_set(&old);
    sampler.trap_installed = rc == 0;
    return rc;
}

int evp_rec_sample_func(uint32_t key, const char *name, size_t namelen,
                        const char *file, size_t filelen, uint32_t firstline,
                        const uint8_t *linetable, size_t ltlen,
                        unsigned lt_format)
{
    if (!key)
        return -EINVAL;
    struct sthread *st = enter();
    if (!st)
        return -ENOTCONN;
    struct ring *r = &st->ring;
    if (!name)
        namelen = 0;
    if (!file)
        filelen = 0;
    if (namelen > MAX_NAME)
        namelen = MAX_NAME;
    if (filelen > MAX_NAME)
        filelen = MAX_NAME;
    if (!linetable || lt_format == EVP_LT_NONE || ltlen > MAX_LINETABLE)
        ltlen = 0;
    if (!ltlen)
        lt_format = EVP_LT_NONE;
    if (__atomic_exchange_n(&st->producer, 1, __ATOMIC_ACQUIRE)) {
        leave(st); /* (the sampler thread writes: cannot happen) */
        return -EBUSY;
    }
    /* its keys may name other functions now */
    __atomic_store_n(&st->last_ok, 0, __ATOMIC_RELAXED);
    uint64_t at;
    uint32_t len = pad8(HDR + FUNC_FIXED + namelen + filelen + ltlen);
    int ok = ring_flush_lost(r);
    if (ok && !ring_reserve(r, len, &at) && ltlen) {
        /* The function without its lines rather than nothing. */
        ltlen = 0;
        lt_format = EVP_LT_NONE;
        len = pad8(HDR + FUNC_FIXED + namelen + filelen);
    }
    if (!ok || !ring_reserve(r, len, &at)) {
        ring_lose_key(r, key);
        __atomic_store_n(&st->producer, 0, __ATOMIC_RELEASE);
        leave(st);
        return -ENOSPC;
    }
    uint32_t f[5] = {key, firstline, (uint32_t)namelen, (uint32_t)filelen,
                     (uint32_t)ltlen};
    ring_header(r, at, len, REC_FUNC, lt_format);
    uint64_t p = at + HDR;
    ring_copy_in(r, p, f, sizeof f);
    p += sizeof f;
    ring_copy_in(r, p, name, namelen);
    p += namelen;
    ring_copy_in(r, p, file, filelen);
    p += filelen;
    ring_copy_in(r, p, linetable, ltlen);
    ring_commit(r, at, len);
    __atomic_store_n(&st->producer, 0, __ATOMIC_RELEASE);
    leave(st);
    return 0;
}

/* One sample into ST's ring, its producer lock held. */
static int ring_put_sample(struct sthread *st, uint64_t ts, uint32_t state,
                           uint32_t unit1, uint32_t weight,
                           const uint32_t *keys, unsigned depth)
{
    struct ring *r = &st->ring;
    uint32_t len = pad8(HDR + SAMPLE_FIXED + 4u * depth);
    uint64_t at;
    if (!ring_flush_lost(r) || !ring_reserve(r, len, &at)) {
        bump(&r->dropped, 1);
        return -ENOSPC;
    }
    struct {
        uint64_t ts;
        uint32_t state, unit1, weight;
    } __attribute__((packed)) s = {ts, state, unit1, weight ? weight : 1};
    ring_header(r, at, len, REC_SAMPLE, depth);
    ring_copy_in(r, at + HDR, &s, SAMPLE_FIXED);
    ring_copy_in(r, at + HDR + SAMPLE_FIXED, keys, 4u * depth);
    ring_commit(r, at, len);
    bump(&r->samples, 1);
    return 0;
}

int evp_rec_sample_put(uint64_t ts, uint32_t state, uint32_t unit1,
                       uint32_t weight, const uint32_t *keys, unsigned depth)
{
    struct sthread *st = enter();
    if (!st)
        return -ENOTCONN;
    if (depth > sampler.cfg.max_depth) {
        depth =
            sampler.cfg.max_depth; /* keys are leaf first: the root is cut */
        state |= EVP_SAMPLE_TRUNCATED;
    }
    if (!keys)
        depth = 0;
    bump(&st->ring.puts, 1);
    if (__atomic_exchange_n(&st->producer, 1, __ATOMIC_ACQUIRE)) {
        bump(&st->ring.dropped, 1); /* (the sampler thread writes) */
        leave(st);
        return -ENOSPC;
    }
    int rc = ring_put_sample(st, ts, state, unit1, weight, keys, depth);
    /* What the sampler thread repeats while the thread stays blocked. */
    if (st->last_keys && depth <= st->last_cap) {
        if (depth)
            memcpy(st->last_keys, keys, 4u * depth);
        st->last_depth = depth;
        __atomic_store_n(&st->last_state, state, __ATOMIC_RELAXED);
        st->last_unit1 = unit1;
        __atomic_store_n(&st->last_ok, 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&st->producer, 0, __ATOMIC_RELEASE);
    leave(st);
    return rc;
}

uint32_t evp_rec_sample_blocked(const void *ucontext)
{
#if defined(__x86_64__) && defined(__linux__)
    if (!ucontext)
        return 0;
    const greg_t *g = ((const ucontext_t *)ucontext)->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)g[REG_RIP];
    uintptr_t off = (uintptr_t)ip & 4095; /* both bytes on IP's own page */
    long ax = (long)g[REG_RAX], nr;
    if (off >= 2 && ip[-2] == 0x0f && ip[-1] == 0x05)
        nr = -1; /* returning (-EINTR, or woken): which call is not known */
    else if (off <= 4094 && ip[0] == 0x0f && ip[1] == 0x05)
        nr = ax; /* to be restarted */
    else
        return 0;
    /* The range the thread registered; the handler runs on the thread
     * itself, so it sees its own stores. */
    const struct sthread *st = sample_tls;
    if (st &&
        __atomic_load_n(&st->owner, __ATOMIC_RELAXED) != (void *)&sample_tls)
        st = NULL;
    return call_flag(st, nr, (uintptr_t)g[REG_RDI]);
#else
    (void)ucontext;
    return 0;
#endif
}

/* ---- the walks' fault guard (recorder.h) --------------------------------- */

static __thread evp_jmp_buf *walk_guard
    __attribute__((tls_model("initial-exec")));
static struct sigaction guard_old_segv, guard_old_bus;
static int guard_installed;

evp_jmp_buf *evp_rec_fault_guard_armed(void)
{
    return walk_guard;
}

void evp_rec_fault_guard_arm(evp_jmp_buf *jb)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    walk_guard = jb;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    evp_jmp_buf *jb = walk_guard;
    if (jb) {
        walk_guard = NULL;
        /* ThreadSanitizer's own handler, the one the kernel calls, is
         * installed without SA_NODEFER: the fault would stay blocked
         * after the jump (on the sampler thread for good: the next fault
         * there would kill the process) */
        if (EVP_UNDER_TSAN)
            unblock_faults();
        EVP_LONGJMP(*jb);
    }
    /* not a walk's: what was there before evalprof */
    struct sigaction *old = sig == SIGSEGV ? &guard_old_segv : &guard_old_bus;
    if (old->sa_flags & SA_SIGINFO) {
        old->sa_sigaction(sig, si, uc);
    } else if (old->sa_handler == SIG_DFL || old->sa_handler == SIG_IGN) {
        /* a fault's instruction runs again, under the default; a signal
         * sent (kill, raise: si_code SI_USER and the like) would not come
         * back, so it is raised again, as it was sent (SA_NODEFER: at
         * once) */
        sigaction(sig, old, NULL);
        if (!si || si->si_code <= 0)
            raise(sig);
    } else {
        old->sa_handler(sig);
    }
}

int evp_rec_fault_guard_install(void)
{
    if (guard_installed)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    /* NODEFER: a jump out of the handler leaves the fault unblocked */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &guard_old_segv) != 0)
        return -errno;
    if (sigaction(SIGBUS, &sa, &guard_old_bus) != 0) {
        int e = errno;
        sigaction(SIGSEGV, &guard_old_segv, NULL);
        return -e;
    }
    guard_installed = 1;
    return 0;
}

static int guard_is_ours(int sig)
{
    struct sigaction cur;
    return sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
           cur.sa_sigaction == on_fault;
}

int evp_rec_fault_guard_ours(void)
{
    return guard_installed && guard_is_ours(SIGSEGV) && guard_is_ours(SIGBUS);
}

int evp_rec_fault_guard_remove(void)
{
    if (!guard_installed)
        return 0;
    int ours = 1;
    if (guard_is_ours(SIGSEGV))
        sigaction(SIGSEGV, &guard_old_segv, NULL);
    else
        ours = 0;
    if (guard_is_ours(SIGBUS))
        sigaction(SIGBUS, &guard_old_bus, NULL);
    else
        ours = 0;
    guard_installed = 0;
    return ours;
}

/* ---- threads ------------------------------------------------------------- */

static void thread_exit_cb(void *p)
{
    (void)p;
    evp_rec_sample_thread_stop();
}

static void key_init(void)
{
    pthread_key_create(&sampler.exit_key, thread_exit_cb);
}

/* A first expiry somewhere in the first period, different per thread. */
static uint64_t first_expiry_ns(int tid)
{
    uint64_t h = evp_itab_hash_u64((uint64_t)tid ^ evp_clock_mono_ns());
    uint64_t ns = h % sampler.period_ns;
    return ns ? ns : 1;
}

/* Caller holds sampler.mu.  Frees what the writer side held for ST. */
static void thread_release(struct sthread *st)
{
    struct ring *r = &st->ring;
    sampler.samples += r->samples;
    sampler.dropped += r->dropped;
    sampler.missed += r->missed;
    sampler.unsampled += r->unsampled;
    sampler.funcs_lost += r->funcs_lost;
    sampler.signals += __atomic_load_n(&st->signals, __ATOMIC_RELAXED);
    sampler.short_ticks += __atomic_load_n(&st->short_ticks, __ATOMIC_RELAXED);
    sampler.long_signals +=
        __atomic_load_n(&st->long_signals, __ATOMIC_RELAXED);
    sampler.nop_signals += __atomic_load_n(&st->handled, __ATOMIC_RELAXED);
    if (r->buf)
        munmap(r->buf, r->size);
    memset(r, 0, sizeof *r);
    evp_itab_clear(&st->key_index);
    st->nkeys = 0;
    st->nbatch = 0;
    __atomic_store_n(&st->owner, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&st->state, ST_FREE, __ATOMIC_RELEASE);
}

/*
 * ThreadSanitizer's sigsetjmp records each jump buffer in a vector of the
 * thread's, which it allocates at the thread's first sigsetjmp from its
 * internal allocator, under a spin lock that allocator takes elsewhere too
 * (a thread's start and end, for two).  Made first by a walk, in the
 * sampling signal's handler, that allocation waits forever when the signal
 * interrupted its own thread inside that allocator: the handler spins on a
 * lock that no other thread holds.  A thread starting to be sampled makes
 * one sigsetjmp here, before its timer can interrupt it, so that the vector
 * (room for 16 buffers; TSan drops stale ones at each sigsetjmp) exists
 * before any handler runs.  Elsewhere this does nothing.
 */
static __attribute__((noinline)) void guard_warm(void)
{
#if EVP_UNDER_TSAN && defined(EVP_JMP_LIBC)
    evp_jmp_buf jb;
    if (EVP_SETJMP(jb) != 0)
        return;
    __asm__ volatile("" : : "r"(&jb) : "memory");
#endif
}

int evp_rec_sample_thread_start(const char *name)
{
    pthread_once(&key_once, key_init);
    pthread_mutex_lock(&sampler.mu);
    struct sthread *st = sample_tls;
    int rc = sampler.running ? 0 : -ENOTCONN;
    if (rc == 0 && st && st->owner == (void *)&sample_tls &&
        st->state == ST_ACTIVE && st->gen == sampler.gen)
        rc = 1; /* started already */
    uint64_t bytes = sampler.ring_bytes;
    pthread_mutex_unlock(&sampler.mu);
    if (rc)
        return rc > 0 ? 0 : rc;
    guard_warm();

    /* The stream first: the session lock comes before sampler.mu. */
    uint32_t stream;
    if ((rc = evp_rec_stream_attach_(name, &stream)) != 0)
        return rc < 0 ? rc : -EINVAL;
    void *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return -ENOMEM;
    struct ring early = {.buf = buf, .size = bytes};
    ring_populate(&early, POPULATE_START);

    pthread_mutex_lock(&sampler.mu);
    if (!sampler.running || sampler.ring_bytes != bytes) {
        pthread_mutex_unlock(&sampler.mu);
        munmap(buf, bytes);
        return -ENOTCONN;
    }
    struct sthread **pp = &sampler.threads;
    while (*pp && __atomic_load_n(&(*pp)->state, __ATOMIC_ACQUIRE) != ST_FREE)
        pp = &(*pp)->next;
    if ((st = *pp) != NULL) {
        *pp = st->next;
    } else if (!(st = calloc(1, sizeof *st))) {
        pthread_mutex_unlock(&sampler.mu);
        munmap(buf, bytes);
        return -ENOMEM;
    }
    /* At the tail: the list keeps the order threads started in, the
     * order in which the rings of one stream (a thread that stopped and
     * started again) are written. */
    st->next = NULL;
    for (pp = &sampler.threads; *pp; pp = &(*pp)->next)
        ;
    *pp = st;
    memset(&st->ring, 0, sizeof st->ring);
    st->ring.buf = buf;
    st->ring.size = bytes;
    st->ring.populated = early.populated;
    st->tid = evp_rec_gettid_();
    st->stream = stream;
    st->dropped_told = st->unbatched = 0;
    st->nkeys = st->nbatch = 0;
    evp_itab_clear(&st->key_index);
    st->gen = sampler.gen;
    __atomic_store_n(&st->owner, (void *)&sample_tls, __ATOMIC_RELAXED);

    st->perf_fd = -1;
    st->periods_told = 0;
    st->handled = 0;
    st->handler_ticks = st->signals = st->short_ticks = st->long_signals = 0;
    st->event_ns = sampler.period_ns;
    st->sys_fd = -1;
    st->has_cpu_id = pthread_getcpuclockid(pthread_self(), &st->cpu_id) == 0;
    if (sampler.use_ticker) {
        if (st->last_cap < sampler.cfg.max_depth) {
            uint32_t *k = realloc(st->last_keys, 4u * sampler.cfg.max_depth);
            if (k) {
                st->last_keys = k;
                st->last_cap = sampler.cfg.max_depth;
            }
        }
        st->last_ok = 0;
        char sys[64];
        snprintf(sys, sizeof sys, "/proc/self/task/%d/syscall", st->tid);
        st->sys_fd = open(sys, O_RDONLY | O_CLOEXEC);
        __atomic_store_n(&st->gil_lo, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&st->gil_size, 0, __ATOMIC_RELAXED);
        st->ticks_seen = sampler.ticks;
        st->owed = 0;
        st->sent = st->done = 0;
        st->cpu_at_sample = 0;
        st->producer = 0;
        __atomic_store_n(&st->peek_cookie, NULL, __ATOMIC_RELAXED);
        uint64_t cpu = sampler.use_peek ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
        st->cpu_base = cpu != UINT64_MAX ? cpu : 0;
        /* the sampler thread signals it, or samples it (on_peek) */
    } else if (sampler.use_perf) {
        if ((st->perf_fd = perf_open(sampler.signo, sampler.period_ns,
                                     sampler.use_trap, st)) < 0)
            rc = -EPERM;
    } else {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = sampler.signo;
        sev.sigev_value.sival_ptr = st;
        sev._sigev_un._tid = st->tid;
        clockid_t clock =
            sampler.cfg.cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
        if (timer_create(clock, &sev, &st->timer) != 0)
            rc = -errno;
        else
            st->has_timer = 1;
    }
    if (rc) {
        st->ring.buf = NULL;
        if (st->sys_fd >= 0)
            close(st->sys_fd);
        st->sys_fd = -1;
        __atomic_store_n(&st->owner, NULL, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&sampler.mu);
        munmap(buf, bytes);
        return rc;
    }
    __atomic_store_n(&st->state, ST_ACTIVE, __ATOMIC_RELEASE);
    __atomic_store_n(&sample_tls, st, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pthread_setspecific(sampler.exit_key, st);
    if (sampler.use_perf) {
        struct timespec now;
        st->cpu_base =
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) == 0
                ? (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec
                : 0;
        st->watch_cpu = st->cpu_base;
        st->watch_handled = 0;
        st->watch_ticks = 0;
        ioctl(st->perf_fd, PERF_EVENT_IOC_RESET, 0);
        if (sampler.use_trap || sampler.nop == 2)
            ioctl(st->perf_fd, PERF_EVENT_IOC_ENABLE, 0);
        else
            ioctl(st->perf_fd, PERF_EVENT_IOC_REFRESH, 1);
        sampler.threads_started++;
        pthread_mutex_unlock(&sampler.mu);
        return 0;
    }
    if (sampler.use_ticker) {
        sampler.threads_started++;
        pthread_mutex_unlock(&sampler.mu);
        return 0;
    }
    uint64_t first = first_expiry_ns(st->tid);
    struct itimerspec its = {
        .it_interval = {(time_t)(sampler.period_ns / 1000000000u),
                        (long)(sampler.period_ns % 1000000000u)},
        .it_value = {(time_t)(first / 1000000000u),
                     (long)(first % 1000000000u)},
    };
    if (timer_settime(st->timer, 0, &its, NULL) != 0) {
        rc = -errno;
        __atomic_store_n(&sample_tls, NULL, __ATOMIC_RELAXED);
        timer_delete(st->timer);
        st->has_timer = 0;
        __atomic_store_n(&st->state, ST_STOPPED, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&sampler.mu);
        return rc;
    }
    sampler.threads_started++;
    pthread_mutex_unlock(&sampler.mu);
    return 0;
}

void evp_rec_sample_thread_stop(void)
{
    struct sthread *st = sample_tls;
    if (!st)
        return;
    /* From here on this thread's handler leaves the ring alone. */
    __atomic_store_n(&sample_tls, NULL, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (pthread_getspecific(sampler.exit_key) == st)
        pthread_setspecific(sampler.exit_key, NULL);
    pthread_mutex_lock(&sampler.mu);
    if (st->owner == (void *)&sample_tls &&
        __atomic_load_n(&st->state, __ATOMIC_ACQUIRE) == ST_ACTIVE) {
        clock_stop(st);
        __atomic_store_n(&st->state, ST_STOPPED, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sampler.mu);
}

int evp_rec_sample_thread_peek(void *cookie)
{
    struct sthread *st = sample_tls;
    if (!st || st->owner != (void *)&sample_tls)
        return -ENOTCONN;
    __atomic_store_n(&st->peek_cookie, cookie, __ATOMIC_RELEASE);
    return 0;
}

int evp_rec_sample_thread_gil(const void *lock, size_t size)
{
    struct sthread *st = sample_tls;
    if (!st || st->owner != (void *)&sample_tls)
        return -ENOTCONN;
    __atomic_store_n(&st->gil_size, lock ? size : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&st->gil_lo, (uintptr_t)lock, __ATOMIC_RELAXED);
    return 0;
}

/* ---- the wall clock's sampler thread --------------------------------------
 */

/*
 * System calls that wait for nothing the program asked for.  /proc names the
 * call of a thread that is not running (a runnable one reads "running"), and
 * a thread in one of these is not running only while the kernel waits for
 * memory on its behalf: a page fault as it copies the result out (ASan's
 * stack pages, a page first touched).  It is not blocked in the program's
 * sense, and it holds its GIL if it held it before, so it is signalled, not
 * sampled on its behalf as blocked without the GIL and without its
 * instruction (clock_gettime of a CPU clock, which has no vDSO, as for
 * Python's process_time() and thread_time(), is such a call).  (A thread
 * stopped by a debugger in one is signalled once; the periods go on to be
 * owed to that signal.)
 */
static int never_sleeps(long nr)
{
    static const long calls[] = {
#ifdef SYS_clock_gettime
        SYS_clock_gettime,
#endif
#ifdef SYS_clock_gettime64
        SYS_clock_gettime64,
#endif
#ifdef SYS_clock_getres
        SYS_clock_getres,
#endif
#ifdef SYS_clock_getres_time64
        SYS_clock_getres_time64,
#endif
#ifdef SYS_gettimeofday
        SYS_gettimeofday,
#endif
#ifdef SYS_time
        SYS_time,
#endif
        SYS_getpid,
        SYS_getppid,
        SYS_gettid,
        SYS_getuid,
        SYS_geteuid,
        SYS_getgid,
        SYS_getegid,
#ifdef SYS_getuid32
        SYS_getuid32,
        SYS_geteuid32,
        SYS_getgid32,
        SYS_getegid32,
#endif
        SYS_getrusage,
        SYS_times,
        SYS_getcpu,
        SYS_sched_yield,
        SYS_rt_sigprocmask,
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (calls[i] == nr)
            return 1;
    return 0;
}

/*
 * What /proc/self/task/TID/syscall says of ST: 1 blocked in system call
 * *NR whose first argument is *ARG, 0 running (or not in a call, or in
 * one that never sleeps, or it cannot be told).
 */
static int thread_blocked(const struct sthread *st, long *nr, uintptr_t *arg)
{
    char buf[256];
    if (st->sys_fd < 0)
        return 0;
    ssize_t n = pread(st->sys_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    long v = strtol(buf, &end, 10);
    if (end == buf || v < 0 || never_sleeps(v)) /* "running", "-1 SP PC" */
        return 0;
    *nr = v;
    *arg = (uintptr_t)strtoull(end, NULL, 16);
    return 1;
}

/*
 * The state of a sample on behalf of a blocked thread whose handler last
 * stored LAST: without the GIL, in the eval function no more.  The
 * instruction (and the C call it makes) is kept only with KEEP: the
 * thread was already blocked then (LAST has no GIL) and has used no more
 * than its CPU budget since; otherwise it ran Python code in between and
 * only its stack is kept (no opcode; the caller passes no unit).
 */
static uint32_t blocked_state(uint32_t last, int keep)
{
    uint32_t state =
        last & ~(EVP_SAMPLE_GIL_WAIT | EVP_SAMPLE_SYSCALL | EVP_SAMPLE_IN_EVAL);
    if (!keep)
        state &= ~(EVP_SAMPLE_OP_MASK | EVP_SAMPLE_C_CALL);
    return state | EVP_SAMPLE_NO_GIL;
}

static int send_tick(struct sthread *st);

/* One tick for ST (sampler.mu held): owe it the periods since its last tick,
 * then sample it on its behalf or signal it. */
static void tick_thread(struct sthread *st)
{
    uint64_t n = sampler.ticks - st->ticks_seen;
    st->ticks_seen = sampler.ticks;
    if (!n || !st->ring.buf)
        return;
    __atomic_add_fetch(&st->owed, n, __ATOMIC_ACQ_REL);
    uint64_t sent = st->sent;
    if (__atomic_load_n(&st->done, __ATOMIC_ACQUIRE) != sent)
        return; /* in flight: its handler takes the periods owed */
    long nr;
    uintptr_t arg;
    /* a first look without the ring (the thread may be writing its last
     * sample), then again once the ring is the sampler thread's: the
     * thread's last sample may have changed, or a key its meaning,
     * between the two */
    if (__atomic_load_n(&st->last_ok, __ATOMIC_RELAXED) &&
        thread_blocked(st, &nr, &arg) && st->has_cpu_id) {
        uint64_t cpu = clock_ns(st->cpu_id);
        uint64_t at = __atomic_load_n(&st->cpu_at_sample, __ATOMIC_RELAXED);
        uint32_t call = sampler.cfg.tells_blocked ? call_flag(st, nr, arg) : 0;
        int fresh = cpu != UINT64_MAX && cpu - at <= sampler.budget_ns;
        if (st->stale_at != at) {
            st->stale_at = at;
            st->stale_periods = 0;
        }
        /* Past its budget, the thread is signalled for a stack of now if
         * it waits for its GIL (the signal does not change that wait);
         * in another call only once it stayed there STALE_MAX_NS: a
         * signal makes CPython take the GIL back in the middle of the
         * call (its check for signals after EINTR), a wait the program
         * does not have untraced, which would show as more "waiting for
         * the GIL" than the program has (bench/recorder-measurements.md).
         */
        int behalf =
            fresh || (cpu != UINT64_MAX && !(call & EVP_SAMPLE_GIL_WAIT) &&
                      st->stale_periods * sampler.period_ns < STALE_MAX_NS);
        if (behalf &&
            !__atomic_exchange_n(&st->producer, 1, __ATOMIC_ACQUIRE)) {
            if (st->last_ok) {
                int keep = fresh && (st->last_state & EVP_SAMPLE_NO_GIL);
                uint32_t state = blocked_state(st->last_state, keep) | call;
                uint64_t w =
                    __atomic_exchange_n(&st->owed, 0, __ATOMIC_ACQ_REL);
                uint32_t weight = w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
                if (weight > 1)
                    bump(&st->ring.missed, weight - 1u);
                if (weight)
                    ring_put_sample(st, evp_rec_now(), state,
                                    keep ? st->last_unit1 : 0, weight,
                                    st->last_keys, st->last_depth);
                if (!fresh)
                    st->stale_periods += w;
                __atomic_store_n(&st->producer, 0, __ATOMIC_RELEASE);
                return;
            }
            /* it changed meanwhile: the thread is signalled instead */
            __atomic_store_n(&st->producer, 0, __ATOMIC_RELEASE);
        }
    }
    (void)send_tick(st);
}

/* Signal thread ST (no signal of the sampler thread's in flight to it,
 * sampler.mu held): its handler takes the periods owed.  0: not sent (the
 * thread is gone). */
static int send_tick(struct sthread *st)
{
    uint64_t sent = st->sent;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sampler.signo;
    si.si_code = SI_QUEUE;
    si.si_pid = sampler.pid;
    si.si_uid = getuid();
    si.si_value.sival_ptr = st;
    __atomic_store_n(&st->sent, sent + 1, __ATOMIC_RELEASE);
    if (syscall(SYS_rt_tgsigqueueinfo, sampler.pid, st->tid, sampler.signo,
                &si) == 0)
        return 1;
    __atomic_store_n(&st->sent, sent, __ATOMIC_RELEASE); /* gone */
    return 0;
}

/*
 * The sampler thread of the wall clock: every period (absolute
 * deadlines on CLOCK_MONOTONIC; a late wake-up counts the periods it
 * missed), each sampled thread is owed a period and looked at.
 */
/* EVALPROF_TEST_SAMPLE_NOP=3's tick of thread ST: its CPU clock and a
 * word it writes (its ring's head), read from the sampler thread; the
 * reads counted where the handled signals are. */
static void ticker_peek(struct sthread *st)
{
    if (st->has_cpu_id)
        (void)clock_ns(st->cpu_id);
    (void)__atomic_load_n(&st->ring.head, __ATOMIC_ACQUIRE);
    __atomic_store_n(&st->handled, st->handled + 1, __ATOMIC_RELAXED);
}

/*
 * The CPU clock's sampler thread (EVALPROF_SAMPLE_TIMER=thread): thread
 * ST is owed the periods of CPU time it used since its last sample
 * (its CPU clock, read from here), and sampled through on_peek once it
 * owes one or more and is running: a thread blocked in a call
 * (/proc/self/task/TID/syscall) used no CPU since it blocked, and its
 * owed periods wait for the next tick that finds it running, so that
 * they go to what it ran.  Nothing interrupts it.  The weight is every
 * period owed (those past the first counted as missed, as a signal's
 * overruns are); a peek that stores no sample (a walk that faulted, or
 * kept meeting a frame chain that changed under it) leaves them
 * unsampled.  A producer that cannot read the thread from outside now
 * (on_peek returns 1: its walk's fault guard was replaced) has the
 * thread sample itself: it is sent the signal, as the wall clock's
 * sampler thread sends it, and its handler takes every period owed;
 * while that signal is in flight the ring is the handler's, and the
 * periods the ticks find go to it.
 */
static void tick_peek(struct sthread *st)
{
    if (!st->ring.buf)
        return;
    uint64_t periods = peek_periods(st);
    if (periods <= st->periods_told)
        return;
    long nr;
    uintptr_t arg;
    if (thread_blocked(st, &nr, &arg))
        return;
    uint64_t w = periods - st->periods_told;
    st->periods_told = periods;
    if (__atomic_load_n(&st->done, __ATOMIC_ACQUIRE) != st->sent) {
        /* a signal in flight: its handler takes these too */
        __atomic_add_fetch(&st->owed, w, __ATOMIC_ACQ_REL);
        return;
    }
    uint32_t weight = w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
    void *cookie = __atomic_load_n(&st->peek_cookie, __ATOMIC_ACQUIRE);
    uint64_t puts = st->ring.puts;
    int rc = 0;
    if (cookie) {
        sampler.peeks++;
        __atomic_store_n(&peek_tls, st, __ATOMIC_RELAXED);
        rc = sampler.cfg.on_peek(cookie, weight);
        __atomic_store_n(&peek_tls, NULL, __ATOMIC_RELAXED);
    }
    if (rc == 1 && st->ring.puts == puts) {
        sampler.peek_signals++;
        __atomic_add_fetch(&st->owed, w, __ATOMIC_ACQ_REL);
        if (!send_tick(st))
            bump(&st->ring.unsampled,
                 __atomic_exchange_n(&st->owed, 0, __ATOMIC_ACQ_REL));
        return;
    }
    if (st->ring.puts == puts)
        bump(&st->ring.unsampled, weight);
    else if (weight > 1)
        bump(&st->ring.missed, weight - 1u);
}

static void *ticker_main(void *arg)
{
    (void)arg;
    /* A fault of on_peek's walk reaches the fault guard */
    unblock_faults();
    __atomic_store_n(&sampler.ticker_tid, evp_rec_gettid_(), __ATOMIC_RELAXED);
    pthread_mutex_lock(&sampler.mu);
    uint64_t ticks = sampler.ticks,
             t0 = evp_clock_mono_ns() - ticks * sampler.period_ns;
    pthread_mutex_unlock(&sampler.mu);
    while (!__atomic_load_n(&sampler.ticker_stop, __ATOMIC_ACQUIRE)) {
        uint64_t next = t0 + (ticks + 1) * sampler.period_ns;
        struct timespec ts = {(time_t)(next / 1000000000u),
                              (long)(next % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
               EINTR)
            ;
        if (__atomic_load_n(&sampler.ticker_stop, __ATOMIC_ACQUIRE))
            break;
        uint64_t due = (evp_clock_mono_ns() - t0) / sampler.period_ns;
        ticks = due > ticks ? due : ticks + 1;
        pthread_mutex_lock(&sampler.mu);
        sampler.ticks = ticks;
        for (struct sthread *st = sampler.threads; st; st = st->next)
            if (__atomic_load_n(&st->state, __ATOMIC_ACQUIRE) == ST_ACTIVE &&
                st->gen == sampler.gen) {
                if (sampler.nop == 3)
                    ticker_peek(st);
                else if (sampler.use_peek)
                    tick_peek(st);
                else
                    tick_thread(st);
            }
        pthread_mutex_unlock(&sampler.mu);
    }
    return NULL;
}

/* Start the sampler thread (sampler.mu held), every signal blocked in it. */
static int ticker_start(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    __atomic_store_n(&sampler.ticker_stop, 0, __ATOMIC_RELEASE);
    int rc = pthread_create(&sampler.ticker, NULL, ticker_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    sampler.has_ticker = rc == 0;
    return -rc;
}

/* The sampler thread stopped before a fork the program makes (it is
 * waited for until the kernel no longer counts it), and started again
 * after it (the source's pause and resume). */
static void ticker_pause(void)
{
    pthread_mutex_lock(&sampler.mu);
    if (!sampler.has_ticker) {
        pthread_mutex_unlock(&sampler.mu);
        return;
    }
    pthread_t th = sampler.ticker;
    sampler.has_ticker = 0;
    sampler.ticker_paused = 1;
    __atomic_store_n(&sampler.ticker_stop, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sampler.mu);
    pthread_join(th, NULL);
    char task[64];
    snprintf(task, sizeof task, "/proc/self/task/%d",
             __atomic_load_n(&sampler.ticker_tid, __ATOMIC_RELAXED));
    for (int i = 0; i < 2000 && access(task, F_OK) == 0; i++) {
        struct timespec pause = {0, 10000};
        nanosleep(&pause, NULL);
    }
}

/* 1 while the sampler thread runs (the source's threads). */
static int ticker_running(void)
{
    pthread_mutex_lock(&sampler.mu);
    int on = sampler.has_ticker;
    pthread_mutex_unlock(&sampler.mu);
    return on;
}

static int ticker_resume(void)
{
    int rc = 0;
    pthread_mutex_lock(&sampler.mu);
    if (sampler.ticker_paused && sampler.running && !sampler.has_ticker &&
        !__atomic_load_n(&sampler.stopping, __ATOMIC_RELAXED))
        rc = ticker_start();
    sampler.ticker_paused = 0;
    pthread_mutex_unlock(&sampler.mu);
    return rc;
}

/* ---- the sampler --------------------------------------------------------- */

static void signal_name(int signo, char *buf, size_t len)
{
    if (signo >= SIGRTMIN && signo <= SIGRTMAX)
        snprintf(buf, len, "SIGRTMIN+%d", signo - SIGRTMIN);
    else if (sigabbrev_np(signo))
        snprintf(buf, len, "SIG%s", sigabbrev_np(signo));
    else
        snprintf(buf, len, "%d", signo);
}

static const struct evp_rec_source sampler_source;

int evp_rec_sampler_start(const struct evp_rec_sample_config *cfg)
{
    if (!cfg || !cfg->on_sample)
        return -EINVAL;
    struct evp_rec_sample_config c = *cfg;
    if (!c.rate_hz)
        c.rate_hz = EVP_SAMPLE_RATE_DEFAULT;
    if (!c.signo)
        c.signo = SIGRTMIN + 4;
    if (!c.ring_kb)
        c.ring_kb = DEFAULT_RING_KB;
    if (!c.max_depth)
        c.max_depth = EVP_SAMPLE_MAX_DEPTH;
    if (c.rate_hz > EVP_SAMPLE_RATE_MAX || c.signo < 1 || c.signo > SIGRTMAX ||
        c.signo == SIGKILL || c.signo == SIGSTOP || c.ring_kb > MAX_RING_KB ||
        c.max_depth > EVP_SAMPLE_DEPTH_LIMIT)
        return -EINVAL;
    if (c.ring_kb < MIN_RING_KB)
        c.ring_kb = MIN_RING_KB;
    uint64_t bytes = 1024;
    while (bytes < (uint64_t)c.ring_kb * 1024u)
        bytes <<= 1;
    c.ring_kb = (uint32_t)(bytes / 1024u);
    if (!evp_rec_is_open())
        return -ENOTCONN;
    pthread_once(&key_once, key_init);
    int src = evp_rec_source_add(&sampler_source);
    if (src < 0)
        return src;

    pthread_mutex_lock(&sampler.mu);
    if (sampler.running) {
        pthread_mutex_unlock(&sampler.mu);
        return -EBUSY;
    }
    sampler.cfg = c;
    sampler.signo = c.signo;
    sampler.period_ns = 1000000000u / c.rate_hz;
    const char *nop = getenv("EVALPROF_TEST_SAMPLE_NOP");
    sampler.nop = 0;
    if (nop && nop[0] >= '1' && nop[0] <= '3' && nop[1] == '\0')
        sampler.nop = nop[0] - '0';
    const char *timer = getenv("EVALPROF_SAMPLE_TIMER");
    sampler.use_peek = c.cpu_clock && c.on_peek && sampler.nop != 3 && timer &&
                       strcmp(timer, "thread") == 0;
    sampler.use_perf = c.cpu_clock && sampler.nop != 3 && !sampler.use_peek &&
                       perf_usable(c.signo, sampler.period_ns, timer);
    sampler.use_trap =
        sampler.use_perf && trap_usable(sampler.period_ns, timer);
    if (sampler.use_trap && trap_install() != 0)
        sampler.use_trap = 0;
    sampler.use_ticker = sampler.nop == 3 || sampler.use_peek ||
                         (!c.cpu_clock && wall_ticker_wanted());
    sampler.budget_ns = sampler.period_ns / 10 > BUDGET_MIN_NS
                            ? sampler.period_ns / 10
                            : BUDGET_MIN_NS;
    sampler.pid = getpid();
    sampler.ticks = 0;
    sampler.ring_bytes = bytes;
    sampler.started_ns = evp_clock_mono_ns();
    sampler.round_ns = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = evp_sample_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, c.signo); /* handlers of a thread never nest */
    if (sigaction(c.signo, &sa, &sampler.old) != 0) {
        int rc = -errno;
        pthread_mutex_unlock(&sampler.mu);
        return rc;
    }
    if (!sampler.used) /* the session's first sampler: its own figures */
        sampler.samples = sampler.dropped = sampler.missed =
            sampler.funcs_lost = sampler.threads_started =
                sampler.trap_retaken = sampler.stacks = sampler.throttled =
                    sampler.throttled_max_ns = sampler.unsampled =
                        sampler.signals = sampler.short_ticks =
                            sampler.long_signals = sampler.nop_signals =
                                sampler.peeks = sampler.sampler_cpu_ns =
                                    sampler.peek_signals = 0;
    sampler.long_ticks = (uint64_t)(evp_rec_hz_() * HANDLER_LONG_NS / 1e9);
    sampler.gen++;
    __atomic_store_n(&sampler.stopping, 0, __ATOMIC_SEQ_CST);
    sampler.ticker_paused = 0;
    if (sampler.use_ticker) {
        int rc = ticker_start();
        if (rc != 0) {
            sigaction(c.signo, &sampler.old, NULL);
            pthread_mutex_unlock(&sampler.mu);
            return rc;
        }
    }
    sampler.running = 1;
    sampler.used = 1;
    __atomic_store_n(&sampler.poll_ms, POLL_MS, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&sampler.mu);

    char v[64];
    evp_rec_meta("sample.clock", c.cpu_clock ? "cpu" : "wall");
    snprintf(v, sizeof v, "%u", c.rate_hz);
    evp_rec_meta("sample.rate_hz", v);
    snprintf(v, sizeof v, "%llu", (unsigned long long)sampler.period_ns);
    evp_rec_meta("sample.period_ns", v);
    signal_name(sampler.use_trap ? SIGTRAP : c.signo, v, sizeof v);
    evp_rec_meta("sample.signal", sampler.use_peek ? "none" : v);
    evp_rec_meta(
        "sample.sampler",
        sampler.use_trap   ? "perf_event_open task-clock, sigtrap (SIGTRAP "
                             "to the thread as task work)"
        : sampler.use_perf ? "perf_event_open task-clock, F_SETSIG to the "
                             "thread"
        : sampler.nop == 3 ? "sampler thread: each thread's CPU clock "
                             "read, nothing sent (EVALPROF_TEST_SAMPLE_NOP)"
        : sampler.use_peek
            ? "sampler thread: each running thread's frames read "
              "from outside it, every period of its CPU time, no "
              "signal (EVALPROF_SAMPLE_TIMER=thread)"
        : sampler.use_ticker
            ? "sampler thread: rt_tgsigqueueinfo to a thread "
              "running, or past its CPU budget and waiting for "
              "its GIL or blocked 50 ms, else a sample on its "
              "behalf (/proc/self/task/TID/syscall)"
            : "timer_create SIGEV_THREAD_ID");
    if (sampler.use_ticker && !sampler.use_peek && sampler.nop != 3) {
        snprintf(v, sizeof v, "%llu", (unsigned long long)sampler.budget_ns);
        evp_rec_meta("sample.cpu_budget_ns", v);
    }
#if defined(__x86_64__) && defined(__linux__)
    if (c.tells_blocked)
        evp_rec_meta("sample.blocked", "gil-futex syscall");
#endif
    snprintf(v, sizeof v, "%u", c.max_depth);
    evp_rec_meta("sample.max_depth", v);
    snprintf(v, sizeof v, "%u", c.ring_kb);
    evp_rec_meta("sample.ring_kb", v);
    return 0;
}

void evp_rec_sampler_stop(void)
{
    pthread_mutex_lock(&sampler.mu);
    if (!sampler.running) {
        pthread_mutex_unlock(&sampler.mu);
        return;
    }
    __atomic_store_n(&sampler.stopping, 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (sampler.has_ticker) {
        /* No tick after this: it takes sampler.mu for each. */
        pthread_t th = sampler.ticker;
        clockid_t cpu;
        if (sampler.use_peek && pthread_getcpuclockid(th, &cpu) == 0) {
            uint64_t ns = clock_ns(cpu);
            if (ns != UINT64_MAX)
                sampler.sampler_cpu_ns += ns;
        }
        sampler.has_ticker = 0;
        __atomic_store_n(&sampler.ticker_stop, 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&sampler.mu);
        pthread_join(th, NULL);
        pthread_mutex_lock(&sampler.mu);
    }
    for (struct sthread *st = sampler.threads; st; st = st->next) {
        if (__atomic_load_n(&st->state, __ATOMIC_ACQUIRE) != ST_ACTIVE)
            continue;
        clock_stop(st);
    }
    /* Handlers already past the flag finish their sample. */
    for (struct sthread *st = sampler.threads; st; st = st->next) {
        if (__atomic_load_n(&st->state, __ATOMIC_ACQUIRE) != ST_ACTIVE)
            continue;
        while (__atomic_load_n(&st->busy, __ATOMIC_ACQUIRE))
            sched_yield();
        __atomic_store_n(&st->state, ST_STOPPED, __ATOMIC_RELEASE);
    }
    /* SIG_IGN discards the timer signals still pending, in every thread,
     * before the old disposition (maybe SIG_DFL: terminate) is back. */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(sampler.signo, &ign, NULL);
    sigaction(sampler.signo, &sampler.old, NULL);
    sampler.running = 0;
    __atomic_store_n(&sampler.poll_ms, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&sampler.mu);
}

void evp_rec_sample_get_stats(struct evp_rec_sample_stats *s)
{
    pthread_mutex_lock(&sampler.mu);
    s->samples = sampler.samples;
    s->dropped = sampler.dropped;
    s->missed = sampler.missed;
    s->threads = sampler.threads_started;
    s->stacks = sampler.stacks;
    for (struct sthread *st = sampler.threads; st; st = st->next) {
        if (__atomic_load_n(&st->state, __ATOMIC_ACQUIRE) == ST_FREE)
            continue;
        s->samples += __atomic_load_n(&st->ring.samples, __ATOMIC_RELAXED);
        s->dropped += __atomic_load_n(&st->ring.dropped, __ATOMIC_RELAXED);
        s->missed += __atomic_load_n(&st->ring.missed, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&sampler.mu);
}

/* ---- the writer's half --------------------------------------------------- */

struct func_key {
    const char *name, *file;
    size_t namelen, filelen;
    uint32_t line;
};

static int same_func(const void *ctx, uint32_t i)
{
    const struct func_key *k = ctx;
    const struct gfunc *f = &sampler.funcs[i];
    return f->line == k->line && f->namelen == k->namelen &&
           f->filelen == k->filelen &&
           memcmp(f->name, k->name, k->namelen) == 0 &&
           memcmp(f->file, k->file, k->filelen) == 0;
}

static char *copy_str(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

/* The global function of (name, file, line), registered when new; NULL
 * when out of memory. */
static struct gfunc *func_get(struct evp_rec_round *round,
                              const struct func_key *k)
{
    uint64_t h = evp_itab_hash_bytes(k->name, k->namelen) * 31 ^
                 evp_itab_hash_bytes(k->file, k->filelen) ^
                 evp_itab_hash_u64(k->line);
    h = h ? h : 1;
    uint32_t i = evp_itab_find(&sampler.func_index, h, same_func, k);
    if (i != EVP_ITAB_NONE)
        return &sampler.funcs[i];
    if (evp_grow((void **)&sampler.funcs, &sampler.funcs_cap,
                 sampler.nfuncs + 1, sizeof *sampler.funcs, 64) < 0)
        return NULL;
    struct gfunc *f = &sampler.funcs[sampler.nfuncs];
    memset(f, 0, sizeof *f);
    f->name = copy_str(k->name, k->namelen);
    f->file = copy_str(k->file, k->filelen);
    f->namelen = k->namelen;
    f->filelen = k->filelen;
    f->line = k->line;
    if (f->name && f->file)
        f->id = evp_rec_round_func(round, f->name, f->file, f->line);
    if (!f->id ||
        evp_itab_put(&sampler.func_index, h, (uint32_t)sampler.nfuncs) < 0) {
        free(f->name);
        free(f->file);
        return NULL;
    }
    sampler.nfuncs++;
    return f;
}

/* The placeholder of a key whose function record was lost. */
static uint32_t unknown_func(struct evp_rec_round *round)
{
    if (!sampler.unknown) {
        struct func_key k = {"<unknown>", "", 9, 0, 0};
        struct gfunc *f = func_get(round, &k);
        sampler.unknown = f ? f->id : 0;
    }
    return sampler.unknown;
}

struct key_probe {
    const struct sthread *st;
    uint32_t key;
};

static int same_key(const void *ctx, uint32_t i)
{
    const struct key_probe *p = ctx;
    return p->st->keys[i].key == p->key;
}

static struct keyent *key_find(struct sthread *st, uint32_t key)
{
    struct key_probe p = {st, key};
    uint32_t i =
        evp_itab_find(&st->key_index, evp_itab_hash_u64(key), same_key, &p);
    return i == EVP_ITAB_NONE ? NULL : &st->keys[i];
}

static void key_set(struct sthread *st, uint32_t key, uint32_t func)
{
    struct keyent *e = key_find(st, key);
    if (e) {
        e->func = func;
        return;
    }
    if (!func ||
        evp_grow((void **)&st->keys, &st->keys_cap, st->nkeys + 1,
                 sizeof *st->keys, 64) < 0 ||
        evp_itab_put(&st->key_index, evp_itab_hash_u64(key),
                     (uint32_t)st->nkeys) < 0)
        return; /* unknown, as if lost */
    st->keys[st->nkeys++] = (struct keyent){key, func};
}

static int same_node(const void *ctx, uint32_t i)
{
    const struct node *n = ctx;
    return sampler.nodes[i].parent == n->parent &&
           sampler.nodes[i].func == n->func;
}

/* The node of FUNC called from PARENT (0: the outermost), added when new;
 * 0 when out of memory. */
static uint32_t node_get(uint32_t parent, uint32_t func)
{
    struct node n = {parent, func};
    uint64_t h = evp_itab_hash_u64((uint64_t)parent << 32 | func);
    uint32_t i = evp_itab_find(&sampler.node_index, h, same_node, &n);
    if (i != EVP_ITAB_NONE)
        return i + 1;
    if (evp_grow((void **)&sampler.nodes, &sampler.nodes_cap,
                 sampler.nnodes + 1, sizeof *sampler.nodes, 1024) < 0 ||
        evp_itab_put(&sampler.node_index, h, (uint32_t)sampler.nnodes) < 0)
        return 0;
    sampler.nodes[sampler.nnodes++] = n;
    return (uint32_t)sampler.nnodes;
}

static void lines_range(void *ctx, long unit, long line)
{
    evp_rec_lines_add(ctx, unit, line);
}

static void on_func_record(struct evp_rec_round *round, struct sthread *st,
                           const uint8_t *b, uint32_t len, unsigned lt_format)
{
    uint32_t f[5];
    if (len < HDR + FUNC_FIXED)
        return;
    memcpy(f, b + HDR, sizeof f);
    uint64_t need = (uint64_t)HDR + FUNC_FIXED + f[2] + f[3] + f[4];
    if (!f[0] || need > len)
        return;
    const char *name = (const char *)b + HDR + FUNC_FIXED;
    struct func_key k = {name, name + f[2], f[2], f[3], f[1]};
    struct gfunc *g = func_get(round, &k);
    key_set(st, f[0], g ? g->id : 0);
    if (!g || g->has_lines || lt_format != EVP_LT_CPYTHON311 || !f[4])
        return;
    const uint8_t *table = (const uint8_t *)k.file + f[3];
    struct evp_rec_lines l = EVP_REC_LINES_INIT;
    g->has_lines = 1;
    if (evp_rec_lt311_decode(table, f[4], (long)g->line, lines_range, &l) ==
        0) {
        evp_rec_round_lines(round, &l, g->id);
    } else { /* a malformed table gives no lines */
        free(l.buf);
    }
}

static void on_lost_record(struct sthread *st, const uint8_t *b, uint32_t len,
                           unsigned all)
{
    if (all) {
        for (size_t i = 0; i < st->nkeys; i++)
            st->keys[i].func = 0;
        return;
    }
    for (uint32_t off = HDR; off + 4 <= len; off += 4) {
        uint32_t key;
        memcpy(&key, b + off, 4);
        struct keyent *e = key ? key_find(st, key) : NULL;
        if (e)
            e->func = 0;
    }
}

static void on_sample_record(struct evp_rec_round *round, struct sthread *st,
                             const uint8_t *b, uint32_t len, unsigned depth)
{
    struct {
        uint64_t ts;
        uint32_t state, unit1, weight;
    } __attribute__((packed)) s;
    if (len < HDR + SAMPLE_FIXED + 4u * depth || depth > EVP_SAMPLE_DEPTH_LIMIT)
        return;
    memcpy(&s, b + HDR, SAMPLE_FIXED);
    const uint8_t *keys = b + HDR + SAMPLE_FIXED;
    uint32_t node = 0;
    /* Root to leaf: keys are stored leaf first. */
    for (unsigned i = depth; i-- > 0;) {
        uint32_t key;
        memcpy(&key, keys + 4u * i, 4);
        struct keyent *e = key_find(st, key);
        uint32_t func = e && e->func ? e->func : unknown_func(round);
        uint32_t n = func ? node_get(node, func) : 0;
        if (!n)
            break; /* out of memory: the stack ends here */
        node = n;
    }
    if (evp_grow((void **)&st->batch, &st->batch_cap, st->nbatch + 1,
                 sizeof *st->batch, 256) < 0) {
        st->unbatched++; /* counted as dropped in the next chunk */
        return;
    }
    st->batch[st->nbatch++] = (struct evp_sample_rec){
        s.ts, node, s.state | (depth ? 0 : EVP_SAMPLE_NO_FRAME), s.unit1,
        s.weight};
}

/* Read every record ST's ring holds, in order. */
static void drain(struct evp_rec_round *round, struct sthread *st)
{
    struct ring *r = &st->ring;
    if (!r->buf)
        return;
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    uint64_t pos = r->tail;
    while (pos < head) {
        uint32_t h[2];
        ring_copy_out(r, pos, h, sizeof h);
        uint32_t len = h[0];
        if (len < HDR || len % 8 || len > head - pos) {
            pos = head; /* cannot happen: the ring is ours alone */
            break;
        }
        if (evp_grow((void **)&sampler.scratch, &sampler.scratch_cap, len, 1,
                     4096) < 0) {
            pos += len;
            continue;
        }
        ring_copy_out(r, pos, sampler.scratch, len);
        unsigned type = h[1] & 0xffff, extra = h[1] >> 16;
        if (type == REC_SAMPLE)
            on_sample_record(round, st, sampler.scratch, len, extra);
        else if (type == REC_FUNC)
            on_func_record(round, st, sampler.scratch, len, extra);
        else if (type == REC_LOST)
            on_lost_record(st, sampler.scratch, len, extra);
        pos += len;
    }
    __atomic_store_n(&r->tail, pos, __ATOMIC_RELEASE);
}

/* The nodes made since the last STACKS chunk, as one. */
static void queue_stacks(struct evp_rec_round *round)
{
    size_t n = sampler.nnodes - sampler.nodes_written;
    if (!n)
        return;
    size_t bound = EVP_VARINT_MAX + n * 3 * EVP_VARINT_MAX;
    if (evp_grow((void **)&sampler.out, &sampler.out_cap, bound, 1, bound) < 0)
        return;
    size_t k = evp_varint_put(sampler.out, n);
    for (size_t i = sampler.nodes_written; i < sampler.nnodes; i++)
        k +=
            evp_stack_entry_put(sampler.out + k, (uint32_t)i + 1,
                                sampler.nodes[i].parent, sampler.nodes[i].func);
    if (evp_rec_round_chunk(round, EVP_CHUNK_STACKS, sampler.out, k, 1) == 0) {
        sampler.stacks += n;
        sampler.nodes_written = sampler.nnodes;
    }
}

/* ST's batch, and the count of samples its ring dropped, as SAMPLES
 * chunks of its stream. */
static void queue_samples(struct evp_rec_round *round, struct sthread *st)
{
    uint64_t dropped =
        __atomic_load_n(&st->ring.dropped, __ATOMIC_RELAXED) + st->unbatched;
    size_t done = 0;
    if (st->nbatch == 0 && dropped == st->dropped_told)
        return;
    size_t had = sampler.seq_cap;
    if (evp_grow((void **)&sampler.seq_of, &sampler.seq_cap,
                 (size_t)st->stream + 1, sizeof *sampler.seq_of, 64) < 0) {
        st->unbatched += st->nbatch;
        st->nbatch = 0;
        return;
    }
    memset(sampler.seq_of + had, 0,
           (sampler.seq_cap - had) * sizeof *sampler.seq_of);
    while (done < st->nbatch || dropped != st->dropped_told) {
        size_t n = st->nbatch - done;
        if (n > CHUNK_SAMPLES)
            n = CHUNK_SAMPLES;
        size_t bound = evp_samples_bound(n);
        if (evp_grow((void **)&sampler.out, &sampler.out_cap, bound, 1, bound) <
            0)
            break;
        struct evp_events_prefix pf = {0};
        uint64_t lost = dropped - st->dropped_told;
        pf.stream = st->stream;
        pf.seq = sampler.seq_of[st->stream];
        pf.dropped = lost > UINT32_MAX ? UINT32_MAX : (uint32_t)lost;
        evp_clock_pair(evp_rec_use_tsc_, &pf.sync_ticks, &pf.sync_ns);
        pf.base_ticks = pf.sync_ticks;
        size_t len =
            evp_samples_encode(sampler.out, &pf, st->batch + done, n, NULL);
        if (evp_rec_round_chunk(round, EVP_CHUNK_SAMPLES, sampler.out, len, 1) <
            0)
            break;
        sampler.seq_of[st->stream]++;
        st->dropped_told += pf.dropped;
        done += n;
    }
    st->nbatch = 0;
}

/* Forget the session's functions and stacks (a new file starts anew). */
static void forget_tables(void)
{
    for (size_t i = 0; i < sampler.nfuncs; i++) {
        free(sampler.funcs[i].name);
        free(sampler.funcs[i].file);
    }
    sampler.nfuncs = 0;
    evp_itab_clear(&sampler.func_index);
    sampler.unknown = 0;
    sampler.nnodes = sampler.nodes_written = 0;
    evp_itab_clear(&sampler.node_index);
    if (sampler.seq_of)
        memset(sampler.seq_of, 0, sampler.seq_cap * sizeof *sampler.seq_of);
}

/* Is signal SIG blocked in thread TID (/proc/self/task/TID/status
 * SigBlk)?  Not known: 0. */
static int thread_blocks(int tid, int sig)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    unsigned long long mask = 0;
    if (!proc_line(path, "SigBlk:", line, sizeof line) ||
        sscanf(line, "SigBlk: %llx", &mask) != 1)
        return 0;
    return (mask >> (sig - 1)) & 1;
}

/*
 * The CPU clock's guard against a rate the machine cannot take (the
 * writer, every round; sampler.mu held).  Each signal costs the thread CPU
 * time, which its own clock counts: once a signal's delivery and handler
 * cost more than a period, the next period has passed when the handler
 * returns, and the thread runs little but its samples
 * (bench/recorder-measurements.md, "A rate the machine cannot take").
 * The writer looks at each thread's CPU time since its last look (5 ms
 * and 50 periods of it at least, so that a period more or less is not a
 * fifth).  When fewer than four in five of its periods had a signal
 * handled (a thread that keeps up has nearly all), the thread
 * does not block the signal (a thread that blocks it is sampled when it
 * unblocks, the sample weighing the periods held back), and the
 * signals' cost can be why:
 *
 *   - the period is under THROTTLE_FROM_NS (there the kernel's part of a
 *     signal, which no handler sees, can be a large share of it), or
 *   - the handlers themselves took a quarter of the thread's CPU time
 *     since the last look (their time, st->handler_ticks, is measured);
 *
 * the event's period is doubled (PERF_EVENT_IOC_PERIOD), as perf lowers
 * its own rate when its interrupts take too long, up to 10 ms.  A longer
 * period whose cheap signals are lost loses them to the machine (a vCPU
 * descheduled while its timer was due), and a longer one would lose
 * them too: it is left alone, the lost periods in the weights.  The
 * weights stay periods of the rate asked for, so a throttled thread's
 * samples each weigh the periods between them (missed ones); the trace
 * says how often and how far (sample.throttled,
 * sample.throttled_max_ns).
 */
#define THROTTLE_FROM_NS 250000ull /* 4 kHz and faster */

/* Returns 1 when the thread's signals fell short of its periods since
 * the last look (raised or not), else 0. */
static int perf_throttle(struct sthread *st)
{
    uint64_t cpu = clock_ns(st->cpu_id);
    uint64_t handled = __atomic_load_n(&st->handled, __ATOMIC_RELAXED);
    uint64_t ticks = __atomic_load_n(&st->handler_ticks, __ATOMIC_RELAXED);
    uint64_t window = 50 * st->event_ns;
    if (window < 5 * 1000000ull)
        window = 5 * 1000000ull;
    if (cpu == UINT64_MAX || cpu < st->watch_cpu ||
        cpu - st->watch_cpu < window)
        return 0;
    uint64_t ran = cpu - st->watch_cpu;
    uint64_t got = handled - st->watch_handled;
    double hz = evp_rec_hz_();
    double in_handlers =
        hz > 0 ? (double)(ticks - st->watch_ticks) * 1e9 / hz : 0.0;
    st->watch_cpu = cpu;
    st->watch_handled = handled;
    st->watch_ticks = ticks;
    if (got * st->event_ns * 5 >= ran * 4)
        return 0;
    if (st->event_ns * 2 > 10 * 1000000ull ||
        (st->event_ns >= THROTTLE_FROM_NS && in_handlers * 4 < (double)ran))
        return 1;
    /* the signal blocked by the program, not by the handler's own mask
     * (a thread whose handlers run back to back is in one most of the
     * time): no handler in flight before nor after the look */
    unsigned busy = __atomic_load_n(&st->busy, __ATOMIC_ACQUIRE);
    if (thread_blocks(st->tid, sampler.use_trap ? SIGTRAP : sampler.signo) &&
        (busy | __atomic_load_n(&st->busy, __ATOMIC_ACQUIRE)) == 0)
        return 1;
    uint64_t p = st->event_ns * 2;
    if (ioctl(st->perf_fd, PERF_EVENT_IOC_PERIOD, &p) != 0)
        return 1;
    st->event_ns = p;
    sampler.throttled++;
    if (p > sampler.throttled_max_ns)
        sampler.throttled_max_ns = p;
    return 1;
}

/*
 * The writer's pace while sampling (evp_rec_sample_poll_ms_): a round
 * every POLL_MS, every POLL_FAST_MS while a ring fills by a quarter from
 * one round to the next, and every POLL_IDLE_MS once nothing asks for
 * more: the sampler has run a second, no perf event's period is under
 * THROTTLE_FROM_NS nor did its signals fall short of its periods at the
 * last look (perf_throttle wants its looks), and a ring not yet faulted
 * in whole fills by no more than half of POPULATE_AHEAD a round.  Each
 * round costs the writer a wake-up and a write; at 200 ms a killed
 * program loses at most what exact mode's 200 ms rounds lose, and a
 * SIGTRAP handler of the program's is in front of evalprof's that long.
 */
static unsigned poll_pace(int fast, int busy, uint64_t grew_max)
{
    uint64_t now = evp_clock_mono_ns(), last = sampler.round_ns;
    sampler.round_ns = now;
    if (fast)
        return POLL_FAST_MS;
    if (busy || now - sampler.started_ns < 1000000000u)
        return POLL_MS;
    if (!grew_max)
        return POLL_IDLE_MS;
    if (!last || now <= last)
        return POLL_MS;
    /* the bytes a ring grew by a millisecond of the last round */
    uint64_t per_ms = grew_max * 1000000u / (now - last) + 1;
    uint64_t fit = (POPULATE_AHEAD / 2) / per_ms;
    return fit >= POLL_IDLE_MS ? POLL_IDLE_MS
           : fit <= POLL_MS    ? POLL_MS
                               : (unsigned)fit;
}

/*
 * The writer round's sampling part (the session's collect; its lock
 * held): drain every ring, register new functions and their line tables,
 * queue the STACKS chunk of new nodes and each thread's SAMPLES chunk,
 * free the rings of stopped threads.  FINAL (the close's last round):
 * also record the closing figures (sample.missed ...) and forget the
 * session's functions and stacks.
 */
static void collect(struct evp_rec_round *round, int final)
{
    pthread_mutex_lock(&sampler.mu);
    if (!sampler.used) {
        pthread_mutex_unlock(&sampler.mu);
        return;
    }
    int fast = 0, busy = 0;
    uint64_t grew_max = 0;
    trap_guard();
    for (struct sthread *st = sampler.threads; st; st = st->next) {
        int state = __atomic_load_n(&st->state, __ATOMIC_ACQUIRE);
        if (state == ST_FREE)
            continue;
        if (sampler.running && state == ST_ACTIVE && st->perf_fd >= 0 &&
            st->has_cpu_id) {
            busy |= perf_throttle(st);
            busy |= st->event_ns < THROTTLE_FROM_NS;
        }
        struct ring *r = &st->ring;
        uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
        uint64_t held = head - r->tail;
        fast |= r->buf && held * 4 >= r->size;
        if (r->buf && r->populated < r->size && head - r->seen > grew_max)
            grew_max = head - r->seen;
        r->seen = head;
        if (state == ST_ACTIVE && head > 0)
            ring_populate(r, head + POPULATE_AHEAD);
        drain(round, st);
    }
    if (sampler.running)
        __atomic_store_n(&sampler.poll_ms, poll_pace(fast, busy, grew_max),
                         __ATOMIC_RELAXED);
    /* Functions, then the stacks that name them, then the samples. */
    evp_rec_round_funcs(round);
    queue_stacks(round);
    for (struct sthread *st = sampler.threads; st; st = st->next) {
        int state = __atomic_load_n(&st->state, __ATOMIC_ACQUIRE);
        if (state == ST_FREE)
            continue;
        queue_samples(round, st);
        if (state == ST_STOPPED)
            thread_release(st);
    }
    if (final) {
        uint64_t missed = sampler.missed, lost = sampler.funcs_lost;
        uint64_t unsampled = sampler.unsampled;
        uint64_t signals = sampler.signals, ticks = sampler.short_ticks;
        uint64_t slow = sampler.long_signals;
        for (struct sthread *st = sampler.threads; st; st = st->next) {
            if (__atomic_load_n(&st->state, __ATOMIC_ACQUIRE) != ST_FREE) {
                missed += st->ring.missed;
                unsampled += st->ring.unsampled;
                lost += st->ring.funcs_lost;
                signals += __atomic_load_n(&st->signals, __ATOMIC_RELAXED);
                ticks += __atomic_load_n(&st->short_ticks, __ATOMIC_RELAXED);
                slow += __atomic_load_n(&st->long_signals, __ATOMIC_RELAXED);
            }
        }
        evp_rec_round_meta_u64(round, "sample.missed", missed);
        /* evalprof's own part of the sampling, as the handlers timed it
         * (the kernel's delivery of each signal is not in it) */
        double hz = evp_rec_hz_();
        evp_rec_round_meta_u64(round, "sample.signals", signals);
        evp_rec_round_meta_u64(
            round, "sample.handler_ns",
            (uint64_t)(hz > 0 ? (double)ticks * 1e9 / hz : 0));
        evp_rec_round_meta_u64(round, "sample.handler_long", slow);
        if (unsampled)
            evp_rec_round_meta_u64(round, "sample.unsampled", unsampled);
        if (lost)
            evp_rec_round_meta_u64(round, "sample.funcs_lost", lost);
        if (sampler.nop) {
            uint64_t handled = sampler.nop_signals;
            for (struct sthread *st = sampler.threads; st; st = st->next)
                if (__atomic_load_n(&st->state, __ATOMIC_ACQUIRE) != ST_FREE)
                    handled += __atomic_load_n(&st->handled, __ATOMIC_RELAXED);
            evp_rec_round_meta_u64(round, "sample.nop_signals", handled);
            evp_rec_round_meta(round, "sample.nop",
                               sampler.nop == 3   ? "sampler thread"
                               : sampler.nop == 2 ? "interrupts"
                                                  : "signals");
        }
        if (sampler.use_peek) {
            evp_rec_round_meta_u64(round, "sample.peeks", sampler.peeks);
            evp_rec_round_meta_u64(round, "sample.sampler_cpu_ns",
                                   sampler.sampler_cpu_ns);
            if (sampler.peek_signals)
                evp_rec_round_meta_u64(round, "sample.peek_signals",
                                       sampler.peek_signals);
        }
        if (sampler.trap_retaken)
            evp_rec_round_meta_u64(round, "sample.sigtrap_retaken",
                                   sampler.trap_retaken);
        if (sampler.throttled) {
            evp_rec_round_meta_u64(round, "sample.throttled",
                                   sampler.throttled);
            evp_rec_round_meta_u64(round, "sample.throttled_max_ns",
                                   sampler.throttled_max_ns);
        }
        forget_tables();
        sampler.used =
            sampler.running; /* a sampler left running samples no more */
    }
    pthread_mutex_unlock(&sampler.mu);
}

unsigned evp_rec_sample_poll_ms_(void)
{
    return __atomic_load_n(&sampler.poll_ms, __ATOMIC_RELAXED);
}

/* What a following child starts again (fork_child keeps it). */
static struct {
    int sampler; /* the parent's sampler ran */
    int thread;  /* and sampled the forking thread */
    struct evp_rec_sample_config cfg;
} after_fork;

/* Around fork(): the sampler's lock is held across it (after the
 * session's), so that the child finds the sampler's state whole; the
 * parent releases it, and the child in fork_child. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&sampler.mu);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&sampler.mu);
}

/* In a forked child, first of all: no sampling, the parent's rings and
 * tables forgotten. */
static void fork_child(void)
{
    struct sthread *me = __atomic_load_n(&sample_tls, __ATOMIC_RELAXED);
    after_fork.sampler = sampler.running &&
                         !__atomic_load_n(&sampler.stopping, __ATOMIC_RELAXED);
    after_fork.thread =
        after_fork.sampler && me && me->owner == (void *)&sample_tls &&
        __atomic_load_n(&me->state, __ATOMIC_RELAXED) == ST_ACTIVE &&
        me->gen == sampler.gen;
    after_fork.cfg = sampler.cfg;
    /* fork_prepare's lock, taken by this thread: released, not
     * initialised again (another thread may have held it) */
    pthread_mutex_unlock(&sampler.mu);
    __atomic_store_n(&sample_tls, NULL, __ATOMIC_RELAXED);
    if (sampler.running)
        sigaction(sampler.signo, &sampler.old, NULL);
    /* The parent's perf events: their descriptors, not the events, are
     * the child's (they signal the parent's threads). */
    for (struct sthread *st = sampler.threads; st; st = st->next)
        if (__atomic_load_n(&st->state, __ATOMIC_RELAXED) == ST_ACTIVE &&
            st->perf_fd >= 0)
            close(st->perf_fd);
    for (struct sthread *st = sampler.threads; st; st = st->next)
        if (__atomic_load_n(&st->state, __ATOMIC_RELAXED) == ST_ACTIVE &&
            st->sys_fd >= 0)
            close(st->sys_fd);
    sampler.has_ticker = sampler.ticker_paused = 0; /* (not the child's) */
    sampler.running = 0;
    sampler.used = 0;
    sampler.poll_ms = 0;
    /* The parent's rings, threads and tables stay where they are. */
    sampler.threads = NULL;
    sampler.funcs = NULL;
    sampler.nfuncs = sampler.funcs_cap = 0;
    sampler.func_index = (struct evp_itab)EVP_ITAB_INIT;
    sampler.unknown = 0;
    sampler.nodes = NULL;
    sampler.nnodes = sampler.nodes_cap = sampler.nodes_written = 0;
    sampler.node_index = (struct evp_itab)EVP_ITAB_INIT;
    sampler.seq_of = NULL;
    sampler.seq_cap = 0;
    sampler.scratch = sampler.out = NULL;
    sampler.scratch_cap = sampler.out_cap = 0;
    sampler.samples = sampler.dropped = sampler.missed = sampler.funcs_lost =
        sampler.threads_started = sampler.trap_retaken = sampler.stacks =
            sampler.throttled = sampler.throttled_max_ns = sampler.unsampled =
                sampler.signals = sampler.short_ticks = sampler.long_signals =
                    sampler.nop_signals = 0;
}

/* In a child that follows the fork, once its trace is started: the
 * parent's sampler again, and the forking thread sampled if it was. */
static int fork_follow(void)
{
    if (!after_fork.sampler)
        return 0;
    after_fork.sampler = 0;
    if (after_fork.cfg.on_fork_child)
        after_fork.cfg.on_fork_child();
    int rc = evp_rec_sampler_start(&after_fork.cfg);
    if (rc == 0 && after_fork.thread)
        rc = evp_rec_sample_thread_start(NULL);
    return rc;
}

/* The sampler as the session sees it: one of its chunk sources. */
static const struct evp_rec_source sampler_source = {
    .collect = collect,
    .poll_ms = evp_rec_sample_poll_ms_,
    .stop = evp_rec_sampler_stop,
    .threads = ticker_running,
    .pause = ticker_pause,
    .resume = ticker_resume,
    .fork_prepare = fork_prepare,
    .fork_parent = fork_parent,
    .fork_child = fork_child,
    .fork_follow = fork_follow,
};
