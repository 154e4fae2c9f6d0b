/*
 * The trace model (internal.h) and its accessors (trace.h): what the
 * readers fill in and every other file of the library reads.  The
 * bottom of src/trace: it calls no other file of the directory but the
 * built-in opcode tables (optables.c).
 *
 * Warnings are kept, with their count past MAX_WARNINGS_KEPT, and handed
 * to the opener's callback (the first MAX_WARNINGS_PRINTED of them) once
 * the open succeeded, so that a file with nothing readable gives one
 * line.  Compressed chunks are decompressed into an inflater a chunk at a
 * time; the pages of the mapped file a reader has passed are given back
 * (evp_trace_release), so that reading a trace of any size costs its
 * index and a chunk, not the file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zstd.h>

#include "file.h"
#include "internal.h"

#define MAX_WARNINGS_PRINTED 20
/* Warnings kept for `info`: a junk stream may have millions of bad lines,
 * and each would cost its bytes. */
#define MAX_WARNINGS_KEPT 10000

/* ---- warnings and allocations ------------------------------------------- */

/* Pass warning I on to the caller's callback (the first few only). */
static void report_warning(struct evp_trace *t, size_t i)
{
    if (i < MAX_WARNINGS_PRINTED)
        t->warn(t->warn_ctx, t->path, t->warnings[i]);
    else if (i == MAX_WARNINGS_PRINTED)
        t->warn(t->warn_ctx, t->path,
                "more warnings follow (`evalprof info` lists them all)");
}

void evp_trace_warnf(struct evp_trace *t, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    if (t->nwarnings >= MAX_WARNINGS_KEPT) {
        t->warnings_lost++;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (evp_grow((void **)&t->warnings, &t->warnings_cap, t->nwarnings + 1,
                 sizeof *t->warnings, 16))
        return;
    char *m = strdup(msg);
    if (!m)
        return;
    t->warnings[t->nwarnings++] = m;
    if (t->opened)
        report_warning(t, t->nwarnings - 1);
}

void *evp_trace_own(struct evp_trace *t, void *p)
{
    if (!p)
        return NULL;
    if (evp_grow((void **)&t->owned, &t->owned_cap, t->nowned + 1,
                 sizeof *t->owned, 16)) {
        free(p);
        return NULL;
    }
    t->owned[t->nowned++] = p;
    return p;
}

/* S may lie in a mapped file cut under the reader: the block is the
 * trace's before a byte is copied into it, so that a jump out of the copy
 * (evp_file_guard) leaves nothing evp_trace_close does not free. */
char *evp_trace_strdup(struct evp_trace *t, const char *s, size_t n)
{
    char *p = evp_trace_own(t, malloc(n + 1));
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* Metadata that describes the clock of the trace being read, replaced
 * because a written trace's clock is nanoseconds. */
int evp_meta_is_clock(const char *key)
{
    return strcmp(key, "clock") == 0 || strcmp(key, "clock.hz") == 0 ||
           strcmp(key, "start.ticks") == 0 ||
           strcmp(key, "event_cost.ticks") == 0;
}

char *evp_fmt_exact(char *buf, size_t len, double x)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    return buf;
}

int evp_trace_set_meta(struct evp_trace *t, const char *key, const char *value)
{
    return evp_kv_set(&t->meta, key, value);
}

int evp_trace_set_func(struct evp_trace *t, uint32_t id, const char *name,
                       size_t nlen, const char *file, size_t flen,
                       uint32_t line)
{
    /* Producers number functions densely from 1, so an id far beyond the
     * count named so far is damage: refused before it sizes the table (a
     * 40-byte file must not cost 3 GB).  Ids written in increasing order
     * by a writer always pass if they passed in any order on reading. */
    if (id == 0 || id > MAX_FUNC_ID || id > t->funcs_named + 65536)
        return -EINVAL;
    size_t had = t->funcs_cap;
    if (evp_grow((void **)&t->funcs, &t->funcs_cap, (size_t)id + 1,
                 sizeof *t->funcs, 256))
        return -ENOMEM;
    for (size_t i = had; i < t->funcs_cap; i++)
        t->funcs[i] = (struct evp_func){NULL, "", 0};
    char *n = evp_trace_strdup(t, name, nlen);
    char *fl = evp_trace_strdup(t, file, flen);
    if (!n || !fl)
        return -ENOMEM;
    t->funcs_named += !t->funcs[id].name;
    t->funcs[id] = (struct evp_func){n, fl, line};
    if (id >= t->nfuncs)
        t->nfuncs = id + 1;
    return 0;
}

struct stream_key {
    const struct evp_trace *t;
    uint32_t id;
};

static int same_stream(const void *ctx, uint32_t i)
{
    const struct stream_key *k = ctx;
    return k->t->streams[i].pub.id == k->id;
}

/* Index the streams by id again (they were sorted). */
static int index_streams(struct evp_trace *t)
{
    evp_itab_clear(&t->stream_index);
    for (size_t i = 0; i < t->nstreams; i++) {
        struct stream_key k = {t, t->streams[i].pub.id};
        uint64_t h = evp_itab_hash_u64(k.id);
        if (evp_itab_find(&t->stream_index, h, same_stream, &k) ==
                EVP_ITAB_NONE &&
            evp_itab_put(&t->stream_index, h, (uint32_t)i) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* The stream with id ID, made when new: a hash on the id, since a trace
 * may switch between tens of thousands of threads. */
struct stream *evp_trace_get_stream(struct evp_trace *t, uint32_t id)
{
    /* the index holds every stream, or is rebuilt (after a failure) */
    if (t->stream_index.n != t->nstreams && index_streams(t) < 0)
        return NULL;
    struct stream_key k = {t, id};
    uint64_t h = evp_itab_hash_u64(id);
    uint32_t i = evp_itab_find(&t->stream_index, h, same_stream, &k);
    if (i != EVP_ITAB_NONE)
        return &t->streams[i];
    if (t->nstreams >= UINT32_MAX - 1)
        return NULL; /* the index holds 32-bit indexes */
    if (evp_grow((void **)&t->streams, &t->streams_cap, t->nstreams + 1,
                 sizeof *t->streams, 8))
        return NULL;
    if (evp_itab_put(&t->stream_index, h, (uint32_t)t->nstreams) < 0)
        return NULL;
    struct stream *s = &t->streams[t->nstreams++];
    memset(s, 0, sizeof *s);
    s->pub.id = id;
    return s;
}

int evp_stream_add_segment(struct stream *s, const struct segment *seg)
{
    /* from 2: many threads, few chunks */
    if (evp_grow((void **)&s->segs, &s->cap, s->nsegs + 1, sizeof *s->segs, 2))
        return -ENOMEM;
    s->segs[s->nsegs++] = *seg;
    return 0;
}

int evp_trace_set_opcode(struct evp_trace *t, unsigned opcode, const char *name,
                         unsigned base)
{
    if (opcode > 0xffff || base > 0xffff)
        return -EINVAL;
    size_t cap = t->nops;
    if (evp_grow((void **)&t->ops, &cap, (size_t)opcode + 1, sizeof *t->ops,
                 256))
        return -ENOMEM;
    for (size_t i = t->nops; i < cap; i++)
        t->ops[i] = (struct opcode_entry){NULL, (uint16_t)i};
    t->nops = (unsigned)cap;
    char *nm = evp_trace_strdup(t, name, strlen(name));
    if (!nm)
        return -ENOMEM;
    t->ops[opcode].name = nm;
    t->ops[opcode].base = (uint16_t)base;
    return 0;
}

int evp_trace_builtin_opcodes(struct evp_trace *t, const char *version)
{
    const struct evp_optable *tab = evp_optable_find(version);
    if (!tab)
        return -1;
    for (size_t i = 0; i < tab->n; i++)
        evp_trace_set_opcode(t, tab->entries[i].opcode, tab->entries[i].name,
                             tab->entries[i].base);
    char src[64];
    snprintf(src, sizeof src, "built-in table for Python %s", tab->version);
    t->info.opcode_source = evp_trace_strdup(t, src, strlen(src));
    return 0;
}

int evp_builtin_opcode(const char *version, size_t i, unsigned *opcode,
                       unsigned *base, const char **name)
{
    const struct evp_optable *tab = evp_optable_find(version);
    if (!tab || i >= tab->n)
        return 0;
    *opcode = tab->entries[i].opcode;
    *base = tab->entries[i].base;
    *name = tab->entries[i].name;
    return 1;
}

/* ---- compressed chunks and the mapping ---------------------------------- */

const uint8_t *evp_inflate(struct evp_inflater *z, const uint8_t *src, size_t n,
                           size_t raw)
{
    if (!z->dctx && !(z->dctx = ZSTD_createDCtx()))
        return NULL;
    if (evp_grow((void **)&z->buf, &z->cap, raw ? raw : 1, 1, 4096))
        return NULL;
    size_t got = ZSTD_decompressDCtx(z->dctx, z->buf, raw, src, n);
    return ZSTD_isError(got) || got != raw ? NULL : z->buf;
}

void evp_inflater_free(struct evp_inflater *z)
{
    ZSTD_freeDCtx(z->dctx);
    free(z->buf);
    *z = (struct evp_inflater){0};
}

const uint8_t *evp_segment_payload(const struct segment *seg,
                                   struct evp_inflater *z)
{
    return seg->zdata ? evp_inflate(z, seg->zdata, seg->zlen, seg->len)
                      : seg->payload;
}

void evp_segment_release(struct evp_trace *t, const struct segment *seg)
{
    if (seg->zdata)
        evp_trace_release(t, seg->zdata, seg->zlen);
    else
        evp_trace_release(t, seg->payload, seg->len);
}

void evp_trace_release(struct evp_trace *t, const void *p, size_t len)
{
    const uint8_t *b = p, *d = t->data;
    if (!t->mapped || !len || b < d || len > t->size ||
        b - d > (ptrdiff_t)(t->size - len))
        return;
    /* From the page the bytes start on (the mapping starts on a page) to
     * the one they end on, that one kept: the bytes after them are
     * usually what is read next, and the next release takes the page.
     * Only whole pages inside the bytes would keep a page a chunk of the
     * whole file. */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)b & ~(page - 1);
    uintptr_t hi = ((uintptr_t)b + len) & ~(page - 1);
    if (b + len == d + t->size)
        hi = (uintptr_t)b + len; /* the file's end: its last page too */
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* ---- after reading ------------------------------------------------------ */

static int cmp_stream(const void *a, const void *b)
{
    const struct stream *x = a, *y = b;
    return (x->pub.id > y->pub.id) - (x->pub.id < y->pub.id);
}

static int cmp_seg(const void *a, const void *b)
{
    const struct segment *x = a, *y = b;
    return (x->pf.seq > y->pf.seq) - (x->pf.seq < y->pf.seq);
}

void evp_segments_order(struct evp_trace *t, uint32_t stream,
                        struct segment *segs, size_t n, const char *what,
                        const char *records)
{
    if (!n)
        return;
    qsort(segs, n, sizeof *segs, cmp_seg);
    uint32_t expect = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t seq = segs[k].pf.seq;
        if (seq > expect)
            evp_trace_warnf(t,
                            "stream %u: %schunk%s %u%s%.0u missing "
                            "(%s between them are lost)",
                            stream, what, seq - expect > 1 ? "s" : "", expect,
                            seq - expect > 1 ? "-" : "",
                            seq - expect > 1 ? seq - 1 : 0, records);
        else if (seq < expect)
            evp_trace_warnf(t, "stream %u: %schunk %u appears twice", stream,
                            what, seq);
        expect = seq + 1;
    }
}

void evp_trace_finish(struct evp_trace *t)
{
    struct evp_trace_info *i = &t->info;
    const char *v;
    if (t->nstreams > 1) {
        qsort(t->streams, t->nstreams, sizeof *t->streams, cmp_stream);
        /* the indexes moved (after a failure, the next lookup tries
         * again) */
        index_streams(t);
    }
    i->events = 0;
    for (size_t s = 0; s < t->nstreams; s++) {
        struct stream *st = &t->streams[s];
        if (!t->info.text)
            evp_segments_order(t, st->pub.id, st->segs, st->nsegs, "",
                               "events");
        if (!st->name) {
            char nm[48];
            if (st->pub.tid)
                snprintf(nm, sizeof nm, "thread %llu",
                         (unsigned long long)st->pub.tid);
            else
                snprintf(nm, sizeof nm, "stream %u", st->pub.id);
            st->name = evp_trace_strdup(t, nm, strlen(nm));
        }
        st->pub.name = st->name ? st->name : "";
        i->events += st->pub.events;
    }
    if (!t->info.text) {
        uint64_t dropped = 0;
        for (size_t s = 0; s < t->nstreams; s++)
            dropped += t->streams[s].pub.dropped;
        if (dropped > i->dropped)
            i->dropped = dropped;
    }
#define META(field, key) i->field = (v = evp_trace_meta(t, key)) ? v : ""
    META(producer, "producer");
    META(executable, "executable");
    META(argv, "argv");
    META(python_version, "python.version");
    META(clock, "clock");
#undef META
    if ((v = evp_trace_meta(t, "python.executable")) && *v)
        i->executable = v;
    if ((v = evp_trace_meta(t, "pid")))
        i->pid = strtol(v, NULL, 10);
    if ((v = evp_trace_meta(t, "parent.pid")) && *v) {
        char *end;
        long ppid = strtol(v, &end, 10);
        if (ppid > 0 && !*end)
            i->parent_pid = ppid;
    }
    if ((v = evp_trace_meta(t, "start.wall_ns")))
        i->start_wall_ns = (int64_t)strtoull(v, NULL, 10);
    /* (a nanosecond clock's cost is taken as it is: the multiplication
     * and division could change its last bit, and a round trip with it) */
    if ((v = evp_trace_meta(t, "event_cost.ticks")) && i->clock_hz > 0)
        i->event_cost_ns =
            i->clock_hz == 1e9 ? atof(v) : atof(v) * 1e9 / i->clock_hz;
    if (!(i->event_cost_ns >= 0 && i->event_cost_ns < 1e6))
        i->event_cost_ns = 0; /* damaged: a cost this high is no cost */
    i->can_emit = EVP_KINDS_CLASSIC;
    if ((v = evp_trace_meta(t, "kinds.can_emit")))
        i->can_emit = strtoull(v, NULL, 0);
    /* per-kind costs, for the kinds this producer can emit (what the
     * header lists is what replay subtracts) */
    i->has_kind_cost = 0;
    for (unsigned k = 0; k < EVP_EV__COUNT; k++) {
        char key[64];
        evp_kind_cost_key(key, sizeof key, k);
        double c = (v = evp_trace_meta(t, key)) ? atof(v) : 0;
        i->kind_cost_ns[k] =
            c > 0 && c < 1e6 && i->can_emit & EVP_KIND_BIT(k) ? c : 0;
        i->has_kind_cost |= i->kind_cost_ns[k] > 0;
    }
    v = evp_trace_meta(t, "oparg");
    i->has_oparg = v ? strcmp(v, "1") == 0 : !t->info.text;
    t->nbases = 0;
    for (unsigned k = 0; k < t->nops; k++)
        if (t->ops[k].name && t->ops[k].base == k)
            t->nbases++;
}

void evp_trace_opened(struct evp_trace *t)
{
    if (t->warnings_lost) {
        free(t->warnings[--t->nwarnings]); /* room for the count */
        t->warnings_lost++;
        evp_trace_warnf(t, "%" PRIu64 " more warnings not kept",
                        t->warnings_lost);
    }
    t->opened = 1;
    for (size_t i = 0; i < t->nwarnings && i <= MAX_WARNINGS_PRINTED; i++)
        report_warning(t, i);
}

void evp_trace_close(struct evp_trace *t)
{
    if (!t)
        return;
    if (t->mapped)
        evp_file_unmap(t->data, t->size);
    else
        free(t->data);
    evp_inflater_free(&t->open_z);
    evp_kv_free(&t->meta);
    free(t->funcs);
    for (size_t i = 0; i < t->nstreams; i++) {
        free(t->streams[i].segs);
        free(t->streams[i].ssegs);
    }
    free(t->sraw);
    free(t->stacks);
    free(t->streams);
    evp_itab_free(&t->stream_index);
    free(t->ops);
    for (size_t i = 0; i < t->nwarnings; i++)
        free(t->warnings[i]);
    free(t->warnings);
    for (size_t i = 0; i < t->nowned; i++)
        free(t->owned[i]);
    free(t->owned);
    free(t->path);
    free(t);
}

/* ---- accessors ----------------------------------------------------------- */

double evp_trace_kind_cost_ns(const struct evp_trace *t, unsigned kind)
{
    const struct evp_trace_info *in = &t->info;
    return kind < EVP_EV__COUNT && in->kind_cost_ns[kind] > 0
               ? in->kind_cost_ns[kind]
               : in->event_cost_ns;
}

const struct evp_trace_info *evp_trace_info(const struct evp_trace *t)
{
    return &t->info;
}

const char *evp_trace_meta(const struct evp_trace *t, const char *key)
{
    return evp_kv_get(&t->meta, key);
}

size_t evp_trace_meta_count(const struct evp_trace *t)
{
    return t->meta.n / 2;
}

int evp_trace_meta_at(const struct evp_trace *t, size_t i, const char **key,
                      const char **value)
{
    if (i >= t->meta.n / 2)
        return -1;
    *key = t->meta.kv[2 * i];
    *value = t->meta.kv[2 * i + 1];
    return 0;
}

uint32_t evp_trace_nfuncs(const struct evp_trace *t)
{
    return t->nfuncs ? (uint32_t)t->nfuncs - 1 : 0;
}

const struct evp_func *evp_trace_func(const struct evp_trace *t, uint32_t id)
{
    if (id == 0 || id >= t->nfuncs || !t->funcs[id].name)
        return NULL;
    return &t->funcs[id];
}

size_t evp_trace_nstreams(const struct evp_trace *t)
{
    return t->nstreams;
}

const struct evp_stream *evp_trace_stream(const struct evp_trace *t, size_t i)
{
    return i < t->nstreams ? &t->streams[i].pub : NULL;
}

const char *evp_trace_opname(const struct evp_trace *t, unsigned opcode)
{
    return opcode < t->nops ? t->ops[opcode].name : NULL;
}

unsigned evp_trace_opbase(const struct evp_trace *t, unsigned opcode)
{
    return opcode < t->nops && t->ops[opcode].name ? t->ops[opcode].base
                                                   : opcode;
}

unsigned evp_trace_nopcodes(const struct evp_trace *t)
{
    return t->nbases;
}

size_t evp_trace_nwarnings(const struct evp_trace *t)
{
    return t->nwarnings;
}

const char *evp_trace_warning(const struct evp_trace *t, size_t i)
{
    return i < t->nwarnings ? t->warnings[i] : NULL;
}

uint64_t evp_trace_ticks_to_ns(const struct evp_trace *t, uint64_t ticks)
{
    int64_t d = (int64_t)(ticks - t->anchor_ticks);
    __int128 ns = ((__int128)d * (__int128)t->mult) >> 32;
    return t->anchor_ns + (uint64_t)(int64_t)ns;
}

uint64_t evp_events_last_ns(const struct evp_trace *t)
{
    uint64_t end = 0;
    for (size_t s = 0; s < t->nstreams; s++) {
        const struct stream *st = &t->streams[s];
        if (!st->nsegs)
            continue;
        const struct segment *seg = &st->segs[st->nsegs - 1];
        uint64_t last = 0;
        struct evp_rec_record buf[256];
        struct evp_events_cursor c;
        struct evp_inflater z = {0};
        const uint8_t *payload = evp_segment_payload(seg, &z);
        long n;
        if (payload) {
            evp_events_cursor_init(&c, payload, seg->len, &seg->pf);
            while ((n = evp_events_decode(&c, buf, 256)) > 0)
                last = buf[n - 1].ts;
        }
        evp_inflater_free(&z);
        if (!last)
            continue;
        uint64_t ns = evp_trace_ticks_to_ns(t, last);
        if (ns > end)
            end = ns;
    }
    return end;
}
