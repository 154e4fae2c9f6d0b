/*
 * Binary trace writer for `evalprof import` and `evalprof export --format
 * evp`: any trace the reader can open, written as a `.evp` file.
 *
 * Events go through the replay engine (keeping "log written" records) and
 * are re-encoded with the recorder's codec, so there is one definition of
 * the bytes.  Timestamps are written in nanoseconds of the trace clock
 * (the clock pair in the metadata says so), which keeps imported text
 * traces exact to the nanosecond.  Chunks may be zstd-compressed.
 * A sampled trace's stack table and samples follow its events: the
 * stack nodes whose callers are known, in id order (a caller's id is
 * below its callee's), then each stream's samples re-encoded in runs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "evalprof/replay.h"
#include "internal.h"

#define RUN 65536 /* records per EVENTS chunk */
/* Tables (metadata, functions, stack nodes) are written in chunks of
 * about this many bytes: a reader refuses a chunk longer than
 * EVP_CHUNK_MAX_PAYLOAD, which a program's function table can pass. */
#define TABLE_CHUNK (1u << 20)

struct ewriter {
    struct evp_trace *t;
    FILE *f;
    int level;
    int err;
    struct evp_rec_record *recs;
    size_t n;
    uint32_t stream, seq;
    uint8_t *enc;
    size_t enc_cap;
    uint8_t *z;
    size_t z_cap;
    uint64_t events;
};

static int put_chunk(struct ewriter *w, unsigned type, const uint8_t *p,
                     size_t len)
{
    if (w->err)
        return w->err;
    unsigned flags = 0;
    if (len > EVP_CHUNK_MAX_PAYLOAD) /* one entry larger than a chunk */
        return w->err = -EMSGSIZE;
    if (w->level > 0 && len > 64) {
        size_t bound = ZSTD_compressBound(len) + 4;
        if (evp_grow((void **)&w->z, &w->z_cap, bound, 1, bound))
            return w->err = -ENOMEM;
        size_t zn = ZSTD_compress(w->z + 4, bound - 4, p, len, w->level);
        if (!ZSTD_isError(zn) && zn + 4 < len) {
            evp_put_u32(w->z, (uint32_t)len);
            p = w->z;
            len = zn + 4;
            flags = EVP_CHUNK_F_ZSTD;
        }
    }
    uint8_t h[EVP_CHUNK_HEADER_SIZE];
    evp_chunk_header(h, type, flags, p, (uint32_t)len);
    if (fwrite(h, 1, sizeof h, w->f) != sizeof h ||
        fwrite(p, 1, len, w->f) != len)
        return w->err = -(errno ? errno : EIO);
    return 0;
}

static int flush_run(struct ewriter *w)
{
    if (!w->n)
        return 0;
    size_t need = evp_events_bound(w->n);
    if (evp_grow((void **)&w->enc, &w->enc_cap, need, 1, need))
        return w->err = -ENOMEM;
    struct evp_events_prefix pf = {.stream = w->stream, .seq = w->seq++};
    pf.sync_ticks = pf.sync_ns = w->recs[0].ts;
    size_t len = evp_events_encode(w->enc, &pf, w->recs, w->n, NULL);
    w->events += w->n;
    w->n = 0;
    return put_chunk(w, EVP_CHUNK_EVENTS, w->enc, len);
}

static int ew_begin(void *ctx, const struct evp_stream *s)
{
    struct ewriter *w = ctx;
    w->stream = s->id;
    w->seq = 0;
    uint8_t *p = malloc(2 * EVP_VARINT_MAX + evp_str_bound(s->name));
    if (!p)
        return w->err = -ENOMEM;
    size_t k = evp_thread_put(p, s->id, s->tid, s->name);
    int rc = put_chunk(w, EVP_CHUNK_THREAD, p, k);
    free(p);
    return rc;
}

static int ew_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct ewriter *w = ctx;
    for (size_t i = 0; i < n; i++) {
        struct evp_rec_record *r = &w->recs[w->n++];
        r->ts = ev[i].ts;
        r->kind = (uint16_t)ev[i].kind;
        r->aux = ev[i].aux;
        r->arg = ev[i].arg;
        if (w->n == RUN && flush_run(w) < 0)
            return w->err;
    }
    return w->err;
}

static int ew_end(void *ctx, const struct evp_stream *s)
{
    (void)s;
    return flush_run(ctx);
}

static int write_meta(struct ewriter *w)
{
    struct evp_trace *t = w->t;
    const struct evp_trace_info *in = &t->info;
    char v[64];
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    int oom = 0;
#define ADD(k, val)                                                            \
    do {                                                                       \
        size_t kl = strlen(k) + 1, vl = strlen(val) + 1;                       \
        if (len && len + kl + vl > TABLE_CHUNK) {                              \
            put_chunk(w, EVP_CHUNK_META, buf, len);                            \
            len = 0;                                                           \
        }                                                                      \
        if (evp_grow((void **)&buf, &cap, len + kl + vl, 1, 1024)) {           \
            oom = 1;                                                           \
            break;                                                             \
        }                                                                      \
        memcpy(buf + len, k, kl);                                              \
        memcpy(buf + len + kl, val, vl);                                       \
        len += kl + vl;                                                        \
    } while (0)
    for (size_t i = 0; i < t->meta.n; i += 2)
        if (!evp_meta_is_clock(t->meta.kv[i]))
            ADD(t->meta.kv[i], t->meta.kv[i + 1]);
    ADD("clock", in->text ? "text" : "monotonic");
    ADD("clock.hz", "1000000000.0");
    snprintf(v, sizeof v, "%" PRIu64, in->start_ns);
    ADD("start.ticks", v);
    ADD("start.clock_ns", v);
    if (in->event_cost_ns > 0)
        ADD("event_cost.ticks", evp_fmt_exact(v, sizeof v, in->event_cost_ns));
    ADD("oparg", in->has_oparg ? "1" : "0");
#undef ADD
    if (oom) {
        free(buf);
        return w->err = -ENOMEM;
    }
    int rc = put_chunk(w, EVP_CHUNK_META, buf, len);
    free(buf);
    return rc;
}

/* Entries of a table being written: counted, after room for the count's
 * varint, and written as a chunk when TABLE_CHUNK long (table_put). */
struct table {
    unsigned type;
    uint8_t *p; /* EVP_VARINT_MAX, then the entries */
    size_t k;   /* bytes of entries */
    size_t n;
};

static int table_put(struct ewriter *w, struct table *tb)
{
    if (!tb->n)
        return w->err;
    size_t h = evp_varint_put(tb->p, tb->n);
    memmove(tb->p + h, tb->p + EVP_VARINT_MAX, tb->k);
    int rc = put_chunk(w, tb->type, tb->p, h + tb->k);
    tb->k = tb->n = 0;
    return rc;
}

/* The buffer for a table whose largest entry takes ENTRY bytes. */
static int table_init(struct ewriter *w, struct table *tb, unsigned type,
                      size_t entry)
{
    *tb = (struct table){.type = type};
    tb->p = malloc(EVP_VARINT_MAX + TABLE_CHUNK + entry);
    return tb->p ? 0 : (w->err = -ENOMEM);
}

/* Room for the next entry, of at most NEED bytes: the table written
 * first when the entry would take it past TABLE_CHUNK (an entry larger
 * than that goes alone in its chunk). */
static uint8_t *table_next(struct ewriter *w, struct table *tb, size_t need)
{
    if (tb->k && tb->k + need > TABLE_CHUNK && table_put(w, tb) < 0)
        return NULL;
    return tb->p + EVP_VARINT_MAX + tb->k;
}

/* The bytes F's entry in a FUNCS chunk may take. */
static size_t func_entry_bound(const struct evp_func *f)
{
    return 2 * EVP_VARINT_MAX + evp_str_bound(f->name) + evp_str_bound(f->file);
}

static int write_tables(struct ewriter *w)
{
    struct evp_trace *t = w->t;
    size_t cap = EVP_VARINT_MAX, n = 0, entry = 0;
    for (unsigned op = 0; op < t->nops; op++)
        if (t->ops[op].name) {
            cap += 2 * EVP_VARINT_MAX + evp_str_bound(t->ops[op].name);
            n++;
        }
    for (size_t id = 1; id < t->nfuncs; id++)
        if (t->funcs[id].name && func_entry_bound(&t->funcs[id]) > entry)
            entry = func_entry_bound(&t->funcs[id]);
    uint8_t *p = malloc(cap); /* 2^16 opcodes at most: one chunk */
    if (!p)
        return w->err = -ENOMEM;
    int rc = 0;
    if (n) {
        size_t k = evp_varint_put(p, n);
        for (unsigned op = 0; op < t->nops; op++) {
            const char *nm = t->ops[op].name;
            if (!nm)
                continue;
            k += evp_opcode_entry_put(p + k, op, t->ops[op].base, nm);
        }
        rc = put_chunk(w, EVP_CHUNK_OPCODES, p, k);
    }
    free(p);
    struct table tb;
    if (rc || table_init(w, &tb, EVP_CHUNK_FUNCS, entry) < 0)
        return w->err;
    for (size_t id = 1; id < t->nfuncs && !w->err; id++) {
        const struct evp_func *f = &t->funcs[id];
        uint8_t *q = f->name ? table_next(w, &tb, func_entry_bound(f)) : NULL;
        if (!q)
            continue;
        tb.k += evp_func_entry_put(q, (uint32_t)id, f->name, f->file, f->line);
        tb.n++;
    }
    rc = table_put(w, &tb);
    free(tb.p);
    return rc;
}

/* ---- samples --------------------------------------------------------- */

struct swriter {
    struct ewriter *w;
    struct evp_sample_rec *s;
    size_t n;
    uint32_t stream, seq;
    int started;
    uint64_t lost;    /* the stream's lost samples, put in its first chunk */
    uint32_t unknown; /* the "<unknown stack>" node, or 0 */
    const struct evp_stream *st;
};

static int flush_samples(struct swriter *sw)
{
    struct ewriter *w = sw->w;
    if (!sw->n)
        return 0;
    size_t need = evp_samples_bound(sw->n);
    if (evp_grow((void **)&w->enc, &w->enc_cap, need, 1, need))
        return w->err = -ENOMEM;
    struct evp_events_prefix pf = {.stream = sw->stream, .seq = sw->seq++};
    pf.sync_ticks = pf.sync_ns = sw->s[0].ts;
    pf.dropped = sw->lost > UINT32_MAX ? UINT32_MAX : (uint32_t)sw->lost;
    sw->lost = 0;
    size_t len = evp_samples_encode(w->enc, &pf, sw->s, sw->n, NULL);
    sw->n = 0;
    return put_chunk(w, EVP_CHUNK_SAMPLES, w->enc, len);
}

/* A stream's samples follow its THREAD chunk: a stream with events had
 * it with them. */
static int sw_begin(void *ctx, const struct evp_stream *st)
{
    struct swriter *sw = ctx;
    sw->stream = st->id;
    sw->seq = 0;
    sw->started = 0;
    sw->lost = st->samples_lost;
    sw->st = st;
    return 0;
}

static int sw_end(void *ctx, const struct evp_stream *st)
{
    (void)st;
    return flush_samples(ctx);
}

static int sw_samples(void *ctx, const struct evp_sample *smp, size_t n)
{
    struct swriter *sw = ctx;
    struct ewriter *w = sw->w;
    if (!sw->started) {
        sw->started = 1;
        if (!sw->st->events && ew_begin(w, sw->st) < 0)
            return w->err;
    }
    for (size_t i = 0; i < n; i++) {
        const struct evp_sample *s = &smp[i];
        struct evp_sample_rec *r = &sw->s[sw->n++];
        *r = (struct evp_sample_rec){s->ts, s->stack, s->state, s->unit,
                                     s->weight};
        if (r->stack && !s->depth) /* a leaf the table does not know */
            r->stack = sw->unknown;
        if (sw->n == RUN && flush_samples(sw) < 0)
            return w->err;
    }
    return 0;
}

/* Does a sample name a stack node the table lacks (damage)? */
static int sample_unknown(void *ctx, const struct evp_sample *smp, size_t n)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        if (smp[i].stack && !smp[i].depth)
            return 1;
    return 0;
}

/*
 * The stack table, then the samples.  A damaged table's broken chains
 * (a node whose caller is missing, or a sample naming a missing node)
 * are written under a node of their own, a function "<unknown stack>",
 * as the views show them: the copy reads without warnings and shows the
 * same stacks.
 */
static int write_samples(struct ewriter *w)
{
    struct evp_trace *t = w->t;
    uint32_t ns = evp_trace_nstacks(t);
    if (!evp_trace_nsamples(t) && !ns)
        return 0;
    struct swriter sw = {.w = w};
    static const struct evp_replay_ops probe = {.samples = sample_unknown};
    static const struct evp_replay_opts all = {.stream = -1};
    int broken = evp_replay(t, &all, &probe, &sw) == 1;
    for (uint32_t id = 1; id <= ns && !broken; id++) {
        const struct evp_stack_node *sn = evp_trace_stack(t, id);
        broken = sn && sn->parent == EVP_STACK_UNKNOWN;
    }
    uint32_t unknown = broken ? ns + 1 : 0;
    struct table tb;
    if (table_init(w, &tb, EVP_CHUNK_STACKS,
                   2 * EVP_VARINT_MAX + evp_str_bound(EVP_STACK_UNKNOWN_NAME)) <
        0)
        return w->err;
    for (uint32_t id = 1; id <= ns && !w->err; id++) {
        const struct evp_stack_node *sn = evp_trace_stack(t, id);
        uint8_t *q = sn ? table_next(w, &tb, 3 * EVP_VARINT_MAX) : NULL;
        if (!q)
            continue;
        uint32_t parent =
            sn->parent == EVP_STACK_UNKNOWN ? unknown : sn->parent;
        tb.k += evp_stack_entry_put(q, id, parent, sn->func);
        tb.n++;
    }
    int rc = table_put(w, &tb);
    /* the node for stacks cut short after the table: a reader refuses a
     * node id far beyond the entries it has read (damage) */
    if (unknown && !rc) {
        uint8_t *p = tb.p;
        uint32_t f = evp_trace_nfuncs(t) + 1;
        size_t k = evp_varint_put(p, 1);
        k += evp_func_entry_put(p + k, f, EVP_STACK_UNKNOWN_NAME, "", 0);
        rc = put_chunk(w, EVP_CHUNK_FUNCS, p, k);
        k = evp_varint_put(p, 1);
        k += evp_stack_entry_put(p + k, unknown, 0, f);
        if (!rc)
            rc = put_chunk(w, EVP_CHUNK_STACKS, p, k);
    }
    free(tb.p);
    if (rc)
        return rc;
    sw.unknown = unknown;
    sw.s = malloc(RUN * sizeof *sw.s);
    if (!sw.s)
        return w->err = -ENOMEM;
    static const struct evp_replay_ops ops = {sw_begin, NULL, sw_end,
                                              sw_samples};
    rc = evp_replay(t, &all, &ops, &sw);
    free(sw.s);
    if (rc && !w->err)
        w->err = rc;
    return w->err;
}

static int write_end(struct ewriter *w)
{
    const struct evp_trace_info *in = &w->t->info;
    uint8_t buf[48 + EVP_VARINT_MAX];
    uint64_t end = in->has_end ? in->end_ns : 0;
    evp_put_u64(buf, end);
    evp_put_u64(buf + 8, end);
    uint64_t wall = 0;
    if (in->start_wall_ns >= 0 && in->has_end)
        wall = (uint64_t)in->start_wall_ns + (end - in->start_ns);
    evp_put_u64(buf + 16, wall);
    evp_put_u64(buf + 24, w->events);
    evp_put_u64(buf + 32, in->dropped);
    evp_put_u64(buf + 40, 0);
    size_t k = 48 + evp_varint_put(buf + 48, 0);
    return put_chunk(w, EVP_CHUNK_END, buf, k);
}

int evp_trace_write_evp_to(struct evp_trace *t, FILE *f, const char *name,
                           int zstd_level, char *err, size_t errlen)
{
    struct ewriter w = {.t = t, .level = zstd_level, .f = f};
    w.recs = malloc(RUN * sizeof *w.recs);
    if (!w.recs) {
        snprintf(err, errlen, "%s: %s", name, strerror(ENOMEM));
        return -ENOMEM;
    }
    uint8_t fh[EVP_FILE_HEADER_SIZE];
    evp_file_header(fh);
    if (fwrite(fh, 1, sizeof fh, w.f) != sizeof fh)
        w.err = -(errno ? errno : EIO);
    if (!w.err)
        write_meta(&w);
    if (!w.err)
        write_tables(&w);
    if (!w.err) {
        static const struct evp_replay_ops ops = {ew_begin, ew_events, ew_end,
                                                  NULL};
        struct evp_replay_opts o = {.stream = -1, .keep_log = 1};
        int rc = evp_replay(t, &o, &ops, &w);
        if (rc && !w.err)
            w.err = rc;
    }
    if (!w.err)
        write_samples(&w);
    if (!w.err)
        write_end(&w);
    if (fflush(w.f) != 0 && !w.err)
        w.err = -(errno ? errno : EIO);
    free(w.recs);
    free(w.enc);
    free(w.z);
    if (w.err == -EMSGSIZE) {
        snprintf(err, errlen,
                 "%s: not written: a name or metadata value is longer than "
                 "a chunk may hold (%u MiB)",
                 name, EVP_CHUNK_MAX_PAYLOAD >> 20);
        return w.err;
    }
    if (w.err) {
        snprintf(err, errlen, "%s: write failed: %s", name, strerror(-w.err));
        return w.err;
    }
    return 0;
}

int evp_trace_write_evp(struct evp_trace *t, const char *path, int zstd_level,
                        char *err, size_t errlen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "wb");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    int rc = evp_trace_write_evp_to(t, f, path, zstd_level, err, errlen);
    if (f != stdout && fclose(f) != 0 && rc == 0) {
        rc = -(errno ? errno : EIO);
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
    }
    return rc;
}
