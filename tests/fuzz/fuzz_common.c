/*
 * What the evalprof fuzz targets share (fuzz.h): in-memory files for the
 * reader, which opens paths; the invariants every opened trace must keep;
 * the views run over it; and the round trip through both writers, which
 * must give back every event the reader produced.
 *
 * The round trip is what turns the fuzzer from a crash finder into a
 * correctness check: any trace the reader accepts, however damaged, is
 * written by `evalprof export --format evp` and read back, and the two
 * replays must agree event for event.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evalprof/replay.h"
#include "fuzz.h"
#include "views.h"

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt,
               ...)
{
    va_list ap;
    fprintf(stderr, "fuzz: %s:%d: check failed: %s: ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* ---- in-memory files ------------------------------------------------------
 */

#define NSLOTS 4

static int slot_fd[NSLOTS] = {-1, -1, -1, -1};
static char slot_path[NSLOTS][64];
static uint8_t *slot_buf;
static size_t slot_cap;

static void slot_init(int slot)
{
    if (slot_fd[slot] >= 0)
        return;
    int fd = memfd_create("evp-fuzz", MFD_CLOEXEC);
    if (fd >= 0 && access("/proc/self/fd", X_OK) == 0) {
        snprintf(slot_path[slot], sizeof slot_path[slot], "/proc/self/fd/%d",
                 fd);
    } else {
        /* No memfd or no /proc: an unlinked-at-exit temporary file. */
        if (fd >= 0)
            close(fd);
        snprintf(slot_path[slot], sizeof slot_path[slot], "/tmp/evp-fuzz-%d-%d",
                 (int)getpid(), slot);
        fd =
            open(slot_path[slot], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    }
    FUZZ_CHECK(fd >= 0, "cannot make a scratch file: %s", strerror(errno));
    slot_fd[slot] = fd;
}

const char *fuzz_file(int slot, const uint8_t *data, size_t size)
{
    slot_init(slot);
    int fd = slot_fd[slot];
    FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate: %s", strerror(errno));
    size_t done = 0;
    while (done < size) {
        ssize_t w = pwrite(fd, data + done, size - done, (off_t)done);
        FUZZ_CHECK(w > 0 || errno == EINTR, "pwrite: %s", strerror(errno));
        if (w > 0)
            done += (size_t)w;
    }
    return slot_path[slot];
}

const uint8_t *fuzz_file_data(int slot, size_t *size)
{
    slot_init(slot);
    struct stat st;
    FUZZ_CHECK(fstat(slot_fd[slot], &st) == 0, "fstat: %s", strerror(errno));
    size_t n = (size_t)st.st_size;
    if (n + 1 > slot_cap) {
        free(slot_buf);
        slot_cap = n + 1;
        slot_buf = malloc(slot_cap);
        FUZZ_CHECK(slot_buf != NULL, "out of memory (%zu)", n);
    }
    size_t done = 0;
    while (done < n) {
        ssize_t r =
            pread(slot_fd[slot], slot_buf + done, n - done, (off_t)done);
        FUZZ_CHECK(r > 0 || (r < 0 && errno == EINTR), "pread: %s",
                   strerror(errno));
        if (r > 0)
            done += (size_t)r;
    }
    *size = n;
    return slot_buf;
}

/* Output of the views: /dev/null when it is the null device (a scratch
 * file otherwise: never create /dev/null by writing to it). */
static const char *sink_path(void)
{
    static const char *p;
    if (!p) {
        struct stat st;
        if (stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode)) {
            p = "/dev/null";
        } else {
            slot_init(3);
            p = slot_path[3];
        }
    }
    return p;
}

/* ---- opening ---------------------------------------------------------- */

size_t fuzz_nwarnings;

static void warn_check(void *ctx, const char *path, const char *msg)
{
    (void)ctx;
    (void)path;
    FUZZ_CHECK(msg && *msg && !strchr(msg, '\n'),
               "a warning must be one line: \"%s\"", msg ? msg : "(null)");
    fuzz_nwarnings++;
}

struct evp_open_opts fuzz_open_opts(int format)
{
    struct evp_open_opts o = {.warn = warn_check, .format = format};
    return o;
}

struct evp_trace *fuzz_open(const char *path, int format)
{
    struct evp_open_opts o = fuzz_open_opts(format);
    struct evp_trace *t = NULL;
    char err[512];
    err[0] = '\0';
    fuzz_nwarnings = 0;
    int rc = evp_trace_open(path, &o, &t, err, sizeof err);
    if (rc < 0) {
        FUZZ_CHECK(t == NULL, "a failed open returned a trace");
        FUZZ_CHECK(err[0] && !strchr(err, '\n'),
                   "the error must be one line: \"%s\"", err);
        FUZZ_CHECK(fuzz_nwarnings == 0,
                   "a failed open printed %zu warnings besides its error",
                   fuzz_nwarnings);
        return NULL;
    }
    FUZZ_CHECK(t != NULL, "open succeeded without a trace");

    /* Warnings: all kept, the first 20 (and a "more follow") passed on. */
    size_t nw = evp_trace_nwarnings(t);
    FUZZ_CHECK(fuzz_nwarnings == (nw > 20 ? 21 : nw),
               "%zu warnings kept, %zu delivered", nw, fuzz_nwarnings);
    for (size_t i = 0; i < nw; i++) {
        const char *w = evp_trace_warning(t, i);
        FUZZ_CHECK(w && *w && !strchr(w, '\n'), "warning %zu", i);
    }
    FUZZ_CHECK(evp_trace_warning(t, nw) == NULL, "warning past the end");

    const struct evp_trace_info *in = evp_trace_info(t);
    FUZZ_CHECK(in->path && in->producer && in->executable && in->argv &&
                   in->python_version && in->clock && in->opcode_source,
               "info strings must never be NULL");
    uint64_t events = 0;
    for (size_t i = 0; i < evp_trace_nstreams(t); i++) {
        const struct evp_stream *s = evp_trace_stream(t, i);
        FUZZ_CHECK(s && s->name, "stream %zu", i);
        if (i)
            FUZZ_CHECK(evp_trace_stream(t, i - 1)->id < s->id,
                       "streams in id order, each once");
        events += s->events;
    }
    FUZZ_CHECK(evp_trace_stream(t, evp_trace_nstreams(t)) == NULL,
               "stream past the end");
    FUZZ_CHECK(events == in->events, "stream events %llu, trace %llu",
               (unsigned long long)events, (unsigned long long)in->events);
    for (uint32_t id = 0; id <= evp_trace_nfuncs(t) + 1; id++) {
        const struct evp_func *f = evp_trace_func(t, id);
        FUZZ_CHECK(!f || (id && f->name && f->file), "function %u", id);
    }
    for (size_t i = 0; i < evp_trace_meta_count(t); i++) {
        const char *k, *v;
        FUZZ_CHECK(evp_trace_meta_at(t, i, &k, &v) == 0 && k && v,
                   "metadata %zu", i);
    }
    return t;
}

/* ---- replay and views ---------------------------------------------------- */

struct check {
    struct evp_trace *t;
    const struct evp_stream *cur;
    uint64_t n;     /* events of the current stream */
    uint64_t total; /* of all streams */
    int in_stream;
};

static int ck_begin(void *ctx, const struct evp_stream *s)
{
    struct check *c = ctx;
    FUZZ_CHECK(!c->in_stream, "begin_stream twice");
    c->in_stream = 1;
    c->cur = s;
    c->n = 0;
    return 0;
}

static int ck_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct check *c = ctx;
    FUZZ_CHECK(c->in_stream && n > 0, "events outside a stream");
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        FUZZ_CHECK(e->depth >= 0, "negative depth %d", e->depth);
        FUZZ_CHECK(!(e->flags & ~0xfu), "flags %#x", e->flags);
        FUZZ_CHECK(e->kind != EVP_EV_LOG_WRITTEN,
                   "a log record reached a view that did not ask for them");
        if (e->flags & EVP_EVF_LAST)
            FUZZ_CHECK(e->elapsed == 0, "the last event has no elapsed time");
    }
    c->n += n;
    return 0;
}

static int ck_end(void *ctx, const struct evp_stream *s)
{
    struct check *c = ctx;
    FUZZ_CHECK(c->in_stream && s == c->cur, "end_stream without begin");
    /* The reader counts what the chunk prefixes promise; damaged event
     * data can only deliver fewer. */
    FUZZ_CHECK(c->n <= s->events,
               "stream %u: %llu events replayed, %llu "
               "promised",
               s->id, (unsigned long long)c->n, (unsigned long long)s->events);
    c->total += c->n;
    c->in_stream = 0;
    return 0;
}

void fuzz_views(struct evp_trace *t, unsigned pick)
{
    size_t ns = evp_trace_nstreams(t);
    uint32_t nf = evp_trace_nfuncs(t);

    /* The engine itself, with every option. */
    struct evp_func_stats *fs = calloc((size_t)nf + 1, sizeof *fs);
    FUZZ_CHECK(fs != NULL, "out of memory");
    struct evp_replay_stats st;
    struct check c = {.t = t};
    static const struct evp_replay_ops ops = {ck_begin, ck_events, ck_end,
                                              NULL};
    struct evp_replay_opts ro = {.compensate = (int)(pick & 1),
                                 .stream = -1,
                                 .func_stats = fs,
                                 .stats = &st};
    FUZZ_CHECK(evp_replay(t, &ro, &ops, &c) == 0, "replay failed");
    FUZZ_CHECK(!c.in_stream, "a stream was not ended");
    FUZZ_CHECK(st.events == evp_trace_info(t)->events, "stats.events");
    FUZZ_CHECK(st.max_depth >= 0, "max depth");
    free(fs);

    FILE *out = fopen(sink_path(), "w");
    FUZZ_CHECK(out != NULL, "%s: %s", sink_path(), strerror(errno));
    struct evp_tree_opts to = {.format = (enum evp_tree_format)(pick % 3),
                               .compensate = (int)(pick >> 2 & 1),
                               .stream = -1};
    if (ns && pick >> 3 & 1)
        to.stream = (long)(pick >> 4) % (long)ns;
    FUZZ_CHECK(evp_view_tree(t, out, &to) == 0, "tree view");
    struct evp_summary_opts so = {.sort = (enum evp_sort)(pick >> 5 & 3),
                                  .funcs = (int)(pick >> 7 & 1) | !(pick & 3),
                                  .group_specialized = (int)(pick >> 8 & 1),
                                  .compensate = (int)(pick >> 9 & 1),
                                  .stream = -1};
    if (ns && pick >> 10 & 1)
        so.stream = (long)(pick >> 11) % (long)ns;
    /* The summary sizes tables for every 16-bit key on each run, the
     * slowest view by far: a quarter of the inputs are enough for it. */
    if (!(pick >> 12 & 3))
        FUZZ_CHECK(evp_view_summary(t, out, &so) == 0, "summary view");
    FUZZ_CHECK(evp_view_info(t, out) == 0, "info view");
    if (evp_sampled_only(t)) {
        /* a sampled trace's own views: speedscope's sampled profiles,
         * the diff of shares (against itself) */
        struct evp_chrome_opts co = {.ops = (int)(pick >> 13 & 1),
                                     .phases = (int)(pick >> 14 & 1)};
        FUZZ_CHECK(evp_view_speedscope(t, out, &co) == 0, "speedscope view");
        FUZZ_CHECK(evp_view_chrome(t, out, &co) == 0, "sampled chrome view");
        struct evp_diff_opts dop = {.funcs = 1};
        FUZZ_CHECK(evp_view_diff(t, t, out, &dop) == 0, "sampled diff view");
        /* and the profiles of its samples */
        struct evp_profile_opts po = {.ops = (int)(pick >> 13 & 1),
                                      .phases = (int)(pick >> 14 & 1),
                                      .max_depth = (size_t)(pick >> 15 & 7)};
        FUZZ_CHECK(evp_view_pprof(t, out, &po) == 0, "sampled pprof view");
        po.ops = po.phases = 0;
        FUZZ_CHECK(evp_view_pstats(t, out, &po) == 0, "sampled pstats view");
        FUZZ_CHECK(evp_view_callgrind(t, out, &po) == 0,
                   "sampled callgrind view");
    }
    FUZZ_CHECK(fclose(out) == 0, "closing the sink");

    /* Folded stacks, and (for some inputs) the flame graph drawn from
     * them, as `evalprof flamegraph TRACE` does. */
    char *folded = NULL;
    size_t flen = 0;
    FILE *m = open_memstream(&folded, &flen);
    FUZZ_CHECK(m != NULL, "open_memstream");
    struct evp_folded_opts fo = {.ops = (int)(pick >> 14 & 1),
                                 .phases = (int)(pick >> 15 & 1),
                                 .compensate = (int)(pick & 1),
                                 .stream = -1};
    FUZZ_CHECK(evp_view_folded(t, m, &fo) == 0, "folded view");
    FUZZ_CHECK(fclose(m) == 0, "closing the folded stream");
    /* Every line ends in a count: the flame graph takes them all, but
     * for a count past what its sums hold exactly (a damaged trace's
     * timestamps can make one), which it refuses by name. */
    struct evp_flame *fl = evp_flame_new();
    struct evp_flame_stats fst = {0};
    FUZZ_CHECK(fl != NULL, "evp_flame_new");
    int frc = evp_flame_add_folded(fl, folded, flen, &fst);
    FUZZ_CHECK(frc == 0 || (frc == -ERANGE && fst.bad_line > 0 &&
                            strtod(fst.bad_count, NULL) > EVP_FLAME_MAX_COUNT),
               "reading the folded stacks back (%d)", frc);
    FUZZ_CHECK(fst.malformed == 0, "folded view wrote %llu malformed lines",
               (unsigned long long)fst.malformed);
    if (!(pick >> 16 & 3) && evp_flame_total(fl) > 0) {
        out = fopen(sink_path(), "w");
        FUZZ_CHECK(out != NULL, "%s: %s", sink_path(), strerror(errno));
        struct evp_flame_opts flo = {.countname = "ns",
                                     .icicle = (int)(pick >> 18 & 1)};
        FUZZ_CHECK(evp_flame_write_svg(fl, out, &flo, &fst) == 0,
                   "flame graph");
        FUZZ_CHECK(fclose(out) == 0, "closing the sink");
    }
    evp_flame_free(fl);
    free(folded);
}

/* ---- round trip -----------------------------------------------------------
 */

struct rec {
    uint64_t ts;
    uint32_t kind, arg;
    uint16_t aux;
};

struct stream_recs {
    uint32_t id;
    uint64_t tid;
    char *name;
    struct rec *r;
    size_t n, cap;
    int monotonic; /* timestamps never go back nor jump by 2^59 */
};

struct collect {
    struct stream_recs *s;
    size_t n, cap;
};

static int co_begin(void *ctx, const struct evp_stream *s)
{
    struct collect *c = ctx;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->s = realloc(c->s, c->cap * sizeof *c->s);
        FUZZ_CHECK(c->s != NULL, "out of memory");
    }
    struct stream_recs *sr = &c->s[c->n++];
    memset(sr, 0, sizeof *sr);
    sr->id = s->id;
    sr->tid = s->tid;
    sr->name = strdup(s->name);
    sr->monotonic = 1;
    return 0;
}

static int co_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct collect *c = ctx;
    struct stream_recs *sr = &c->s[c->n - 1];
    for (size_t i = 0; i < n; i++) {
        if (sr->n == sr->cap) {
            sr->cap = sr->cap ? 2 * sr->cap : 256;
            sr->r = realloc(sr->r, sr->cap * sizeof *sr->r);
            FUZZ_CHECK(sr->r != NULL, "out of memory");
        }
        if (sr->n) {
            uint64_t prev = sr->r[sr->n - 1].ts;
            if (ev[i].ts < prev || ev[i].ts - prev > (UINT64_C(1) << 59))
                sr->monotonic = 0;
        }
        sr->r[sr->n++] =
            (struct rec){ev[i].ts, ev[i].kind, ev[i].arg, ev[i].aux};
    }
    return 0;
}

static void collect(struct evp_trace *t, struct collect *c)
{
    memset(c, 0, sizeof *c);
    static const struct evp_replay_ops ops = {co_begin, co_events, NULL, NULL};
    struct evp_replay_opts o = {.stream = -1, .keep_log = 1};
    FUZZ_CHECK(evp_replay(t, &o, &ops, c) == 0, "replay failed");
}

static void collect_free(struct collect *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->s[i].name);
        free(c->s[i].r);
    }
    free(c->s);
}

static const char *fname(struct evp_trace *t, uint32_t id)
{
    const struct evp_func *f = evp_trace_func(t, id);
    return f ? f->name : NULL;
}

/* A (the fuzzed trace) against B (its binary copy): everything equal. */
static void same_binary(struct evp_trace *ta, struct collect *a,
                        struct evp_trace *tb, struct collect *b)
{
    FUZZ_CHECK(a->n == b->n, "%zu streams became %zu", a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        struct stream_recs *x = &a->s[i], *y = &b->s[i];
        FUZZ_CHECK(x->id == y->id && x->tid == y->tid &&
                       strcmp(x->name, y->name) == 0,
                   "stream %zu: %u/%llu/%s became %u/%llu/%s", i, x->id,
                   (unsigned long long)x->tid, x->name, y->id,
                   (unsigned long long)y->tid, y->name);
        FUZZ_CHECK(x->n == y->n, "stream %u: %zu events became %zu", x->id,
                   x->n, y->n);
        for (size_t k = 0; k < x->n; k++) {
            const struct rec *p = &x->r[k], *q = &y->r[k];
            FUZZ_CHECK(p->kind == q->kind && p->arg == q->arg &&
                           p->aux == q->aux,
                       "stream %u event %zu: %u/%u/%u became %u/%u/%u", x->id,
                       k, p->kind, p->arg, p->aux, q->kind, q->arg, q->aux);
            FUZZ_CHECK(!x->monotonic || p->ts == q->ts,
                       "stream %u event %zu: time %llu became %llu", x->id, k,
                       (unsigned long long)p->ts, (unsigned long long)q->ts);
        }
    }
    uint32_t nf = evp_trace_nfuncs(ta);
    if (evp_trace_nfuncs(tb) > nf)
        nf = evp_trace_nfuncs(tb);
    for (uint32_t id = 1; id <= nf; id++) {
        const struct evp_func *f = evp_trace_func(ta, id);
        const struct evp_func *g = evp_trace_func(tb, id);
        /* a damaged stack table's broken chains are written under a
         * function "<unknown stack>" of their own (evpwrite.c) */
        if (!f && g && id == evp_trace_nfuncs(ta) + 1 &&
            strcmp(g->name, EVP_STACK_UNKNOWN_NAME) == 0)
            continue;
        FUZZ_CHECK(!f == !g, "function %u %s", id, f ? "lost" : "appeared");
        if (f)
            FUZZ_CHECK(strcmp(f->name, g->name) == 0 &&
                           strcmp(f->file, g->file) == 0 && f->line == g->line,
                       "function %u changed", id);
    }
    /* Opcode names: every number the events use, and the usual range. */
    for (size_t i = 0; i < a->n; i++)
        for (size_t k = 0; k <= a->s[i].n; k++) {
            unsigned op = k < a->s[i].n ? a->s[i].r[k].aux : (unsigned)k % 512;
            const char *p = evp_trace_opname(ta, op),
                       *q = evp_trace_opname(tb, op);
            FUZZ_CHECK(!p == !q && (!p || strcmp(p, q) == 0) &&
                           evp_trace_opbase(ta, op) == evp_trace_opbase(tb, op),
                       "opcode %u changed", op);
        }
    for (unsigned op = 0; op < 512; op++) {
        const char *p = evp_trace_opname(ta, op), *q = evp_trace_opname(tb, op);
        FUZZ_CHECK(!p == !q && (!p || strcmp(p, q) == 0) &&
                       evp_trace_opbase(ta, op) == evp_trace_opbase(tb, op),
                   "opcode %u changed", op);
    }
    const struct evp_trace_info *ia = evp_trace_info(ta),
                                *ib = evp_trace_info(tb);
    FUZZ_CHECK(strcmp(ia->producer, ib->producer) == 0 &&
                   strcmp(ia->executable, ib->executable) == 0 &&
                   strcmp(ia->argv, ib->argv) == 0 &&
                   strcmp(ia->python_version, ib->python_version) == 0 &&
                   ia->pid == ib->pid && ia->start_ns == ib->start_ns &&
                   ia->has_oparg == ib->has_oparg && ia->dropped == ib->dropped,
               "trace information changed");
}

/* A against C (its text export): the same events, with functions
 * compared by name (the text format may renumber them).  With FULL 0 (A
 * was binary, which can hold what text cannot: an aux on any kind, a tab
 * in a file name) only the streams, the kinds and the times. */
static void same_text(struct evp_trace *ta, struct collect *a,
                      struct evp_trace *tc, struct collect *c, int full)
{
    int oparg = evp_trace_info(ta)->has_oparg;
    if (!full) {
        /* Binary names may be anything (empty, multi-line): compare the
         * streams that have events, by id. */
        size_t j = 0;
        for (size_t i = 0; i < a->n; i++) {
            if (!a->s[i].n)
                continue;
            while (j < c->n && !c->s[j].n)
                j++;
            FUZZ_CHECK(j < c->n && c->s[j].id == a->s[i].id, "stream %u lost",
                       a->s[i].id);
            struct stream_recs *x = &a->s[i], *y = &c->s[j++];
            FUZZ_CHECK(x->n == y->n, "stream %u: %zu events became %zu", x->id,
                       x->n, y->n);
            for (size_t k = 0; k < x->n; k++)
                FUZZ_CHECK(x->r[k].kind == y->r[k].kind &&
                               (x->r[k].kind == EVP_EV_LOG_WRITTEN ||
                                x->r[k].ts == y->r[k].ts),
                           "stream %u event %zu: %u at %llu became %u at %llu",
                           x->id, k, x->r[k].kind,
                           (unsigned long long)x->r[k].ts, y->r[k].kind,
                           (unsigned long long)y->r[k].ts);
        }
        while (j < c->n && !c->s[j].n)
            j++;
        FUZZ_CHECK(j == c->n, "stream %u appeared", c->s[j].id);
        return;
    }
    FUZZ_CHECK(a->n == c->n, "%zu streams became %zu", a->n, c->n);
    for (size_t i = 0; i < a->n; i++) {
        struct stream_recs *x = &a->s[i], *y = &c->s[i];
        FUZZ_CHECK(x->id == y->id && x->tid == y->tid &&
                       strcmp(x->name, y->name) == 0,
                   "stream %zu changed", i);
        FUZZ_CHECK(x->n == y->n, "stream %u: %zu events became %zu", x->id,
                   x->n, y->n);
        for (size_t k = 0; k < x->n; k++) {
            const struct rec *p = &x->r[k], *q = &y->r[k];
            FUZZ_CHECK(p->kind == q->kind,
                       "stream %u event %zu: kind %u "
                       "became %u",
                       x->id, k, p->kind, q->kind);
            if (p->kind == EVP_EV_LOG_WRITTEN) {
                /* An annotation: its time is its argument. */
                FUZZ_CHECK(p->arg == q->arg, "log record %zu", k);
                continue;
            }
            FUZZ_CHECK(p->ts == q->ts,
                       "stream %u event %zu: time %llu "
                       "became %llu",
                       x->id, k, (unsigned long long)p->ts,
                       (unsigned long long)q->ts);
            const struct evp_kind_info *ki = evp_kind_info(p->kind);
            if (ki && ki->arg == EVP_ARG_FUNC) {
                const char *n1 = fname(ta, p->arg), *n2 = fname(tc, q->arg);
                FUZZ_CHECK(
                    n1 ? n2 && strcmp(n1, n2) == 0 : !n2 && p->arg == q->arg,
                    "stream %u event %zu: function %u (%s) became "
                    "%u (%s)",
                    x->id, k, p->arg, n1 ? n1 : "-", q->arg, n2 ? n2 : "-");
            } else if (ki && ki->arg == EVP_ARG_OP) {
                FUZZ_CHECK(p->aux == q->aux && (!oparg || p->arg == q->arg),
                           "stream %u event %zu: op changed", x->id, k);
            } else {
                FUZZ_CHECK(p->arg == q->arg && p->aux == q->aux,
                           "stream %u event %zu: argument changed", x->id, k);
            }
        }
    }
}

void fuzz_roundtrip(struct evp_trace *t, unsigned pick, int text)
{
    char err[512];
    struct collect a, b;
    collect(t, &a);

    /* Binary copy: slot 1 (fuzz_file makes the in-memory file). */
    const char *p = fuzz_file(1, NULL, 0);
    FUZZ_CHECK(evp_trace_write_evp(t, p, (int)(pick & 1), err, sizeof err) == 0,
               "writing the binary copy: %s", err);
    struct evp_trace *tb = fuzz_open(p, 1);
    FUZZ_CHECK(tb != NULL, "the binary copy does not open");
    FUZZ_CHECK(evp_trace_nwarnings(tb) == 0, "the binary copy warns: %s",
               evp_trace_warning(tb, 0));
    collect(tb, &b);
    same_binary(t, &a, tb, &b);
    collect_free(&b);
    evp_trace_close(tb);

    if (text) {
        p = fuzz_file(2, NULL, 0);
        FUZZ_CHECK(evp_trace_write_text(t, p, err, sizeof err) == 0,
                   "writing the text copy: %s", err);
        struct evp_trace *tc = fuzz_open(p, 2);
        FUZZ_CHECK(tc != NULL, "the text copy does not open");
        /* Times that go backwards were written as they were, and are
         * pointed out again; nothing else may be, but for what a binary
         * trace can hold and text cannot: an empty metadata key, a start
         * time that is not a number, an opcode name with blanks. */
        for (size_t i = 0; i < evp_trace_nwarnings(tc); i++) {
            const char *w = evp_trace_warning(tc, i);
            FUZZ_CHECK(
                strstr(w, "earlier than the previous event") ||
                    (text == 2 &&
                     (strstr(w, "'# meta:'") || strstr(w, "'# start time:'") ||
                      strstr(w, "'# opcode:'") || strstr(w, "malformed line"))),
                "the text copy warns: %s", w);
        }
        collect(tc, &b);
        same_text(t, &a, tc, &b, text == 1);
        collect_free(&b);
        evp_trace_close(tc);
    }
    collect_free(&a);
}
