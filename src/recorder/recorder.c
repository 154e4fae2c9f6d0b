/*
 * The recorder session: per-thread buffers, the writer thread, metadata,
 * the function table, fork and exit handling.
 *
 * Threads store records into their own buffer (evp_rec_emit in the
 * header).  A thread whose buffer is full takes the slow path here: under
 * the session lock it queues the buffer for the writer and takes a free
 * one, then records an EVP_EV_RECORDER event stamped when the hand-off
 * began, so the stall shows in the trace as recorder time instead of
 * inflating the event before it.
 *
 * The writer thread is the only code that writes the file.  Each round it
 * writes pending metadata/function/thread chunks, then queued full
 * buffers, then the new records of every live buffer (records below a
 * thread's published pos are complete and never change).  It tracks per
 * buffer how many records it has written, so a buffer flushed early and
 * queued later is written exactly once.  Chunks of one stream are written
 * in order and numbered.
 *
 * The file is the session's alone: it is locked (flock) before it is
 * truncated, and a second process given the same path writes PATH.<pid>.
 * After a write error nothing more is written but the end record, once
 * the chunk the error cut short is cut off, so that the dropped counts
 * reach the reader whatever failed first.
 *
 * Chunk sources (session.h) write chunks of their own in each writer
 * round, beside the buffers: the sampler (sample.c) is one.  The session
 * calls a source only through the table the source registered.
 *
 * Thread structs are never freed: a thread's TLS pointer may outlive a
 * session.  A struct whose thread has exited is reused by a new thread,
 * and a struct from an earlier session is re-attached on its next event.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "evalprof/format.h"
#include "itab.h"
#include "kv.h"
#include "session.h"

__thread struct evp_rec_thread *evp_rec_tls_
    __attribute__((tls_model("initial-exec")));
uint64_t evp_rec_mask_;
int evp_rec_use_tsc_;

#define DEFAULT_BUFFER_EVENTS 65536u
#define DEFAULT_FLUSH_MS 200u
/* Beyond this many buffers a thread waits for the writer (or, with
 * EVALPROF_ON_OVERFLOW=drop, drops what it records until one comes
 * back): 32 buffers of 65536 16-byte records, at most 32 MiB a thread. */
#define DEFAULT_BUFFERS 32u
#define MAX_BUFFERS 4096u

struct buffer {
    struct evp_rec_record *recs;
    uint32_t cap;
    uint32_t n;       /* records in it when queued */
    uint32_t written; /* records the writer has written (writer only) */
    int discard;      /* the thread's overflow buffer: never written */
    struct thread *owner;
    struct buffer *next; /* queue or free list */
};

struct thread {
    struct evp_rec_thread hot; /* must be first: the TLS pointer aims here */
    struct buffer *buf;        /* current buffer, NULL when detached */
    uint64_t gen;              /* session generation it is attached to */
    uint32_t stream;
    uint32_t seq;      /* next chunk number (writer only) */
    uint32_t nbuffers; /* buffers it holds or has queued */
    uint32_t dropped;  /* records lost since its last chunk (writer) */
    uint64_t events;   /* records written (writer) */
    uint64_t dropped_total;
    uint64_t drop_pending; /* records dropped at overflow (under session.mu) */
    struct buffer *overflow; /* where records go while they are dropped */
    pid_t tid;
    int live;            /* attached to the current session */
    int exited;          /* its thread has ended: struct may be reused */
    struct thread *next; /* all threads ever seen */
};

/* A metadata, opcode, function or thread chunk waiting for the writer. */
struct pending {
    unsigned type;
    int compress; /* zstd when the session compresses EVENTS chunks */
    size_t len;
    struct pending *next;
    uint8_t payload[];
};

struct func {
    char *name, *file;
    uint32_t line;
};

enum state { CLOSED, OPENING, OPEN, CLOSING };

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* writer: work to do */
    pthread_cond_t room;    /* threads: a buffer came back */
    pthread_cond_t flushed; /* evp_rec_flush: a writer round ended */
    /* Held for a few pointer moves only: the queue, the free list, every
     * thread's nbuffers, and a buffer swap without session.mu (handover_fast),
     * which the writer's snapshot of live buffers takes too. */
    pthread_spinlock_t q;
    int q_open;      /* handover_fast may swap (under q) */
    uint64_t queued; /* buffers ever queued (under q) */
    enum state state;
    uint64_t gen;
    int fd;
    char *path;    /* the file written (PATH, or PATH.<pid>) */
    char *abspath; /* the same from the root: the program may chdir() */
    uint64_t rounds_begun, rounds_done, flush_want; /* writer rounds */
    struct evp_rec_config cfg;
    uint32_t max_buffers; /* per thread (EVALPROF_BUFFERS) */
    int drop;             /* EVALPROF_ON_OVERFLOW=drop */
    uint64_t max_bytes;   /* EVALPROF_MAX_SIZE, 0: none */
    uint64_t duration_ns; /* EVALPROF_DURATION, 0: none */
    uint64_t start_ns;
    const char *stopped;      /* the limit that stopped recording, or NULL */
    unsigned writer_delay_ms; /* EVALPROF_TEST_WRITER_DELAY_MS (tests) */
    int zstd_level;           /* EVALPROF_ZSTD: compress event chunks */
    int z_now;                /* this round has the CPU for it (writer) */
    unsigned z_flags;         /* the chunk being written's (writer) */
    uint8_t *z_buf;
    size_t z_cap;
    pthread_t writer;
    int writer_running;
    int writer_stop;
    struct buffer *queue_head, *queue_tail;
    struct buffer *free_list;
    struct pending *pend_head, *pend_tail;
    struct thread *threads;
    uint32_t next_stream;
    /* what is re-emitted into a forked child's own trace */
    struct evp_kv meta;
    uint8_t *opcodes;
    size_t opcodes_len;
    struct func *funcs;
    size_t nfuncs, funcs_cap;
    size_t funcs_queued; /* functions already in a chunk for the writer */
    int deferred;        /* the file is created by the first write */
    /* figures */
    uint64_t events, dropped, bytes, chunks, backwards;
    uint64_t writer_cpu_ns; /* the writer thread's CPU time, its runs */
    int error;
    int end_error; /* the end record could not be written (-errno) */
    double hz;
    double event_cost_ticks;
    uint8_t *encode_buf;
    size_t encode_cap;
} session = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .room = PTHREAD_COND_INITIALIZER,
    .flushed = PTHREAD_COND_INITIALIZER,
    .fd = -1,
};

static pthread_key_t thread_key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* ---- chunk sources (session.h) ---------------------------------------- */

/* The sources registered, in order; the count is published (release)
 * after the entry it counts, so a reader without session.mu (a fork
 * handler, evp_rec_writer_pause) sees whole entries only. */
#define MAX_SOURCES 4
static const struct evp_rec_source *sources[MAX_SOURCES];
static int sources_n;

static int nsources(void)
{
    return __atomic_load_n(&sources_n, __ATOMIC_ACQUIRE);
}

int evp_rec_source_add(const struct evp_rec_source *src)
{
    int rc = 0;
    pthread_mutex_lock(&session.mu);
    int n = sources_n, known = 0;
    for (int i = 0; i < n; i++)
        known |= sources[i] == src;
    if (!known && n == MAX_SOURCES) {
        rc = -ENOSPC;
    } else if (!known) {
        sources[n] = src;
        __atomic_store_n(&sources_n, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&session.mu);
    return rc;
}

/* The round a source's collect() is given: valid while it runs, inside
 * writer_round (session.mu held). */
struct evp_rec_round {
    int final;
};

/* Every source's part of a writer round (caller holds session.mu). */
static void collect_sources(int final)
{
    struct evp_rec_round round = {final};
    for (int i = 0, n = nsources(); i < n; i++)
        if (sources[i]->collect)
            sources[i]->collect(&round, final);
}

/* The shortest wait any source asks of the writer, 0 when none asks. */
static unsigned sources_poll_ms(void)
{
    unsigned ms = 0;
    for (int i = 0, n = nsources(); i < n; i++) {
        unsigned m = sources[i]->poll_ms ? sources[i]->poll_ms() : 0;
        if (m && (!ms || m < ms))
            ms = m;
    }
    return ms;
}

/* One line on stderr, "evalprof: " and the message (unless quiet). */
static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
    if (session.cfg.flags & EVP_REC_QUIET)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "evalprof: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- writing ---------------------------------------------------------- */

static int write_all(int fd, const struct iovec *iov, int n)
{
    struct iovec v[4];
    memcpy(v, iov, (size_t)n * sizeof *v);
    struct iovec *p = v;
    while (n > 0) {
        ssize_t w = writev(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        while (n > 0 && (size_t)w >= p->iov_len) {
            w -= (ssize_t)p->iov_len;
            p++;
            n--;
        }
        if (n > 0) {
            p->iov_base = (char *)p->iov_base + w;
            p->iov_len -= (size_t)w;
        }
    }
    return 0;
}

static int open_deferred(void);

/* Write one chunk at the end of the file: 0 or -errno.  session.bytes counts
 * whole chunks only: a chunk that failed half-way lies beyond it. */
static int put_chunk(unsigned type, const uint8_t *payload, size_t len)
{
    uint8_t h[EVP_CHUNK_HEADER_SIZE];
    evp_chunk_header(h, type, session.z_flags, payload, (uint32_t)len);
    struct iovec iov[2] = {{h, sizeof h}, {(void *)payload, len}};
    int rc = write_all(session.fd, iov, 2);
    if (rc < 0)
        return rc;
    session.bytes += sizeof h + len;
    session.chunks++;
    return 0;
}

/* libzstd, loaded when EVALPROF_ZSTD asks for it: the recorder is linked
 * into interpreters that should not need it otherwise. */
static size_t (*z_compress)(void *, size_t, const void *, size_t, int);
static size_t (*z_bound)(size_t);
static unsigned (*z_is_error)(size_t);

static int zstd_load(void)
{
    if (z_compress)
        return 0;
    void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    z_compress = (size_t(*)(void *, size_t, const void *, size_t, int))dlsym(
        h, "ZSTD_compress");
    z_bound = (size_t(*)(size_t))dlsym(h, "ZSTD_compressBound");
    z_is_error = (unsigned (*)(size_t))dlsym(h, "ZSTD_isError");
    if (!z_compress || !z_bound || !z_is_error) {
        z_compress = NULL;
        return -1;
    }
    return 0;
}

static int write_chunk(unsigned type, const uint8_t *payload, size_t len);

/* An events or samples chunk, zstd-compressed (u32 raw size, frame) when
 * asked for and the writer is keeping up, as it is written otherwise. */
static int write_events_chunk(unsigned type, const uint8_t *payload, size_t len)
{
    if (!session.zstd_level || !session.z_now || !z_compress || session.error)
        return write_chunk(type, payload, len);
    size_t bound = z_bound(len) + 4;
    if (evp_grow((void **)&session.z_buf, &session.z_cap, bound, 1, bound) < 0)
        return write_chunk(type, payload, len);
    size_t zn = z_compress(session.z_buf + 4, bound - 4, payload, len,
                           session.zstd_level);
    if (z_is_error(zn) || zn + 4 >= len)
        return write_chunk(type, payload, len);
    evp_put_u32(session.z_buf, (uint32_t)len);
    session.z_flags = EVP_CHUNK_F_ZSTD;
    int rc = write_chunk(type, session.z_buf, zn + 4);
    session.z_flags = 0;
    return rc;
}

/*
 * Create a deferred file (a forked child's) and write its beginning, once;
 * an error stops recording.  Caller holds session.mu: the beginning reads the
 * metadata and the function table, which evp_rec_meta and evp_rec_func
 * change (and reallocate) meanwhile.
 */
static int open_deferred_locked(void)
{
    if (session.error || session.fd >= 0 || !session.deferred)
        return session.error;
    int rc = open_deferred();
    if (rc < 0) {
        session.error = rc;
        warn("%s: cannot create the trace (%s); recording stopped",
             session.path, strerror(-rc));
    }
    return rc;
}

/* Write one chunk; after the first error nothing more is written.  A
 * deferred file is created first (caller holds session.mu then: writer_round
 * creates it before it lets go of the lock). */
static int write_chunk(unsigned type, const uint8_t *payload, size_t len)
{
    if (session.error)
        return session.error;
    int rc = open_deferred_locked();
    if (rc < 0)
        return rc;
    rc = put_chunk(type, payload, len);
    if (rc < 0) {
        session.error = rc;
        warn("%s: write failed (%s); recording stopped, what was written "
             "before stays readable",
             session.path, strerror(-rc));
    }
    return rc;
}

/* ---- pending small chunks -------------------------------------------- */

static struct pending *pending_new(unsigned type, size_t len)
{
    struct pending *p = malloc(sizeof *p + len);
    if (!p)
        return NULL;
    p->type = type;
    p->compress = 0;
    p->len = len;
    p->next = NULL;
    return p;
}

/* Caller holds session.mu. */
static void pending_push(struct pending *p)
{
    if (session.pend_tail)
        session.pend_tail->next = p;
    else
        session.pend_head = p;
    session.pend_tail = p;
}

static void pending_free_all(struct pending *p)
{
    while (p) {
        struct pending *n = p->next;
        free(p);
        p = n;
    }
}

static struct pending *meta_chunk(char **kv, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += strlen(kv[i]) + 1;
    struct pending *p = pending_new(EVP_CHUNK_META, len);
    if (!p)
        return NULL;
    uint8_t *o = p->payload;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(kv[i]) + 1;
        memcpy(o, kv[i], l);
        o += l;
    }
    return p;
}

static size_t func_entry_bound(const struct func *f)
{
    return 2 * EVP_VARINT_MAX + evp_str_bound(f->name) + evp_str_bound(f->file);
}

/* FUNCS chunk for ids [first, last). */
static struct pending *funcs_chunk(size_t first, size_t last)
{
    size_t bound = EVP_VARINT_MAX;
    for (size_t i = first; i < last; i++)
        bound += func_entry_bound(&session.funcs[i]);
    struct pending *p = pending_new(EVP_CHUNK_FUNCS, bound);
    if (!p)
        return NULL;
    size_t k = evp_varint_put(p->payload, last - first);
    for (size_t i = first; i < last; i++)
        k += evp_func_entry_put(p->payload + k, (uint32_t)(i + 1),
                                session.funcs[i].name, session.funcs[i].file,
                                session.funcs[i].line);
    p->len = k;
    return p;
}

/* Queue a FUNCS chunk of the functions registered since the last one
 * (caller holds session.mu). */
static void funcs_queue_locked(void)
{
    if (session.nfuncs > session.funcs_queued) {
        struct pending *f = funcs_chunk(session.funcs_queued, session.nfuncs);
        if (f) {
            pending_push(f);
            session.funcs_queued = session.nfuncs;
        }
    }
}

/* Queue a chunk (PAYLOAD copied) for this round (caller holds
 * session.mu). */
static int chunk_queue_locked(unsigned type, const uint8_t *payload, size_t len,
                              int compress)
{
    struct pending *p = pending_new(type, len);
    if (!p)
        return -ENOMEM;
    memcpy(p->payload, payload, len);
    p->compress = compress;
    pending_push(p);
    return 0;
}

static struct pending *thread_chunk(const struct thread *t, const char *name)
{
    struct pending *p =
        pending_new(EVP_CHUNK_THREAD, 2 * EVP_VARINT_MAX + evp_str_bound(name));
    if (!p)
        return NULL;
    p->len = evp_thread_put(p->payload, t->stream, (uint64_t)t->tid, name);
    return p;
}

/* ---- buffers ---------------------------------------------------------- */

/* Caller holds session.mu. */
static struct buffer *buffer_new(uint32_t cap)
{
    struct buffer *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->cap = cap;
    b->recs = malloc((size_t)b->cap * sizeof *b->recs);
    if (!b->recs) {
        free(b);
        return NULL;
    }
    /* Touch every page now, on the slow path, rather than take page
     * faults between events later, where they would read as time spent
     * in the traced program. */
    memset(b->recs, 0, (size_t)b->cap * sizeof *b->recs);
    return b;
}

/* Caller holds session.mu. */
static struct buffer *buffer_get(struct thread *t)
{
    pthread_spin_lock(&session.q);
    struct buffer *b = session.free_list;
    if (b && b->cap == session.cfg.buffer_events)
        session.free_list = b->next;
    else
        b = NULL;
    pthread_spin_unlock(&session.q);
    if (!b && !(b = buffer_new(session.cfg.buffer_events)))
        return NULL;
    pthread_spin_lock(&session.q);
    t->nbuffers++;
    pthread_spin_unlock(&session.q);
    b->n = 0;
    b->written = 0;
    b->owner = t;
    b->next = NULL;
    return b;
}

/* Caller holds session.mu. */
static void buffer_put(struct buffer *b)
{
    pthread_spin_lock(&session.q);
    if (b->owner)
        b->owner->nbuffers--;
    b->owner = NULL;
    b->next = session.free_list;
    session.free_list = b;
    pthread_spin_unlock(&session.q);
}

/* Caller holds session.q. */
static void queue_push_q(struct buffer *b)
{
    __atomic_store_n(&session.queued, session.queued + 1, __ATOMIC_RELAXED);
    b->next = NULL;
    if (session.queue_tail)
        session.queue_tail->next = b;
    else /* (the writer peeks at the head without session.q) */
        __atomic_store_n(&session.queue_head, b, __ATOMIC_RELAXED);
    session.queue_tail = b;
}

/* Caller holds session.mu. */
static void queue_push(struct buffer *b)
{
    pthread_spin_lock(&session.q);
    queue_push_q(b);
    pthread_spin_unlock(&session.q);
}

/*
 * Encode and write records [b->written, upto) of buffer B.  Called by the
 * writer thread only, without session.mu: the records are stable and the buffer
 * cannot be recycled while the writer holds it.
 */
static void write_records(struct buffer *b, uint32_t upto)
{
    struct thread *t = b->owner;
    if (upto <= b->written)
        return;
    uint32_t n = upto - b->written;
    if (session.error) {
        t->dropped += n;
        t->dropped_total += n;
        session.dropped += n;
        b->written = upto;
        return;
    }
    if (session.writer_delay_ms) /* a slow disk, for the tests */
        usleep(session.writer_delay_ms * 1000u);
    struct evp_events_prefix pf = {0};
    pf.stream = t->stream;
    pf.seq = t->seq;
    pf.dropped = t->dropped;
    evp_clock_pair(evp_rec_use_tsc_, &pf.sync_ticks, &pf.sync_ns);
    size_t len = evp_events_encode(session.encode_buf, &pf,
                                   b->recs + b->written, n, &session.backwards);
    if (write_events_chunk(EVP_CHUNK_EVENTS, session.encode_buf, len) == 0) {
        t->seq++;
        t->dropped = 0;
        t->events += n;
        session.events += n;
    } else {
        t->dropped += n;
        t->dropped_total += n;
        session.dropped += n;
    }
    b->written = upto;
}

/* ---- the writer thread ------------------------------------------------ */

struct snap {
    struct buffer *b;
    uint32_t upto;
};

/* Any records not yet written?  (Caller holds session.mu.) */
static int records_waiting(void)
{
    int any = 0;
    pthread_spin_lock(&session.q);
    any = session.queue_head != NULL;
    for (struct thread *t = session.threads; t && !any; t = t->next) {
        if (!t->live || !t->buf)
            continue;
        struct evp_rec_record *pos =
            __atomic_load_n(&t->hot.pos, __ATOMIC_ACQUIRE);
        any = pos > t->buf->recs + t->buf->written &&
              pos <= t->buf->recs + t->buf->cap;
    }
    pthread_spin_unlock(&session.q);
    return any;
}

static int meta_remember(const char *key, const char *value);

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Past --max-size or --duration: stop recording (the program runs on),
 * say why in the trace (recorder.stopped) and write what the buffers
 * hold.  Caller holds session.mu.
 */
static void check_limits(void)
{
    if (session.stopped || session.state != OPEN)
        return;
    if (session.max_bytes && session.bytes >= session.max_bytes)
        session.stopped = "max-size";
    else if (session.duration_ns &&
             mono_ns() - session.start_ns >= session.duration_ns)
        session.stopped = "duration";
    else
        return;
    __atomic_store_n(&evp_rec_mask_, 0, __ATOMIC_RELAXED);
    char *kv[2] = {"recorder.stopped", (char *)session.stopped};
    meta_remember(kv[0], kv[1]);
    struct pending *p = meta_chunk(kv, 2);
    if (p)
        pending_push(p);
    warn("recording stopped at --%s; the program runs on", session.stopped);
}

/* "recording: N events, X MB, Y MB/s" on a terminal, once a second. */
static int progress_on;
static uint64_t progress_last;

static void progress(int final)
{
    if (!progress_on)
        return;
    if (final) {
        fputs("\r\033[K", stderr);
        return;
    }
    uint64_t now = mono_ns();
    if (now - progress_last < 1000000000u)
        return;
    progress_last = now;
    double secs = (double)(now - session.start_ns) / 1e9;
    double mb = (double)session.bytes / 1e6;
    fprintf(stderr,
            "\r\033[Kevalprof: recording: %llu events, %.1f MB, %.1f MB/s%s",
            (unsigned long long)session.events, mb, secs > 0 ? mb / secs : 0.0,
            session.dropped ? ", events dropped" : "");
}

/* Round ROUND is over: wake evp_rec_flush (caller holds session.mu). */
static void round_done(uint64_t round)
{
    session.rounds_done = round;
    pthread_cond_broadcast(&session.flushed);
}

/*
 * One round: pending chunks, queued buffers, then the new records of live
 * buffers.  Caller holds session.mu; it is released while writing.
 */
static void writer_round(int force)
{
    uint64_t round = ++session.rounds_begun;
    /* A file not created yet waits for records: a forked child that
     * only execs must leave nothing behind (close forces the write). */
    if (!force && session.deferred && session.fd < 0 && !records_waiting()) {
        round_done(round);
        return;
    }
    /* Before the functions queued below: the file's beginning names
     * those queued before. */
    open_deferred_locked();
    check_limits();
    for (struct thread *t = session.threads; t; t = t->next) {
        if (t->drop_pending) {
            t->dropped += (uint32_t)t->drop_pending;
            t->dropped_total += t->drop_pending;
            session.dropped += t->drop_pending;
            t->drop_pending = 0;
        }
    }
    /* The rings' samples, their new functions and stacks, as chunks. */
    collect_sources(force);
    /* Before any events that may name them. */
    funcs_queue_locked();
    struct pending *pend = session.pend_head;
    session.pend_head = session.pend_tail = NULL;
    size_t nsnap = 0, cap = 0;
    pthread_spin_lock(&session.q);
    for (struct thread *t = session.threads; t; t = t->next)
        cap += t->live && t->buf;
    pthread_spin_unlock(&session.q);
    struct snap *snaps = cap ? malloc(cap * sizeof *snaps) : NULL;
    /* The queue and the live buffers in one hold of session.q: a buffer handed
     * over between the two would be written after the records its
     * thread went on to store in the next one. */
    pthread_spin_lock(&session.q);
    struct buffer *q = session.queue_head;
    __atomic_store_n(&session.queue_head, NULL, __ATOMIC_RELAXED);
    session.queue_tail = NULL;
    for (struct thread *t = session.threads; t && snaps; t = t->next) {
        if (!t->live || !t->buf)
            continue;
        if (nsnap == cap)
            break; /* (threads attached meanwhile: their turn next round) */
        struct evp_rec_record *pos =
            __atomic_load_n(&t->hot.pos, __ATOMIC_ACQUIRE);
        struct buffer *b = t->buf;
        if (b->discard || pos < b->recs || pos > b->recs + b->cap)
            continue; /* dropping, detached or between sessions */
        snaps[nsnap].b = b;
        snaps[nsnap].upto = (uint32_t)(pos - b->recs);
        nsnap++;
    }
    pthread_spin_unlock(&session.q);
    pthread_mutex_unlock(&session.mu);

    size_t nq = 0;
    for (struct buffer *b = q; b; b = b->next)
        nq++;
    /* Compress only while the writer keeps up: a quarter of a ring
     * queued at most. */
    session.z_now = session.zstd_level && nq * 4 <= session.max_buffers;
    for (struct pending *p = pend; p; p = p->next) {
        if (p->compress)
            write_events_chunk(p->type, p->payload, p->len);
        else
            write_chunk(p->type, p->payload, p->len);
    }
    pending_free_all(pend);
    /* Each buffer goes back as soon as it is written: a thread waiting
     * for room waits for one buffer, not for the whole round. */
    while (q) {
        struct buffer *n = q->next;
        write_records(q, q->n);
        pthread_mutex_lock(&session.mu);
        buffer_put(q);
        pthread_cond_broadcast(&session.room);
        pthread_mutex_unlock(&session.mu);
        q = n;
    }
    for (size_t i = 0; i < nsnap; i++)
        write_records(snaps[i].b, snaps[i].upto);
    free(snaps);

    pthread_mutex_lock(&session.mu);
    round_done(round);
}

static pid_t writer_tid;        /* the kernel's id of the writer thread */
static unsigned writer_poll_ms; /* its pace (atomic), 0 before a round */

unsigned evp_rec_writer_poll_ms_(void)
{
    return __atomic_load_n(&writer_poll_ms, __ATOMIC_RELAXED);
}

double evp_rec_hz_(void)
{
    return session.hz;
}

static void *writer_main(void *arg)
{
    (void)arg;
    writer_tid = (pid_t)syscall(SYS_gettid);
    /* A batch thread: its wake-ups never preempt the traced program's
     * threads, it runs beside them or when they yield the CPU. */
    struct sched_param sp = {0};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&session.mu);
    unsigned poll_ms = session.cfg.flush_ms > 40 ? session.cfg.flush_ms / 4
                                                 : session.cfg.flush_ms;
    uint64_t last_queued = __atomic_load_n(&session.queued, __ATOMIC_RELAXED);
    __atomic_store_n(&writer_poll_ms, 0, __ATOMIC_RELAXED);
    while (!session.writer_stop) {
        if (!__atomic_load_n(&session.queue_head, __ATOMIC_RELAXED) &&
            session.flush_want <= session.rounds_done) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            uint64_t ns =
                (uint64_t)until.tv_nsec + (uint64_t)poll_ms * 1000000u;
            until.tv_sec += (time_t)(ns / 1000000000u);
            until.tv_nsec = (long)(ns % 1000000000u);
            pthread_cond_timedwait(&session.wake, &session.mu, &until);
            if (session.writer_stop)
                break;
        }
        /* What the threads queued since the last round began: the
         * sleep and the round.  Counted over the round alone, a thread
         * that waited on a full ring queued nothing then, and the pace
         * slowed down just when the ring was too small for it. */
        uint64_t queued = __atomic_load_n(&session.queued, __ATOMIC_RELAXED);
        uint64_t got = queued - last_queued;
        last_queued = queued;
        writer_round(0);
        progress(0);
        /* Poll often enough that a quarter of the ring is what fills
         * between two rounds, every flush_ms at the least. */
        if (got * 4 >= session.max_buffers && poll_ms > 5)
            poll_ms /= 2;
        else if (got * 16 < session.max_buffers &&
                 poll_ms < session.cfg.flush_ms)
            poll_ms = poll_ms * 2 < session.cfg.flush_ms ? poll_ms * 2
                                                         : session.cfg.flush_ms;
        /* Sampling: the rings are drained every 50 ms at least, every
         * 10 ms while one fills by a quarter between two rounds. */
        unsigned ring_ms = sources_poll_ms();
        if (ring_ms && poll_ms > ring_ms)
            poll_ms = ring_ms;
        __atomic_store_n(&writer_poll_ms, poll_ms, __ATOMIC_RELAXED);
    }
    /* evalprof's own cost beside the program (recorder.writer_cpu_ns) */
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        session.writer_cpu_ns +=
            (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
    pthread_mutex_unlock(&session.mu);
    return NULL;
}

/* Caller holds session.mu. */
static int writer_start(void)
{
    if (session.writer_running)
        return 0;
    session.writer_stop = 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&session.writer, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -rc;
    pthread_setname_np(session.writer, "evalprof-writer");
    session.writer_running = 1;
    return 0;
}

/* ---- around fork() ----------------------------------------------------- */

/*
 * A program that forks should fork a process with the threads it has
 * itself: CPython 3.12+ warns that a fork in a multi-threaded process may
 * deadlock, counting the kernel's threads (/proc/self/stat), the writer
 * included.  So the writer can be stopped just before a fork and started
 * again after it; meanwhile records wait in their buffers.  pthread_join
 * returns when the thread has finished; the kernel drops it from the
 * process's count a moment later, which is waited for too (at most 2,000
 * sleeps of 10 us).
 */
static int writer_paused;

int evp_rec_writer_pause(void)
{
    /* the sources' threads too (the wall clock's sampler thread) */
    for (int i = 0, n = nsources(); i < n; i++)
        if (sources[i]->pause)
            sources[i]->pause();
    pthread_mutex_lock(&session.mu);
    if (!session.writer_running) {
        pthread_mutex_unlock(&session.mu);
        return 0;
    }
    session.writer_stop = 1;
    session.writer_running = 0;
    writer_paused = 1;
    pthread_cond_broadcast(&session.wake);
    pthread_t w = session.writer;
    pthread_mutex_unlock(&session.mu);
    pthread_join(w, NULL);
    char task[64];
    snprintf(task, sizeof task, "/proc/self/task/%ld", (long)writer_tid);
    for (int i = 0; i < 2000 && access(task, F_OK) == 0; i++) {
        struct timespec pause = {0, 10000};
        nanosleep(&pause, NULL);
    }
    return 1;
}

int evp_rec_writer_resume(void)
{
    int rc = 0;
    pthread_mutex_lock(&session.mu);
    if (writer_paused && session.state == OPEN)
        rc = writer_start();
    writer_paused = 0;
    pthread_mutex_unlock(&session.mu);
    int trc = 0;
    for (int i = 0, n = nsources(); i < n; i++) {
        int r = sources[i]->resume ? sources[i]->resume() : 0;
        trc = trc ? trc : r;
    }
    return rc ? rc : trc;
}

/* ---- threads ---------------------------------------------------------- */

static pid_t gettid_(void)
{
    return (pid_t)syscall(SYS_gettid);
}

int evp_rec_gettid_(void)
{
    return (int)gettid_();
}

static void thread_exit_cb(void *p)
{
    struct thread *t = p;
    if (evp_rec_tls_ == &t->hot)
        evp_rec_thread_detach();
    pthread_mutex_lock(&session.mu);
    t->exited = 1;
    pthread_mutex_unlock(&session.mu);
}

static void once_init(void);

/* Attach the calling thread (caller holds session.mu; state is OPEN), with a
 * buffer unless STREAM_ONLY (a sampled thread: its first event takes
 * one, in the same stream). */
static int attach_thread(const char *name, int stream_only)
{
    struct thread *t = (struct thread *)evp_rec_tls_;
    if (t && !t->live && t->nbuffers) {
        /* Attached again while the writer may still be writing the last
         * buffer of its previous stream, reading the struct's stream and
         * sequence numbers without the lock: the new stream gets a struct
         * of its own; this one is reused once its buffers are written. */
        t->exited = 1;
        t = NULL;
    }
    if (!t) {
        for (t = session.threads; t; t = t->next)
            if (t->exited && !t->nbuffers)
                break;
        if (!t) {
            t = calloc(1, sizeof *t);
            if (!t)
                return -ENOMEM;
            t->next = session.threads;
            session.threads = t;
        }
        t->exited = 0;
        pthread_setspecific(thread_key, t);
    }
    if (t->live && t->gen == session.gen && (t->buf || stream_only))
        return 0;
    struct buffer *b = stream_only ? NULL : buffer_get(t);
    if (!b && !stream_only)
        return -ENOMEM;
    t->buf = b;
    if (t->live && t->gen == session.gen) {
        /* Same session, buffer lost to an allocation failure: same stream. */
        __atomic_store_n(&t->hot.end, b->recs + b->cap, __ATOMIC_RELAXED);
        __atomic_store_n(&t->hot.pos, b->recs, __ATOMIC_RELEASE);
        return 0;
    }
    t->gen = session.gen;
    t->live = 1;
    t->stream = session.next_stream++;
    t->seq = 0;
    t->dropped = 0;
    t->events = 0;
    t->dropped_total = 0;
    t->tid = gettid_();
    char auto_name[32];
    if (!name) {
        snprintf(auto_name, sizeof auto_name, "thread %ld", (long)t->tid);
        name = auto_name;
    }
    struct pending *p = thread_chunk(t, name);
    if (p)
        pending_push(p);
    __atomic_store_n(&t->hot.end, b ? b->recs + b->cap : NULL,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&t->hot.pos, b ? b->recs : NULL, __ATOMIC_RELEASE);
    evp_rec_tls_ = &t->hot;
    return 0;
}

static int attach_locked(const char *name)
{
    return attach_thread(name, 0);
}

int evp_rec_stream_attach_(const char *name, uint32_t *stream)
{
    pthread_once(&once, once_init);
    pthread_mutex_lock(&session.mu);
    struct thread *t = (struct thread *)evp_rec_tls_;
    int known = t && t->live && t->gen == session.gen;
    int rc = session.state == OPEN ? attach_thread(name, 1) : -ENOTCONN;
    if (rc == 0) {
        t = (struct thread *)evp_rec_tls_;
        *stream = t->stream;
        struct pending *p = known && name ? thread_chunk(t, name) : NULL;
        if (p) /* renamed: a later THREAD chunk wins */
            pending_push(p);
    }
    pthread_mutex_unlock(&session.mu);
    return rc;
}

int evp_rec_thread_attach(const char *name)
{
    pthread_once(&once, once_init);
    pthread_mutex_lock(&session.mu);
    int rc = session.state == OPEN ? attach_locked(name) : -ENOTCONN;
    if (rc == 0 && name) {
        /* Renaming an attached thread: a later THREAD chunk wins. */
        struct thread *t = (struct thread *)evp_rec_tls_;
        struct pending *p = thread_chunk(t, name);
        if (p)
            pending_push(p);
    }
    pthread_mutex_unlock(&session.mu);
    return rc;
}

/* Queue the thread's current buffer (caller holds session.mu). */
static void detach_locked(struct thread *t)
{
    struct buffer *b = t->buf;
    if (!b) {
        t->live = 0; /* a sampled thread's stream, or a lost buffer */
        return;
    }
    struct evp_rec_record *pos = __atomic_load_n(&t->hot.pos, __ATOMIC_ACQUIRE);
    b->n = (uint32_t)(pos - b->recs);
    t->buf = NULL;
    t->live = 0;
    __atomic_store_n(&t->hot.end, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&t->hot.pos, NULL, __ATOMIC_RELAXED);
    if (b->discard) {
        t->drop_pending += b->n;
        pthread_cond_signal(&session.wake);
    } else if (session.state == OPEN || session.state == CLOSING) {
        queue_push(b);
        pthread_cond_signal(&session.wake);
    } else {
        buffer_put(b);
    }
}

void evp_rec_thread_detach(void)
{
    struct thread *t = (struct thread *)evp_rec_tls_;
    if (!t)
        return;
    pthread_mutex_lock(&session.mu);
    if (t->gen == session.gen)
        detach_locked(t);
    pthread_mutex_unlock(&session.mu);
}

/*
 * The slow path of evp_rec_emit: attach the thread, or hand over its full
 * buffer, then store the record.  Never fails visibly: without a session
 * or memory the record is dropped.
 */
/*
 * The usual hand-over: queue the full buffer and take a free one, under
 * the spin lock only, for a few pointer moves: never behind the writer's
 * session lock, which a writer preempted on a busy machine may hold for
 * milliseconds.  0 when it cannot (no free buffer of the size, the ring
 * full, the overflow buffer in use, no session): the slow path then does.
 */
static int handover_fast(struct thread *t)
{
    struct buffer *b = t->buf;
    if (!b || b->discard)
        return 0;
    int ok = 0;
    pthread_spin_lock(&session.q);
    struct buffer *nb = session.free_list;
    if (session.q_open && t->live && t->gen == session.gen && t->buf == b &&
        t->nbuffers < session.max_buffers && nb &&
        nb->cap == session.cfg.buffer_events) {
        session.free_list = nb->next;
        nb->n = nb->written = 0;
        nb->owner = t;
        nb->next = NULL;
        t->nbuffers++;
        b->n = b->cap;
        queue_push_q(b);
        t->buf = nb;
        __atomic_store_n(&t->hot.end, nb->recs + nb->cap, __ATOMIC_RELAXED);
        __atomic_store_n(&t->hot.pos, nb->recs, __ATOMIC_RELEASE);
        ok = 1;
    }
    pthread_spin_unlock(&session.q);
    return ok;
}

void evp_rec_slow_(unsigned kind, unsigned aux, uint32_t arg)
{
    uint64_t t0 = evp_rec_now();
    struct thread *t = (struct thread *)evp_rec_tls_;
    int handoff = 0;

    if (t && t->buf && t->hot.pos >= t->hot.end && handover_fast(t)) {
        handoff = 1;
        goto store;
    }
    pthread_mutex_lock(&session.mu);
    if (session.state != OPEN) {
        pthread_mutex_unlock(&session.mu);
        return;
    }
    if (!t || t->gen != session.gen || !t->buf) {
        if (attach_locked(NULL) < 0) {
            session.dropped++;
            pthread_mutex_unlock(&session.mu);
            return;
        }
        t = (struct thread *)evp_rec_tls_;
    } else if (t->hot.pos >= t->hot.end) {
        struct buffer *b = t->buf;
        if (b->discard) {
            /* A whole buffer of records dropped: counted, never written. */
            t->drop_pending += b->cap;
        } else {
            b->n = b->cap;
            queue_push(b);
            /* Not woken here: the writer polls (writer_main); woken,
             * on a busy machine it takes the CPU of the thread that
             * woke it, there and then.  It is woken below only when
             * the thread is going to wait or drop anyway. */
        }
        /* The queued buffer is the writer's now: the thread holds none
         * while it may wait (the writer can recycle B meanwhile). */
        t->buf = NULL;
        __atomic_store_n(&t->hot.end, NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&t->hot.pos, NULL, __ATOMIC_RELAXED);
        struct buffer *nb = NULL;
        if (session.drop && t->nbuffers >= session.max_buffers &&
            session.state == OPEN) {
            /* Bounded memory without waiting: record into the overflow
             * buffer, whose records are dropped whole, until the writer
             * gives one back. */
            if (t->overflow && t->overflow->cap != session.cfg.buffer_events) {
                free(t->overflow->recs);
                free(t->overflow);
                t->overflow = NULL;
            }
            if (!t->overflow &&
                (t->overflow = buffer_new(session.cfg.buffer_events)))
                t->overflow->discard = 1;
            nb = t->overflow;
            pthread_cond_signal(&session.wake);
        } else {
            /* Bounded memory: wait for the writer rather than grow. */
            if (t->nbuffers >= session.max_buffers)
                pthread_cond_signal(&session.wake);
            while (t->nbuffers >= session.max_buffers &&
                   session.state == OPEN && session.writer_running)
                pthread_cond_wait(&session.room, &session.mu);
            nb = session.state == OPEN ? buffer_get(t) : NULL;
        }
        if (!nb) {
            session.dropped++;
            pthread_mutex_unlock(&session.mu);
            return;
        }
        if (nb->discard)
            nb->owner = t;
        t->buf = nb;
        __atomic_store_n(&t->hot.end, nb->recs + nb->cap, __ATOMIC_RELAXED);
        __atomic_store_n(&t->hot.pos, nb->recs, __ATOMIC_RELEASE);
        handoff = !nb->discard;
    }
    pthread_mutex_unlock(&session.mu);

store:
    if (handoff && evp_rec_wants(EVP_EV_RECORDER)) {
        struct evp_rec_record *r = t->hot.pos;
        r->ts = t0;
        r->kind = EVP_EV_RECORDER;
        r->aux = 0;
        r->arg = 0;
        __atomic_store_n(&t->hot.pos, r + 1, __ATOMIC_RELEASE);
    }
    if (t->hot.pos < t->hot.end) {
        struct evp_rec_record *r = t->hot.pos;
        r->ts = evp_rec_now();
        r->kind = (uint16_t)kind;
        r->aux = (uint16_t)aux;
        r->arg = arg;
        __atomic_store_n(&t->hot.pos, r + 1, __ATOMIC_RELEASE);
    }
}

/* ---- metadata ----------------------------------------------------------- */

/* Remember KEY=VALUE for a forked child (caller holds session.mu). */
static int meta_remember(const char *key, const char *value)
{
    return evp_kv_set(&session.meta, key, value);
}

/* evp_rec_meta, caller holding session.mu. */
static int meta_locked(const char *key, const char *value)
{
    int rc = meta_remember(key, value);
    char *kv[2] = {(char *)key, (char *)value};
    struct pending *p = rc == 0 ? meta_chunk(kv, 2) : NULL;
    if (p)
        pending_push(p);
    else if (rc == 0)
        rc = -ENOMEM;
    return rc;
}

int evp_rec_meta(const char *key, const char *value)
{
    if (!key || !value || !*key)
        return -EINVAL;
    pthread_mutex_lock(&session.mu);
    int rc = -ENOTCONN;
    if (session.state == OPEN || session.state == OPENING)
        rc = meta_locked(key, value);
    pthread_mutex_unlock(&session.mu);
    return rc;
}

/* V in decimal at P (at most 20 characters, no NUL); returns the end. */
static char *put_long(char *p, long v)
{
    char tmp[24];
    unsigned long u = (unsigned long)v;
    int n = 0;
    if (v < 0) {
        *p++ = '-';
        u = 0 - u;
    }
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* One ",unit:line" a function's line table adds: written by hand, not
 * by snprintf, whose cost the writer would pay for each function its
 * samples name first (bench/recorder-measurements.md). */
void evp_rec_lines_add(struct evp_rec_lines *l, long unit, long line)
{
    if (line == l->last || l->cap == (size_t)-1)
        return;
    l->last = line;
    /* room for ",unit:line", two longs, and a NUL */
    if (evp_grow((void **)&l->buf, &l->cap, l->len + 48, 1, 256)) {
        l->cap = (size_t)-1; /* failed: nothing is written */
        return;
    }
    char *p = l->buf + l->len;
    if (l->len)
        *p++ = ',';
    p = put_long(p, unit);
    *p++ = ':';
    p = put_long(p, line);
    *p = '\0';
    l->len = (size_t)(p - l->buf);
}

static void lines_end(struct evp_rec_lines *l, uint32_t func, int locked)
{
    if (l->cap != (size_t)-1 && l->len) {
        char key[32];
        snprintf(key, sizeof key, "lines.%u", (unsigned)func);
        if (locked)
            meta_locked(key, l->buf);
        else
            evp_rec_meta(key, l->buf);
    }
    free(l->buf);
    *l = (struct evp_rec_lines)EVP_REC_LINES_INIT;
}

void evp_rec_lines_end(struct evp_rec_lines *l, uint32_t func)
{
    lines_end(l, func, 0);
}

int evp_rec_opcodes(const struct evp_opcode_desc *ops, size_t n)
{
    size_t bound = EVP_VARINT_MAX;
    for (size_t i = 0; i < n; i++)
        bound +=
            2 * EVP_VARINT_MAX + evp_str_bound(ops[i].name ? ops[i].name : "");
    uint8_t *buf = malloc(bound);
    if (!buf)
        return -ENOMEM;
    size_t k = evp_varint_put(buf, n);
    for (size_t i = 0; i < n; i++)
        k += evp_opcode_entry_put(buf + k, ops[i].opcode, ops[i].base,
                                  ops[i].name ? ops[i].name : "");
    pthread_mutex_lock(&session.mu);
    int rc = -ENOTCONN;
    if (session.state == OPEN || session.state == OPENING) {
        struct pending *p = pending_new(EVP_CHUNK_OPCODES, k);
        rc = -ENOMEM;
        if (p) {
            memcpy(p->payload, buf, k);
            pending_push(p);
            free(session.opcodes);
            session.opcodes = buf;
            session.opcodes_len = k;
            buf = NULL;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&session.mu);
    free(buf);
    return rc;
}

/* evp_rec_func, caller holding session.mu (any state but CLOSED). */
static uint32_t func_locked(const char *qualname, const char *file,
                            uint32_t firstline)
{
    if (session.state == CLOSED)
        return 0;
    if (evp_grow((void **)&session.funcs, &session.funcs_cap,
                 session.nfuncs + 1, sizeof *session.funcs, 256) < 0)
        return 0;
    struct func *f = &session.funcs[session.nfuncs];
    f->name = strdup(qualname ? qualname : "?");
    f->file = strdup(file ? file : "");
    f->line = firstline;
    if (!f->name || !f->file) {
        free(f->name);
        free(f->file);
        return 0;
    }
    session.nfuncs++;
    return (uint32_t)session.nfuncs;
}

uint32_t evp_rec_func(const char *qualname, const char *file,
                      uint32_t firstline)
{
    uint32_t id = 0;
    pthread_mutex_lock(&session.mu);
    if (session.state == OPEN || session.state == OPENING)
        id = func_locked(qualname, file, firstline);
    pthread_mutex_unlock(&session.mu);
    return id;
}

/* ---- inside a source's collect() (session.h) ---------------------------- */

uint32_t evp_rec_round_func(struct evp_rec_round *round, const char *qualname,
                            const char *file, uint32_t line)
{
    (void)round;
    return func_locked(qualname, file, line);
}

int evp_rec_round_meta(struct evp_rec_round *round, const char *key,
                       const char *value)
{
    (void)round;
    return meta_locked(key, value);
}

int evp_rec_round_meta_u64(struct evp_rec_round *round, const char *key,
                           uint64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    return evp_rec_round_meta(round, key, text);
}

void evp_rec_round_lines(struct evp_rec_round *round, struct evp_rec_lines *l,
                         uint32_t func)
{
    (void)round;
    lines_end(l, func, 1);
}

void evp_rec_round_funcs(struct evp_rec_round *round)
{
    (void)round;
    funcs_queue_locked();
}

int evp_rec_round_chunk(struct evp_rec_round *round, unsigned type,
                        const uint8_t *payload, size_t len, int compress)
{
    (void)round;
    return chunk_queue_locked(type, payload, len, compress);
}

/* ---- sessions ----------------------------------------------------------- */

static char *read_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return strdup("");
    char raw[4096];
    ssize_t n = read(fd, raw, sizeof raw - 1);
    close(fd);
    if (n <= 0)
        return strdup("");
    if (raw[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (raw[i] == '\0')
            raw[i] = ' ';
    raw[n] = '\0';
    return strdup(raw);
}

/* The trace's start: the clock pair its times count from, and the
 * wall-clock time of that instant. */
static void remember_start(uint64_t ticks, uint64_t ns, uint64_t wall_ns)
{
    char v[24];
    snprintf(v, sizeof v, "%llu", (unsigned long long)wall_ns);
    meta_remember("start.wall_ns", v);
    snprintf(v, sizeof v, "%llu", (unsigned long long)ns);
    meta_remember("start.clock_ns", v);
    snprintf(v, sizeof v, "%llu", (unsigned long long)ticks);
    meta_remember("start.ticks", v);
}

static void add_auto_meta(uint64_t start_ticks, uint64_t start_ns,
                          uint64_t wall_ns)
{
    char v[PATH_MAX + 1];
    char *cmd = read_cmdline();
    meta_remember("producer", session.cfg.producer);
    meta_remember("argv", cmd ? cmd : "");
    free(cmd);
    ssize_t n = readlink("/proc/self/exe", v, sizeof v - 1);
    v[n > 0 ? n : 0] = '\0';
    meta_remember("executable", v);
    snprintf(v, sizeof v, "%ld", (long)getpid());
    meta_remember("pid", v);
    remember_start(start_ticks, start_ns, wall_ns);
    meta_remember("clock", evp_rec_use_tsc_ ? "tsc" : "monotonic");
    snprintf(v, sizeof v, "%.1f", session.hz);
    meta_remember("clock.hz", v);
    snprintf(v, sizeof v, "%.3f", session.event_cost_ticks);
    meta_remember("event_cost.ticks", v);
    snprintf(v, sizeof v, "%.3f", session.event_cost_ticks * 1e9 / session.hz);
    meta_remember("event_cost.ns", v);
    snprintf(v, sizeof v, "0x%llx", (unsigned long long)session.cfg.can_emit);
    meta_remember("kinds.can_emit", v);
    snprintf(v, sizeof v, "0x%llx", (unsigned long long)session.cfg.enabled);
    meta_remember("kinds.enabled", v);
    snprintf(v, sizeof v, "%u", session.cfg.buffer_events);
    meta_remember("recorder.buffer_events", v);
    if (session.drop)
        meta_remember("recorder.on_overflow", "drop");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * Measure the cost of one event, in ticks: back-to-back events into a
 * private buffer through the same inline path the producers use.  The
 * median of several rounds resists a noisy machine.
 */
static double measure_event_cost(void)
{
    enum { N = 2048, ROUNDS = 7 };
    static struct evp_rec_record scratch[N];
    struct evp_rec_thread probe = {scratch, scratch + N};
    struct evp_rec_thread *saved = evp_rec_tls_;
    double per[ROUNDS];

    evp_rec_tls_ = &probe;
    __atomic_store_n(&evp_rec_mask_, EVP_KINDS_ALL, __ATOMIC_RELAXED);
    for (int r = 0; r < ROUNDS; r++) {
        probe.pos = scratch;
        uint64_t a = evp_rec_now();
        for (unsigned i = 0; i < N; i++)
            evp_rec_event(EVP_EV_DISPATCH, 0);
        uint64_t b = evp_rec_now();
        per[r] = (double)(b - a) / N;
    }
    __atomic_store_n(&evp_rec_mask_, 0, __ATOMIC_RELAXED);
    evp_rec_tls_ = saved;
    qsort(per, ROUNDS, sizeof per[0], cmp_double);
    return per[ROUNDS / 2];
}

static void atexit_close(void)
{
    if (session.state == OPEN && !(session.cfg.flags & EVP_REC_NO_ATEXIT))
        evp_rec_close();
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&session.mu);
    for (int i = 0, n = nsources(); i < n; i++)
        if (sources[i]->fork_prepare)
            sources[i]->fork_prepare();
}

static void fork_parent(void)
{
    for (int i = nsources(); i-- > 0;)
        if (sources[i]->fork_parent)
            sources[i]->fork_parent();
    pthread_mutex_unlock(&session.mu);
}

static int start_file(const char *path, int deferred);

/*
 * In a forked child: the parent's file, buffers and threads are not ours.
 * Either start a trace of our own (PATH.<pid>) or stop cleanly.
 */
static void fork_child(void)
{
    for (int i = 0, n = nsources(); i < n; i++)
        if (sources[i]->fork_child)
            sources[i]->fork_child();
    /* fork_prepare's lock, taken by this thread: released, not
     * initialised again (which POSIX leaves undefined for a locked
     * mutex, and ThreadSanitizer takes for a mutex still held) */
    pthread_mutex_unlock(&session.mu);
    pthread_cond_init(&session.wake, NULL);
    pthread_cond_init(&session.room, NULL);
    pthread_cond_init(&session.flushed, NULL);
    pthread_spin_init(&session.q, PTHREAD_PROCESS_PRIVATE);
    session.q_open = 0;
    session.writer_running = 0;
    if (session.state != OPEN) {
        session.state = CLOSED;
        return;
    }
    struct evp_rec_thread *self = evp_rec_tls_;
    __atomic_store_n(&evp_rec_mask_, 0, __ATOMIC_RELAXED);
    close(session.fd);
    session.fd = -1;
    pending_free_all(session.pend_head);
    session.pend_head = session.pend_tail = NULL;
    session.queue_head = session.queue_tail =
        NULL; /* the parent writes those */
    for (struct thread *t = session.threads; t; t = t->next) {
        t->buf = NULL; /* buffers of the parent's threads: leaked, once */
        t->nbuffers = 0;
        t->drop_pending = 0; /* the parent's trace counts those */
        t->live = 0;
        t->hot.pos = t->hot.end = NULL;
        t->exited = &t->hot != self;
    }
    session.state = CLOSED;
    session.gen++;
    if (!(session.cfg.flags & EVP_REC_FOLLOW_FORK))
        return;

    /* PATH.<pid>, from the path the session was opened with. */
    const char *orig = session.path;
    if (evp_kv_get(&session.meta, "recorder.path"))
        orig = evp_kv_get(&session.meta, "recorder.path");
    size_t len = strlen(orig) + 24;
    char *child_path = malloc(len);
    if (!child_path)
        return;
    snprintf(child_path, len, "%s.%ld", orig, (long)getpid());
    char ppid[24];
    snprintf(ppid, sizeof ppid, "%ld", (long)getppid());
    meta_remember("parent.pid", ppid);
    /* The child's trace starts at the fork: its elapsed time, its
     * --duration and its start time are its own, not its parent's. */
    uint64_t ticks, ns;
    evp_clock_pair(evp_rec_use_tsc_, &ticks, &ns);
    remember_start(ticks, ns, evp_clock_wall_ns());
    session.start_ns = progress_last = ns; /* (the pair's CLOCK_MONOTONIC) */
    /* Created by the first write, so that a child which only execs (a
     * subprocess) leaves no empty trace behind. */
    int rc = start_file(child_path, 1);
    free(child_path);
    if (rc < 0)
        return;
    /* The forking thread goes on recording in its own new stream. */
    if (self) {
        pthread_mutex_lock(&session.mu);
        attach_locked(NULL);
        pthread_mutex_unlock(&session.mu);
    }
    for (int i = 0, n = nsources(); i < n; i++)
        if (sources[i]->fork_follow && sources[i]->fork_follow() < 0)
            meta_remember("sample.fork", "the sampler could not start again");
}

static void once_init(void)
{
    pthread_spin_init(&session.q, PTHREAD_PROCESS_PRIVATE);
    pthread_key_create(&thread_key, thread_exit_cb);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(atexit_close);
}

/*
 * Write the file header and what a new reader needs first: the metadata,
 * the opcode table and the functions registered so far.
 */
static int file_begin(void)
{
    uint8_t fh[EVP_FILE_HEADER_SIZE];
    evp_file_header(fh);
    struct iovec iov = {fh, sizeof fh};
    int rc = write_all(session.fd, &iov, 1);
    if (rc < 0)
        return rc;
    session.bytes += sizeof fh;
    struct pending *m = meta_chunk(session.meta.kv, session.meta.n);
    if (!m)
        return -ENOMEM;
    rc = write_chunk(m->type, m->payload, m->len);
    free(m);
    if (rc < 0)
        return rc;
    if (session.opcodes && (rc = write_chunk(EVP_CHUNK_OPCODES, session.opcodes,
                                             session.opcodes_len)) < 0)
        return rc;
    if (session.funcs_queued) {
        struct pending *f = funcs_chunk(0, session.funcs_queued);
        if (!f)
            return -ENOMEM;
        rc = write_chunk(f->type, f->payload, f->len);
        free(f);
    }
    return rc;
}

static int is_dev_null(const struct stat *st)
{
    return S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3);
}

/*
 * Open PATH for a session: created when missing, refused unless it is a
 * regular file or /dev/null (-EISDIR, -EINVAL: a FIFO would block the
 * program, a device is not a trace), locked with an exclusive flock()
 * held until the session ends and only then truncated, so that a second
 * process given the same path neither truncates nor interleaves with the
 * first one's trace: it gets -EWOULDBLOCK.  Returns the descriptor or a
 * negative errno.
 */
static int open_locked(const char *path)
{
    struct stat st, now;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !is_dev_null(&st))
        return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    for (int tries = 0; tries < 8; tries++) {
        /* O_NONBLOCK: a FIFO made since the check must not block. */
        int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
        if (fd < 0)
            return errno == ENXIO ? -EINVAL : -errno;
        int rc = fstat(fd, &st) == 0 ? 0 : -errno;
        if (rc == 0 && !S_ISREG(st.st_mode))
            rc = is_dev_null(&st) ? 1 : S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
        if (rc == 0 && flock(fd, LOCK_EX | LOCK_NB) != 0)
            rc = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
        /* Locked, but still the file PATH names?  Not when it was
         * removed or replaced between the open and the lock. */
        if (rc == 0 && (stat(path, &now) != 0 || now.st_dev != st.st_dev ||
                        now.st_ino != st.st_ino)) {
            close(fd);
            continue;
        }
        if (rc == 0 && ftruncate(fd, 0) != 0)
            rc = -errno;
        if (rc < 0) {
            close(fd);
            return rc;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        return fd;
    }
    return -EAGAIN;
}

/* PATH from the root, for the check at close (malloc'ed, or NULL). */
static char *absolute(const char *path)
{
    char cwd[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
        return strdup(path);
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *a = malloc(n);
    if (a)
        snprintf(a, n, "%s/%s", cwd, path);
    return a;
}

/* Make PATH the session's file name (session.path, session.abspath): 0 or
 * -ENOMEM. */
static int set_path(const char *path)
{
    char *p = strdup(path), *a = absolute(path);
    if (!p || !a) {
        free(p);
        free(a);
        return -ENOMEM;
    }
    free(session.path);
    free(session.abspath);
    session.path = p;
    session.abspath = a;
    return 0;
}

/*
 * Open the session's file: PATH, or PATH.<pid> when another live process
 * is writing PATH (said in one line).  Sets session.path; returns the
 * descriptor or a negative errno.
 */
static int claim(const char *path)
{
    int fd = open_locked(path);
    if (fd != -EWOULDBLOCK) {
        if (fd >= 0 && set_path(path) < 0) {
            close(fd);
            return -ENOMEM;
        }
        return fd;
    }
    size_t n = strlen(path) + 24;
    char *alt = malloc(n);
    if (!alt)
        return -ENOMEM;
    snprintf(alt, n, "%s.%ld", path, (long)getpid());
    fd = open_locked(alt);
    if (fd >= 0 && set_path(alt) < 0) {
        close(fd);
        fd = -ENOMEM;
    }
    if (fd >= 0 && !(session.cfg.flags & EVP_REC_QUIET))
        fprintf(stderr,
                "evalprof: %s is being written by another process: this "
                "one writes %s\n",
                path, alt);
    free(alt);
    return fd == -EWOULDBLOCK ? -EBUSY : fd;
}

/* Create session.path and write its beginning (writer thread, first write). */
static int open_deferred(void)
{
    int fd = open_locked(session.path);
    if (fd < 0)
        return fd;
    session.fd = fd;
    session.deferred = 0;
    int rc = file_begin();
    if (rc < 0) {
        close(fd);
        session.fd = -1;
    }
    return rc;
}

/*
 * Set up a session writing PATH and start the writer.  Unless DEFERRED,
 * the file is created and its beginning written now (so that open errors
 * reach evp_rec_open's caller); else the first write creates it.  Used by
 * open and by a forked child.  Leaves the session OPEN on success.
 */
static int start_file(const char *path, int deferred)
{
    if (deferred && set_path(path) < 0)
        return -ENOMEM;
    session.fd = -1;
    session.deferred = deferred;
    session.error = session.end_error = 0;
    session.events = session.dropped = session.bytes = session.chunks =
        session.backwards = 0;
    session.writer_cpu_ns = 0;
    session.next_stream = 0;
    char pidv[24];
    snprintf(pidv, sizeof pidv, "%ld", (long)getpid());
    meta_remember("pid", pidv);
    session.funcs_queued = session.nfuncs; /* written by file_begin */

    int rc = 0;
    if (!deferred) {
        int fd = claim(path);
        if (fd < 0)
            return fd;
        session.fd = fd;
        if ((rc = file_begin()) < 0)
            goto fail;
    }
    size_t need = evp_events_bound(session.cfg.buffer_events);
    if (evp_grow((void **)&session.encode_buf, &session.encode_cap, need, 1,
                 need) < 0) {
        rc = -ENOMEM;
        goto fail;
    }
    pthread_mutex_lock(&session.mu);
    rc = writer_start();
    if (rc == 0) {
        session.state = OPEN;
        pthread_spin_lock(&session.q);
        session.q_open = 1;
        pthread_spin_unlock(&session.q);
        __atomic_store_n(&evp_rec_mask_, session.cfg.enabled, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&session.mu);
    if (rc < 0)
        goto fail;
    return 0;
fail:
    if (session.fd >= 0)
        close(session.fd);
    session.fd = -1;
    session.deferred = 0;
    session.error = 0;
    return rc;
}

/* A number from the environment (SUFFIXES: "KMG" sizes), or DEF. */
static double env_number(const char *name, double def, int sizes)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    uint64_t mul = 1;
    if (sizes && *end) {
        const char *u = strchr("KMG", end[0] & ~0x20);
        if (u && end[0]) {
            mul = (uint64_t)1 << (10 * (1 + (u - "KMG")));
            end++;
            if ((*end & ~0x20) == 'B' || (*end == 'i' && end[1] == 'B'))
                end += *end == 'i' ? 2 : 1;
        }
    }
    if (errno || end == v || *end || !(x >= 0) || x * (double)mul > 1e18) {
        warn("%s=%s is not a number; using the default", name, v);
        return def;
    }
    return x * (double)mul;
}

/* The session's options from the environment: the same for `evalprof
 * record`, python -m evalprof and the instrumented interpreter. */
static void read_env_limits(void)
{
    double n = env_number("EVALPROF_BUFFERS", DEFAULT_BUFFERS, 0);
    session.max_buffers = n < 2             ? 2
                          : n > MAX_BUFFERS ? MAX_BUFFERS
                                            : (uint32_t)n;
    if (getenv("EVALPROF_BUFFER_SIZE")) {
        /* Bytes of records per buffer; 16 bytes a record. */
        double b = env_number("EVALPROF_BUFFER_SIZE", 0, 1) /
                   (double)sizeof(struct evp_rec_record);
        if (b > 0)
            session.cfg.buffer_events = b < 16           ? 16
                                        : b > (1u << 24) ? 1u << 24
                                                         : (uint32_t)b;
    }
    const char *o = getenv("EVALPROF_ON_OVERFLOW");
    session.drop = o && strcmp(o, "drop") == 0;
    if (o && *o && !session.drop && strcmp(o, "wait") != 0)
        warn("EVALPROF_ON_OVERFLOW=%s: not wait or drop; waiting", o);
    session.max_bytes = (uint64_t)env_number("EVALPROF_MAX_SIZE", 0, 1);
    session.duration_ns =
        (uint64_t)(env_number("EVALPROF_DURATION", 0, 0) * 1e9);
    session.zstd_level = (int)env_number("EVALPROF_ZSTD", 0, 0);
    if (session.zstd_level > 19)
        session.zstd_level = 19;
    if (session.zstd_level && zstd_load() < 0) {
        warn("EVALPROF_ZSTD: libzstd.so.1 cannot be loaded; chunks are "
             "written uncompressed");
        session.zstd_level = 0;
    }
    session.writer_delay_ms =
        (unsigned)env_number("EVALPROF_TEST_WRITER_DELAY_MS", 0, 0);
    session.stopped = NULL;
    session.start_ns = mono_ns();
    const char *pg = getenv("EVALPROF_PROGRESS");
    const char *q = getenv("EVALPROF_QUIET");
    progress_on = pg && strcmp(pg, "1") == 0 && isatty(2) &&
                  !(q && *q && strcmp(q, "0") != 0);
    progress_last = session.start_ns;
}

int evp_rec_open(const struct evp_rec_config *cfg)
{
    if (!cfg || !cfg->path || !cfg->producer || !*cfg->path)
        return -EINVAL;
    pthread_once(&once, once_init);
    pthread_mutex_lock(&session.mu);
    if (session.state != CLOSED) {
        pthread_mutex_unlock(&session.mu);
        return -EBUSY;
    }
    session.state = OPENING;
    pthread_mutex_unlock(&session.mu);

    uint64_t wall = evp_clock_wall_ns();
    session.cfg = *cfg;
    session.cfg.path = NULL;
    session.cfg.producer = NULL;
    read_env_limits();
    if (!session.cfg.buffer_events)
        session.cfg.buffer_events = DEFAULT_BUFFER_EVENTS;
    if (session.cfg.buffer_events < 16)
        session.cfg.buffer_events = 16;
    if (!session.cfg.flush_ms)
        session.cfg.flush_ms = DEFAULT_FLUSH_MS;
    if (!session.cfg.can_emit)
        session.cfg.can_emit = EVP_KINDS_ALL;
    session.cfg.can_emit |= EVP_KIND_BIT(EVP_EV_RECORDER);
    if (!session.cfg.enabled)
        session.cfg.enabled = session.cfg.can_emit;
    session.cfg.enabled &= session.cfg.can_emit;

    const char *clk = getenv("EVALPROF_CLOCK");
    int mono = (cfg->flags & EVP_REC_CLOCK_MONO) ||
               (clk && strcmp(clk, "monotonic") == 0);
    evp_rec_use_tsc_ = !mono && evp_clock_tsc_invariant();
    uint64_t t0, n0;
    evp_clock_pair(evp_rec_use_tsc_, &t0, &n0);
    /* A short first estimate: the reader calibrates from the clock pairs
     * of every chunk and the end record, and needs this one only for
     * traces shorter than 5 ms.  Every traced process pays it at start. */
    session.hz = evp_clock_calibrate(evp_rec_use_tsc_, 250);
    session.event_cost_ticks = measure_event_cost();

    evp_kv_free(&session.meta);
    for (size_t i = 0; i < session.nfuncs; i++) {
        free(session.funcs[i].name);
        free(session.funcs[i].file);
    }
    session.nfuncs = 0;
    session.funcs_queued = 0;
    free(session.opcodes);
    session.opcodes = NULL;
    session.opcodes_len = 0;
    meta_remember("recorder.path", cfg->path);
    session.cfg.producer = cfg->producer;
    add_auto_meta(t0, n0, wall);
    session.cfg.producer = NULL;

    int rc = start_file(cfg->path, 0);
    if (rc < 0) {
        pthread_mutex_lock(&session.mu);
        session.state = CLOSED;
        pthread_mutex_unlock(&session.mu);
    }
    return rc;
}

int evp_rec_is_open(void)
{
    return __atomic_load_n(&session.state, __ATOMIC_RELAXED) == OPEN;
}

int evp_rec_threads(void)
{
    pthread_mutex_lock(&session.mu);
    int n = session.writer_running ? 1 : 0;
    pthread_mutex_unlock(&session.mu);
    for (int i = 0, k = nsources(); i < k; i++)
        if (sources[i]->threads)
            n += sources[i]->threads();
    return n;
}

void evp_rec_set_enabled(uint64_t kinds)
{
    pthread_mutex_lock(&session.mu);
    session.cfg.enabled =
        (kinds ? kinds : session.cfg.can_emit) & session.cfg.can_emit;
    if (session.state == OPEN && !session.stopped)
        __atomic_store_n(&evp_rec_mask_, session.cfg.enabled, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&session.mu);
}

int evp_rec_flush(void)
{
    pthread_mutex_lock(&session.mu);
    if (session.state != OPEN) {
        pthread_mutex_unlock(&session.mu);
        return -ENOTCONN;
    }
    /* A round that begins after this point sees every record stored
     * before it, this thread's among them: wait for one to end. */
    uint64_t want = session.rounds_begun + 1;
    if (session.flush_want < want)
        session.flush_want = want;
    pthread_cond_signal(&session.wake);
    while (session.rounds_done < want && session.state == OPEN &&
           session.writer_running)
        pthread_cond_wait(&session.flushed, &session.mu);
    int rc = session.error;
    pthread_mutex_unlock(&session.mu);
    return rc;
}

static void write_end(void)
{
    uint8_t buf[64 + 3 * EVP_VARINT_MAX * 64];
    uint64_t ticks, ns;
    evp_clock_pair(evp_rec_use_tsc_, &ticks, &ns);
    evp_put_u64(buf, ticks);
    evp_put_u64(buf + 8, ns);
    evp_put_u64(buf + 16, evp_clock_wall_ns());
    evp_put_u64(buf + 24, session.events);
    evp_put_u64(buf + 32, session.dropped);
    evp_put_u64(buf + 40, session.backwards);
    size_t k = 48, n = 0;
    for (struct thread *t = session.threads; t; t = t->next)
        n += t->gen == session.gen && t->events + t->dropped_total > 0;
    if (n > 64)
        n = 64; /* the per-stream list is informative; totals are above */
    k += evp_varint_put(buf + k, n);
    for (struct thread *t = session.threads; t && n; t = t->next) {
        if (t->gen != session.gen || t->events + t->dropped_total == 0)
            continue;
        k += evp_varint_put(buf + k, t->stream);
        k += evp_varint_put(buf + k, t->events);
        k += evp_varint_put(buf + k, t->dropped_total);
        n--;
    }
    if (!session.error) {
        if (write_chunk(EVP_CHUNK_END, buf, k) < 0)
            session.end_error = session.error;
        return;
    }
    /* Recording stopped at a write error, maybe half-way through a chunk:
     * cut that off, so that the file ends with its last whole chunk, and
     * try the end record anyway.  Far smaller than the chunk that failed,
     * it often fits, and it is what tells a reader how many events were
     * dropped.  Not past a file-size limit: the signal could kill the
     * program. */
    struct rlimit rl;
    int rc = session.fd < 0 ? session.error : 0;
    if (rc == 0 && getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
        rl.rlim_cur != RLIM_INFINITY &&
        session.bytes + EVP_CHUNK_HEADER_SIZE + k > (uint64_t)rl.rlim_cur)
        rc = -EFBIG;
    if (rc == 0 && lseek(session.fd, (off_t)session.bytes, SEEK_SET) < 0)
        rc = -errno;
    if (rc == 0) {
        if (ftruncate(session.fd, (off_t)session.bytes) != 0 && errno != EINVAL)
            rc = -errno; /* EINVAL: /dev/null */
        else
            rc = put_chunk(EVP_CHUNK_END, buf, k);
    }
    session.end_error = rc;
}

/* Does the session's path still name the file written?  Not when it
 * was removed (its directory with it) or replaced while recording. */
static int path_holds_trace(void)
{
    struct stat a, b;
    if (session.fd < 0 || !session.abspath || fstat(session.fd, &a) != 0 ||
        !S_ISREG(a.st_mode))
        return 1;
    return stat(session.abspath, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* One line on what the closed session lost, if anything. */
static void report_losses(int gone)
{
    if (session.cfg.flags & EVP_REC_QUIET)
        return;
    if (gone)
        fprintf(stderr,
                "evalprof: %s: the trace file was removed or replaced "
                "while recording: the %llu events written to it are lost\n",
                session.path, (unsigned long long)session.events);
    else if (session.end_error && session.dropped)
        fprintf(stderr,
                "evalprof: %s: %llu events could not be written, nor the "
                "end record that counts them (%s)\n",
                session.path, (unsigned long long)session.dropped,
                strerror(-session.end_error));
    else if (session.end_error)
        fprintf(stderr,
                "evalprof: %s: the end record could not be written (%s): "
                "the trace ends without it\n",
                session.path, strerror(-session.end_error));
    else if (session.dropped && session.drop && !session.error)
        fprintf(stderr,
                "evalprof: %s: %llu events dropped, in whole buffers, while "
                "the writer could not keep up (--on-overflow=drop)\n",
                session.path, (unsigned long long)session.dropped);
    else if (session.dropped)
        fprintf(stderr, "evalprof: %s: %llu events could not be written\n",
                session.path, (unsigned long long)session.dropped);
}

int evp_rec_close(void)
{
    /* No more samples: the last round drains every ring. */
    if (evp_rec_is_open())
        for (int i = 0, n = nsources(); i < n; i++)
            if (sources[i]->stop)
                sources[i]->stop();
    pthread_mutex_lock(&session.mu);
    if (session.state != OPEN) {
        pthread_mutex_unlock(&session.mu);
        return -ENOTCONN;
    }
    __atomic_store_n(&evp_rec_mask_, 0, __ATOMIC_RELAXED);
    session.state = CLOSING;
    pthread_spin_lock(&session.q);
    session.q_open = 0;
    pthread_spin_unlock(&session.q);
    /* Queue every live buffer; the writer's last round writes them. */
    for (struct thread *t = session.threads; t; t = t->next)
        if (t->live && t->gen == session.gen)
            detach_locked(t);
    session.writer_stop = 1;
    pthread_cond_broadcast(&session.wake);
    pthread_cond_broadcast(&session.room);
    pthread_cond_broadcast(&session.flushed);
    int running = session.writer_running;
    pthread_mutex_unlock(&session.mu);
    if (running)
        pthread_join(session.writer, NULL);

    pthread_mutex_lock(&session.mu);
    session.writer_running = 0;
    if (running || session.writer_cpu_ns) {
        /* (the last round, below, is the closing thread's) */
        char v[32];
        snprintf(v, sizeof v, "%llu",
                 (unsigned long long)session.writer_cpu_ns);
        meta_locked("recorder.writer_cpu_ns", v);
    }
    writer_round(1); /* whatever the writer had not taken yet */
    progress(1);
    write_end();
    int gone = !path_holds_trace();
    if (session.fd >= 0 && close(session.fd) < 0 && !session.error)
        session.error = -errno;
    if (gone && !session.error)
        session.error = -ENOENT;
    session.fd = -1;
    session.deferred = 0;
    report_losses(gone);
    session.state = CLOSED;
    session.gen++;
    int rc = session.error;
    pthread_mutex_unlock(&session.mu);
    return rc;
}

const char *evp_rec_path(void)
{
    return session.path;
}

void evp_rec_get_stats(struct evp_rec_stats *st)
{
    pthread_mutex_lock(&session.mu);
    st->events = session.events;
    st->dropped = session.dropped;
    st->bytes = session.bytes;
    st->chunks = session.chunks;
    st->event_cost_ns =
        session.hz > 0 ? session.event_cost_ticks * 1e9 / session.hz : 0;
    st->error = session.error;
    st->end_error = session.end_error;
    pthread_mutex_unlock(&session.mu);
}
