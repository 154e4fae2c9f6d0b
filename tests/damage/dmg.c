/*
 * Helpers of the damage tests: see dmg.h.  The recorded trace is real: it
 * goes through the recorder's buffers, writer thread and codec exactly as
 * a traced interpreter's would, only with tiny buffers so that a few
 * hundred events span many chunks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmg.h"
#include "evalprof/format.h"
#include "evalprof/recorder.h"
#include "views.h"

/* ---- files ------------------------------------------------------------ */

static char tmpdir[256];

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

static void rm_tmpdir(void)
{
    if (tmpdir[0] && !getenv("EVP_KEEP_TMP"))
        nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *dmg_fmt(const char *f, ...)
{
    static char buf[1024];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

const char *dmg_tmpdir(void)
{
    if (!tmpdir[0]) {
        /* Thousands of small files are written and read back: memory
         * (/dev/shm) when there is some, else TMPDIR or /tmp. */
        const char *base = getenv("TMPDIR");
        struct stat st;
        if (!base || !*base)
            base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
                           access("/dev/shm", W_OK) == 0
                       ? "/dev/shm"
                       : "/tmp";
        snprintf(tmpdir, sizeof tmpdir, "%s/evp-damage-XXXXXX", base);
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(rm_tmpdir);
    }
    return tmpdir;
}

const char *dmg_path(const char *name)
{
    static char bufs[8][512];
    static unsigned k;
    char *b = bufs[k++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", dmg_tmpdir(), name);
    return b;
}

long dmg_read(const char *path, uint8_t **data)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 4096, n = 0;
    uint8_t *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                b = NULL;
            }
            b = nb;
        }
    }
    fclose(f);
    if (!b)
        return -1;
    *data = b;
    return (long)n;
}

int dmg_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = len ? fwrite(data, 1, len, f) : 0;
    return fclose(f) == 0 && w == len ? 0 : -1;
}

/* ---- recording ----------------------------------------------------------- */

uint64_t dmg_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

struct worker {
    int events;
    uint64_t seed;
    uint32_t funcs[6];
    char name[32];
};

static void frame(struct worker *w, uint64_t *rs, int depth, int *left)
{
    uint32_t f = w->funcs[dmg_rand(rs) % 6];
    evp_rec_event(EVP_EV_ENTER, f);
    evp_rec_event(EVP_EV_LOOP_ENTER, 0);
    evp_rec_event(EVP_EV_LOOP_FAST, 0);
    *left -= 3;
    while (*left > 0) {
        evp_rec_event(EVP_EV_DISPATCH, 0);
        evp_rec_op((unsigned)(dmg_rand(rs) % 4 ? 100 + dmg_rand(rs) % 30
                                               : 300 + dmg_rand(rs) % 3),
                   (uint32_t)(dmg_rand(rs) % 300));
        *left -= 2;
        unsigned roll = (unsigned)(dmg_rand(rs) % 10);
        if (roll < 3 && depth < 12) {
            frame(w, rs, depth + 1, left);
        } else if (roll == 3) {
            evp_rec_event(EVP_EV_LOOP_EXCEPTION, 0);
            evp_rec_event(EVP_EV_LOOP_ERROR, 0);
            *left -= 2;
        } else if (roll == 4) {
            evp_rec_event(EVP_EV_LOOP_SLOW, 0);
            *left -= 1;
        } else if (roll >= 8) {
            break;
        }
    }
    evp_rec_event(EVP_EV_LOOP_EXIT, 0);
    evp_rec_event(EVP_EV_EXIT, f);
    evp_rec_event(EVP_EV_RUNTIME_OTHER, 0);
    *left -= 3;
}

static void *worker_main(void *p)
{
    struct worker *w = p;
    uint64_t rs = w->seed;
    evp_rec_thread_attach(w->name);
    int left = w->events;
    while (left > 0)
        frame(w, &rs, 0, &left);
    evp_rec_thread_detach();
    return NULL;
}

int dmg_record(const char *path, int threads, int events)
{
    static const struct evp_opcode_desc ops[] = {
        {100, 100, "LOAD_CONST"},
        {101, 101, "LOAD_NAME"},
        {124, 124, "LOAD_FAST"},
        {125, 125, "STORE_FAST"},
        {300, 124, "LOAD_FAST__LOAD_FAST"},
        {301, 125, "STORE_FAST__LOAD_FAST"},
        {302, 100, "LOAD_CONST__LOAD_FAST"},
    };
    static const char *const names[] = {
        "<module>", "main", "f", "g", "Klass.method", "h\twith\ttabs"};
    struct evp_rec_config cfg = {
        .path = path,
        .producer = EVP_PRODUCER_SYNTHETIC,
        .can_emit = EVP_KINDS_CLASSIC,
        .flags = EVP_REC_NO_ATEXIT | EVP_REC_QUIET,
        .buffer_events = 16,
    };
    int rc = evp_rec_open(&cfg);
    if (rc < 0)
        return rc;
    evp_rec_meta("python.version", "3.13.0");
    evp_rec_opcodes(ops, sizeof ops / sizeof ops[0]);
    struct worker w[DMG_MAX_STREAMS] = {0};
    if (threads > DMG_MAX_STREAMS)
        threads = DMG_MAX_STREAMS;
    uint32_t funcs[6];
    for (int f = 0; f < 6; f++)
        funcs[f] = evp_rec_func(names[f], f ? "mod.py" : "", 10u * (unsigned)f);
    evp_rec_event(EVP_EV_INIT, 0);
    pthread_t tid[DMG_MAX_STREAMS];
    for (int i = 0; i < threads; i++) {
        w[i].events = events;
        w[i].seed = 0x9e3779b97f4a7c15u * (uint64_t)(i + 1);
        memcpy(w[i].funcs, funcs, sizeof funcs);
        snprintf(w[i].name, sizeof w[i].name, "worker %d", i);
        if (pthread_create(&tid[i], NULL, worker_main, &w[i]) != 0)
            return -EAGAIN;
    }
    for (int i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    evp_rec_event(EVP_EV_FINI, 0);
    rc = evp_rec_close();
    struct evp_rec_stats st;
    evp_rec_get_stats(&st);
    if (rc == 0 && st.dropped)
        rc = -ENOBUFS;
    return rc;
}

/* ---- opening and replaying ---------------------------------------------- */

static void capture(void *ctx, const char *path, const char *msg)
{
    (void)path;
    struct dmg_warn *w = ctx;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        char **m = realloc(w->msg, cap * sizeof *m);
        if (!m)
            abort();
        w->msg = m;
        w->cap = cap;
    }
    w->msg[w->n++] = strdup(msg);
}

void dmg_warn_free(struct dmg_warn *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->msg[i]);
    free(w->msg);
    memset(w, 0, sizeof *w);
}

int dmg_open(const char *path, int format, struct evp_trace **t, char *err,
             size_t errlen, struct dmg_warn *w)
{
    dmg_warn_free(w);
    struct evp_open_opts o = {.warn = capture, .warn_ctx = w, .format = format};
    err[0] = '\0';
    return evp_trace_open(path, &o, t, err, errlen);
}

int dmg_warned(const struct dmg_warn *w, const char *needle)
{
    for (size_t i = 0; i < w->n; i++)
        if (strstr(w->msg[i], needle))
            return 1;
    return 0;
}

struct rctx {
    struct dmg_replay *r;
    struct dmg_stream *cur;
};

static int r_begin(void *ctx, const struct evp_stream *s)
{
    struct rctx *c = ctx;
    if (c->r->nstreams == DMG_MAX_STREAMS)
        return -E2BIG;
    c->cur = &c->r->s[c->r->nstreams++];
    c->cur->id = s->id;
    return 0;
}

static int r_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct rctx *c = ctx;
    struct dmg_stream *s = c->cur;
    for (size_t i = 0; i < n; i++) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 256;
            struct dmg_ev *e = realloc(s->ev, cap * sizeof *e);
            if (!e)
                return -ENOMEM;
            s->ev = e;
            s->cap = cap;
        }
        s->ev[s->n++] =
            (struct dmg_ev){ev[i].kind,  ev[i].arg,  ev[i].aux, ev[i].flags,
                            ev[i].depth, ev[i].func, ev[i].ts,  ev[i].elapsed};
    }
    return 0;
}

void dmg_replay_all(struct evp_trace *t, struct dmg_replay *r)
{
    memset(r, 0, sizeof *r);
    struct rctx c = {r, NULL};
    static const struct evp_replay_ops ops = {r_begin, r_events, NULL, NULL};
    struct evp_replay_opts o = {.stream = -1, .keep_log = 1};
    r->rc = evp_replay(t, &o, &ops, &c);
}

void dmg_replay_free(struct dmg_replay *r)
{
    for (size_t i = 0; i < r->nstreams; i++)
        free(r->s[i].ev);
    memset(r, 0, sizeof *r);
}

int dmg_have_dev_null(void)
{
    struct stat st;
    return stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode);
}

int dmg_views(struct evp_trace *t)
{
    /* Output is thrown away: /dev/null, or a scratch file when /dev/null
     * is not the device it should be (never create it by writing). */
    const char *sink = dmg_have_dev_null() ? "/dev/null" : dmg_path("sink");
    FILE *out = fopen(sink, "w");
    if (!out)
        return 1;
    int bad = 0;
    for (int f = EVP_TREE_SIMPLE_INDENT; f <= EVP_TREE_RAW; f++) {
        struct evp_tree_opts o = {.format = (enum evp_tree_format)f,
                                  .compensate = f != EVP_TREE_SIMPLE,
                                  .stream = -1};
        bad += evp_view_tree(t, out, &o) < 0;
    }
    /* One summary a call (it is the slowest view), its options in turn:
     * each sort, specialized opcodes folded or not, one stream alone. */
    static unsigned turn;
    turn++;
    struct evp_summary_opts so = {.sort = (enum evp_sort)(turn % 4),
                                  .funcs = 1,
                                  .group_specialized = (turn / 4) & 1,
                                  .compensate = turn & 1,
                                  .stream = -1};
    if (turn % 3 == 0 && evp_trace_nstreams(t))
        so.stream = (long)(turn % evp_trace_nstreams(t));
    bad += evp_view_summary(t, out, &so) < 0;
    bad += evp_view_info(t, out) < 0;
    fclose(out);
    char err[512];
    bad += evp_trace_write_text(t, sink, err, sizeof err) < 0;
    bad += evp_trace_write_evp(t, sink, turn & 1, err, sizeof err) < 0;
    return bad;
}

const struct dmg_stream *dmg_stream(const struct dmg_replay *r, uint32_t id)
{
    for (size_t i = 0; i < r->nstreams; i++)
        if (r->s[i].id == id)
            return &r->s[i];
    return NULL;
}

size_t dmg_total(const struct dmg_replay *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nstreams; i++)
        n += r->s[i].n;
    return n;
}

int dmg_same_fact(const struct dmg_ev *a, const struct dmg_ev *b)
{
    return a->kind == b->kind && a->arg == b->arg && a->aux == b->aux;
}

/* ---- chunk map ------------------------------------------------------------
 */

int dmg_map_chunks(const uint8_t *d, size_t size, struct dmg_map *m)
{
    memset(m, 0, sizeof *m);
    size_t off = EVP_FILE_HEADER_SIZE;
    uint64_t next_first[DMG_MAX_STREAMS] = {0};
    while (off + EVP_CHUNK_HEADER_SIZE <= size) {
        uint32_t len = evp_get_u32(d + off + 8);
        if (evp_get_u32(d + off) != EVP_CHUNK_MAGIC ||
            len > size - off - EVP_CHUNK_HEADER_SIZE ||
            m->n == sizeof m->c / sizeof m->c[0])
            return -1;
        struct dmg_chunk *c = &m->c[m->n++];
        c->off = off;
        c->size = EVP_CHUNK_HEADER_SIZE + len;
        c->type = d[off + 4];
        if (c->type == EVP_CHUNK_EVENTS && !(d[off + 5] & EVP_CHUNK_F_ZSTD)) {
            struct evp_events_prefix pf;
            if (evp_events_prefix_read(d + off + EVP_CHUNK_HEADER_SIZE, len,
                                       &pf) < 0 ||
                pf.stream >= DMG_MAX_STREAMS)
                return -1;
            c->stream = pf.stream;
            c->seq = pf.seq;
            c->count = pf.count;
            /* The recorder writes a stream's chunks in order. */
            c->first = next_first[pf.stream];
            next_first[pf.stream] += pf.count;
        }
        off += c->size;
    }
    return off == size ? 0 : -1;
}

int dmg_chunk_at(const struct dmg_map *m, size_t off)
{
    for (size_t i = 0; i < m->n; i++)
        if (off >= m->c[i].off && off < m->c[i].off + m->c[i].size)
            return (int)i;
    return -1;
}
