/*
 * Trace reader: opening a trace, the binary `.evp` index pass, and the
 * accessors of trace.h.
 *
 * A binary file is mapped (a pipe's is read into memory) and walked chunk
 * by chunk; a file truncated meanwhile is an error, not a SIGBUS (file.h).
 * Nothing read from the file is trusted: every length is checked against what
 * is left, every chunk against its checksum.  A chunk that fails is reported
 * with its number and byte offset and skipped; the reader then looks for the
 * next chunk magic whose checksum holds (a damaged length must not hide the
 * rest of the file).  A file cut short reads up to its last whole chunk,
 * and the warning says how many bytes (and, when the chunk's prefix
 * survived, how many events) were lost.  EVENTS payloads stay encoded: the
 * replay engine decodes them.  Compressed ones stay compressed: the index
 * pass decompresses each chunk into one buffer to check it and read its
 * prefix, and each replay does again, a chunk at a time; the pages of the
 * mapping are given back behind both (evp_trace_release), so reading a
 * trace of any size costs the index and a chunk, not the file.
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

#include "esc.h"
#include "file.h"
#include "internal.h"

#define MAX_WARNINGS_PRINTED 20
/* Warnings kept for `info`: a junk stream may have millions of bad lines,
 * and each would cost its bytes. */
#define MAX_WARNINGS_KEPT 10000

/* ---- small helpers ------------------------------------------------------ */

static void default_warn(void *ctx, const char *path, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "evalprof: %s: %s\n", path, msg);
}

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

/* ---- binary chunks ------------------------------------------------------- */

/*
 * Decompressed bytes a file may cost: 1000 times its size plus 64 MiB.
 * A zstd chunk may declare up to 64 MiB however small it is, so without
 * a bound a crafted file of many tiny chunks would make the reader
 * allocate without end; real traces compress by 2-10 times, and the floor
 * lets any one chunk through.  What is attempted counts, whether or not
 * it then decompresses, so the bound holds for time as well as memory.
 */
#define INFLATE_RATIO 1000u
#define INFLATE_FLOOR ((uint64_t)EVP_CHUNK_MAX_PAYLOAD)

struct scan {
    struct evp_trace *t;
    uint32_t chunk;                   /* chunk number, from 0 */
    uint64_t inflated, inflate_limit; /* decompressed bytes, and the bound */
    struct evp_inflater *z;           /* t->open_z: the chunk being read */
    /* clock pairs for calibration */
    uint64_t lo_ticks, lo_ns, hi_ticks, hi_ns;
    int have_pair;
    uint64_t end_ticks, end_ns, end_wall, end_events;
    size_t end_off; /* the END chunk's offset, for messages */
    int have_end;
};

static void add_pair(struct scan *sc, uint64_t ticks, uint64_t ns)
{
    if (!ticks && !ns)
        return;
    if (!sc->have_pair || ns < sc->lo_ns) {
        sc->lo_ticks = ticks;
        sc->lo_ns = ns;
    }
    if (!sc->have_pair || ns > sc->hi_ns) {
        sc->hi_ticks = ticks;
        sc->hi_ns = ns;
    }
    sc->have_pair = 1;
}

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    return evp_varint_get(p, end, v);
}

/* A length-prefixed string; returns 0 or -1. */
static int read_str(const uint8_t **p, const uint8_t *end, const char **s,
                    size_t *n)
{
    uint64_t len;
    if (read_varint(p, end, &len) < 0 || len > (uint64_t)(end - *p))
        return -1;
    *s = (const char *)*p;
    *n = (size_t)len;
    *p += len;
    return 0;
}

static int parse_meta(struct scan *sc, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    while (p < end) {
        const uint8_t *k = p, *kz = memchr(p, 0, (size_t)(end - p));
        if (!kz)
            return -1;
        const uint8_t *v = kz + 1,
                      *vz = v < end ? memchr(v, 0, (size_t)(end - v)) : NULL;
        if (!vz)
            return -1;
        if (evp_trace_set_meta(sc->t, (const char *)k, (const char *)v) < 0)
            return -1;
        p = vz + 1;
    }
    return 0;
}

static int parse_opcodes(struct scan *sc, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    uint64_t n, op, base;
    if (read_varint(&p, end, &n) < 0)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        size_t sl;
        if (read_varint(&p, end, &op) < 0 || read_varint(&p, end, &base) < 0 ||
            read_str(&p, end, &s, &sl) < 0 || op > 0xffff || base > 0xffff)
            return -1;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)sl, s);
        if (evp_trace_set_opcode(sc->t, (unsigned)op, name, (unsigned)base) < 0)
            return -1;
    }
    /* An empty table names nothing: the trace keeps the built-in one, as
     * its copy does (a writer leaves an empty table out). */
    if (n)
        sc->t->ops_from_trace = 1;
    return 0;
}

static int parse_funcs(struct scan *sc, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    uint64_t n, id, line;
    if (read_varint(&p, end, &n) < 0)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        const char *name, *file;
        size_t nl, fl;
        if (read_varint(&p, end, &id) < 0 ||
            read_str(&p, end, &name, &nl) < 0 ||
            read_str(&p, end, &file, &fl) < 0 ||
            read_varint(&p, end, &line) < 0 || id == 0 || id > MAX_FUNC_ID ||
            line > 0xffffffffu)
            return -1;
        if (evp_trace_set_func(sc->t, (uint32_t)id, name, nl, file, fl,
                               (uint32_t)line) < 0)
            return -1;
    }
    return 0;
}

static int parse_thread(struct scan *sc, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    uint64_t id, tid;
    const char *name;
    size_t nl;
    if (read_varint(&p, end, &id) < 0 || read_varint(&p, end, &tid) < 0 ||
        read_str(&p, end, &name, &nl) < 0 || id > 0xffffffffu)
        return -1;
    struct stream *s = evp_trace_get_stream(sc->t, (uint32_t)id);
    if (!s)
        return -1;
    s->pub.tid = tid;
    s->name = evp_trace_strdup(sc->t, name, nl);
    return 0;
}

/* An EVENTS chunk at OFFSET: its payload P (LEN bytes), decompressed from
 * the zstd frame ZDATA (ZLEN bytes in the file) when ZDATA is not NULL.
 * Only the frame is kept, decompressed again by each replay. */
/* The segment of the EVENTS or SAMPLES payload P (LEN bytes) of the chunk
 * at OFFSET, and its stream (NULL: a bad prefix, or out of memory). */
static struct stream *segment_of(struct scan *sc, const uint8_t *p, size_t len,
                                 uint64_t offset, const uint8_t *zdata,
                                 size_t zlen, struct segment *seg)
{
    *seg = (struct segment){0};
    if (evp_events_prefix_read(p, len, &seg->pf) < 0)
        return NULL;
    seg->payload = zdata ? NULL : p;
    seg->len = len;
    seg->zdata = zdata;
    seg->zlen = zlen;
    seg->offset = offset;
    seg->chunk = sc->chunk;
    return evp_trace_get_stream(sc->t, seg->pf.stream);
}

static int parse_events(struct scan *sc, const uint8_t *p, size_t len,
                        uint64_t offset, const uint8_t *zdata, size_t zlen)
{
    struct segment seg;
    struct stream *s = segment_of(sc, p, len, offset, zdata, zlen, &seg);
    if (!s || evp_stream_add_segment(s, &seg) < 0)
        return -1;
    s->pub.events += seg.pf.count;
    s->pub.dropped += seg.pf.dropped;
    s->pub.chunks++;
    add_pair(sc, seg.pf.sync_ticks, seg.pf.sync_ns);
    return 0;
}

/* A SAMPLES chunk: as an EVENTS one, its samples checked and counted
 * (samples.c). */
static int parse_samples(struct scan *sc, const uint8_t *p, size_t len,
                         uint64_t offset, const uint8_t *zdata, size_t zlen)
{
    struct segment seg;
    struct stream *s = segment_of(sc, p, len, offset, zdata, zlen, &seg);
    if (!s || evp_samples_index(sc->t, s, &seg, p) < 0)
        return -1;
    add_pair(sc, seg.pf.sync_ticks, seg.pf.sync_ns);
    return 0;
}

/* END: u64 end ticks, end ns, end wall ns, events written, events
 * dropped, timestamps that went backwards, varint n, n x (varint stream,
 * varint events, varint dropped). */
static int parse_end(struct scan *sc, const uint8_t *p, size_t len, size_t off)
{
    if (len < 48)
        return -1;
    const uint8_t *q = p + 48, *end = p + len;
    sc->end_ticks = evp_get_u64(p);
    sc->end_ns = evp_get_u64(p + 8);
    sc->end_wall = evp_get_u64(p + 16);
    sc->end_events = evp_get_u64(p + 24);
    sc->t->info.dropped = evp_get_u64(p + 32);
    sc->end_off = off;
    sc->have_end = 1;
    add_pair(sc, sc->end_ticks, sc->end_ns);
    /* The per-stream entries: each takes at least 3 bytes, so a count
     * the payload cannot hold is damage. */
    uint64_t n, v;
    if (q < end && evp_varint_get(&q, end, &n) == 0) {
        if (n > (uint64_t)(end - q) / 3) {
            evp_trace_warnf(sc->t,
                            "chunk %u at byte %zu (end record): declares "
                            "%" PRIu64 " per-stream entries, room for at "
                            "most %zu; the entries are ignored",
                            sc->chunk, off, n, (size_t)(end - q) / 3);
            return 0;
        }
        for (uint64_t i = 0; i < 3 * n; i++)
            if (evp_varint_get(&q, end, &v) < 0) {
                evp_trace_warnf(sc->t,
                                "chunk %u at byte %zu (end record): "
                                "per-stream entry %" PRIu64 " of %" PRIu64
                                " malformed; the entries are ignored",
                                sc->chunk, off, i / 3, n);
                return 0;
            }
    }
    return 0;
}

static const char *chunk_type_name(unsigned type);

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

/* Decompress a zstd payload (the chunk at OFF) into the scan's buffer, *P
 * then pointing there until the next chunk.  Returns 0, -1 when
 * malformed, or -2 when it would pass the file's bound on decompressed
 * bytes (warned here).  The declared size is checked against the frame's
 * own and the bound before anything is allocated. */
static int inflate(struct scan *sc, const uint8_t **p, size_t *len, size_t off,
                   unsigned type)
{
    if (*len < 4)
        return -1;
    uint32_t raw = evp_get_u32(*p);
    if (raw > EVP_CHUNK_MAX_PAYLOAD)
        return -1;
    unsigned long long framed = ZSTD_getFrameContentSize(*p + 4, *len - 4);
    if (framed == ZSTD_CONTENTSIZE_ERROR ||
        (framed != ZSTD_CONTENTSIZE_UNKNOWN && framed != raw))
        return -1;
    if (raw > sc->inflate_limit - sc->inflated) {
        evp_trace_warnf(sc->t,
                        "chunk %u at byte %zu (%s): %zu compressed bytes "
                        "declare %u decompressed, past the limit for this "
                        "file (%llu bytes, %u times its size plus %u MiB; "
                        "%llu already used); chunk skipped",
                        sc->chunk, off, chunk_type_name(type), *len - 4, raw,
                        (unsigned long long)sc->inflate_limit, INFLATE_RATIO,
                        (unsigned)(INFLATE_FLOOR >> 20),
                        (unsigned long long)sc->inflated);
        return -2;
    }
    sc->inflated += raw;
    const uint8_t *out = evp_inflate(sc->z, *p + 4, *len - 4, raw);
    if (!out)
        return -1;
    *p = out;
    *len = raw;
    return 0;
}

static const char *chunk_type_name(unsigned type)
{
    switch (type) {
    case EVP_CHUNK_META:
        return "metadata";
    case EVP_CHUNK_OPCODES:
        return "opcode table";
    case EVP_CHUNK_FUNCS:
        return "function table";
    case EVP_CHUNK_THREAD:
        return "thread";
    case EVP_CHUNK_EVENTS:
        return "events";
    case EVP_CHUNK_END:
        return "end record";
    case EVP_CHUNK_STACKS:
        return "stack table";
    case EVP_CHUNK_SAMPLES:
        return "samples";
    default:
        return "unknown";
    }
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

/* Is there a whole, checksummed chunk at OFF? */
static int chunk_ok(const uint8_t *d, size_t size, size_t off)
{
    if (size - off < EVP_CHUNK_HEADER_SIZE ||
        evp_get_u32(d + off) != EVP_CHUNK_MAGIC)
        return 0;
    uint32_t len = evp_get_u32(d + off + 8);
    if (len > EVP_CHUNK_MAX_PAYLOAD || len > size - off - EVP_CHUNK_HEADER_SIZE)
        return 0;
    return evp_chunk_checksum(d + off, d + off + EVP_CHUNK_HEADER_SIZE, len) ==
           evp_get_u32(d + off + 12);
}

/* The next offset after OFF holding a valid chunk, or SIZE. */
static size_t resync(const uint8_t *d, size_t size, size_t off)
{
    static const uint8_t magic[4] = {'E', 'V', 'P', 'C'};
    for (size_t o = off + 1; o + EVP_CHUNK_HEADER_SIZE <= size; o++) {
        const uint8_t *m = memmem(d + o, size - o, magic, 4);
        if (!m)
            break;
        o = (size_t)(m - d);
        if (chunk_ok(d, size, o))
            return o;
    }
    return size;
}

/* What a lost piece held, for the warning: " (N events)" when known. */
static void lost_events(const uint8_t *d, size_t size, size_t off, char *buf,
                        size_t len)
{
    buf[0] = '\0';
    if (size - off >= EVP_CHUNK_HEADER_SIZE + EVP_EVENTS_PREFIX_SIZE &&
        d[off + 4] == EVP_CHUNK_EVENTS && !(d[off + 5] & EVP_CHUNK_F_ZSTD))
        snprintf(buf, len, ", %u events of stream %u",
                 evp_get_u32(d + off + EVP_CHUNK_HEADER_SIZE + 32),
                 evp_get_u32(d + off + EVP_CHUNK_HEADER_SIZE));
    else if (size - off >= EVP_CHUNK_HEADER_SIZE + EVP_EVENTS_PREFIX_SIZE &&
             d[off + 4] == EVP_CHUNK_SAMPLES &&
             !(d[off + 5] & EVP_CHUNK_F_ZSTD))
        snprintf(buf, len, ", %u samples of stream %u",
                 evp_get_u32(d + off + EVP_CHUNK_HEADER_SIZE + 32),
                 evp_get_u32(d + off + EVP_CHUNK_HEADER_SIZE));
}

/* Walk the chunks from OFF to the end of the file: each one checked and
 * parsed, each damage warned about and stepped over.  Returns how many
 * chunks were read. */
static unsigned walk_chunks(struct scan *sc, size_t off)
{
    struct evp_trace *t = sc->t;
    const uint8_t *d = t->data;
    size_t size = t->size;
    unsigned good = 0;
    while (off < size) {
        size_t left = size - off;
        char lost[64];
        if (left < EVP_CHUNK_HEADER_SIZE) {
            evp_trace_warnf(t,
                            "chunk %u at byte %zu truncated (expected a "
                            "16-byte header, found %zu bytes); %zu bytes lost",
                            sc->chunk, off, left, left);
            break;
        }
        uint32_t len = evp_get_u32(d + off + 8);
        unsigned type = d[off + 4], flags = d[off + 5];
        if (evp_get_u32(d + off) != EVP_CHUNK_MAGIC ||
            len > EVP_CHUNK_MAX_PAYLOAD) {
            size_t next = resync(d, size, off);
            evp_trace_warnf(t,
                            "chunk %u at byte %zu: bad chunk header; %zu "
                            "bytes skipped",
                            sc->chunk, off, next - off);
            off = next;
            sc->chunk++;
            continue;
        }
        if (len > left - EVP_CHUNK_HEADER_SIZE) {
            /* Past the end: the file was cut here, unless whole chunks
             * follow, in which case it is the length that is damaged. */
            size_t next = resync(d, size, off);
            lost_events(d, size, off, lost, sizeof lost);
            if (next < size) {
                evp_trace_warnf(t,
                                "chunk %u at byte %zu (%s): length %u runs "
                                "past the end of the file; %zu bytes "
                                "skipped%s",
                                sc->chunk, off, chunk_type_name(type), len,
                                next - off, lost);
                off = next;
                sc->chunk++;
                continue;
            }
            evp_trace_warnf(t,
                            "chunk %u at byte %zu truncated (expected %u "
                            "bytes, found %zu); %zu bytes lost%s",
                            sc->chunk, off, len + EVP_CHUNK_HEADER_SIZE, left,
                            left, lost);
            break;
        }
        const uint8_t *payload = d + off + EVP_CHUNK_HEADER_SIZE;
        if (evp_chunk_checksum(d + off, payload, len) !=
            evp_get_u32(d + off + 12)) {
            size_t next = resync(d, size, off);
            lost_events(d, size, off, lost, sizeof lost);
            evp_trace_warnf(t,
                            "chunk %u at byte %zu (%s): checksum mismatch; "
                            "%zu bytes skipped%s",
                            sc->chunk, off, chunk_type_name(type), next - off,
                            lost);
            off = next;
            sc->chunk++;
            continue;
        }
        size_t plen = len;
        const uint8_t *zdata = NULL;
        int rc = 0;
        if (flags & EVP_CHUNK_F_ZSTD) {
            zdata = payload + 4;
            rc = inflate(sc, &payload, &plen, off, type);
        }
        if (rc == 0) {
            switch (type) {
            case EVP_CHUNK_META:
                rc = parse_meta(sc, payload, plen);
                break;
            case EVP_CHUNK_OPCODES:
                rc = parse_opcodes(sc, payload, plen);
                break;
            case EVP_CHUNK_FUNCS:
                rc = parse_funcs(sc, payload, plen);
                break;
            case EVP_CHUNK_THREAD:
                rc = parse_thread(sc, payload, plen);
                break;
            case EVP_CHUNK_EVENTS:
                rc = parse_events(sc, payload, plen, off, zdata,
                                  zdata ? len - 4 : 0);
                break;
            case EVP_CHUNK_END:
                rc = parse_end(sc, payload, plen, off);
                break;
            case EVP_CHUNK_STACKS:
                rc = evp_stacks_parse(t, payload, plen, sc->chunk, off);
                break;
            case EVP_CHUNK_SAMPLES:
                rc = parse_samples(sc, payload, plen, off, zdata,
                                   zdata ? len - 4 : 0);
                break;
            default:
                /* A later minor version's chunk: skipped on purpose. */
                break;
            }
        }
        if (rc == -1)
            evp_trace_warnf(t,
                            "chunk %u at byte %zu (%s): malformed payload; "
                            "chunk skipped",
                            sc->chunk, off, chunk_type_name(type));
        else if (rc == 0)
            good++;
        evp_trace_release(t, d + off, EVP_CHUNK_HEADER_SIZE + len);
        off += EVP_CHUNK_HEADER_SIZE + len;
        sc->chunk++;
    }
    return good;
}

/*
 * The trace clock: anchored at the recorded start, its rate measured
 * between the widest clock pairs the chunks carry (a TSC's rate from the
 * metadata is only the recorder's estimate), nanoseconds for any other
 * clock.
 */
static void calibrate_clock(struct scan *sc)
{
    struct evp_trace *t = sc->t;
    const char *v;
    double hz = 1e9;
    if ((v = evp_trace_meta(t, "clock.hz")) && atof(v) > 0)
        hz = atof(v);
    uint64_t start_ticks = 0, start_ns = 0;
    if ((v = evp_trace_meta(t, "start.ticks")))
        start_ticks = strtoull(v, NULL, 10);
    if ((v = evp_trace_meta(t, "start.clock_ns")))
        start_ns = strtoull(v, NULL, 10);
    add_pair(sc, start_ticks, start_ns);
    const char *clock = evp_trace_meta(t, "clock");
    int tsc = clock && strcmp(clock, "tsc") == 0;
    if (tsc && sc->have_pair && sc->hi_ns - sc->lo_ns > 5000000u &&
        sc->hi_ticks > sc->lo_ticks)
        hz = (double)(sc->hi_ticks - sc->lo_ticks) * 1e9 /
             (double)(sc->hi_ns - sc->lo_ns);
    if (!tsc)
        hz = 1e9;
    if (!(hz >= 1e3 && hz <= 1e13)) {
        /* Damaged metadata: nanoseconds are the best guess. */
        evp_trace_warnf(t,
                        "implausible clock rate %g Hz; nanoseconds "
                        "assumed",
                        hz);
        hz = 1e9;
    }
    t->anchor_ticks = start_ticks;
    t->anchor_ns = start_ns;
    t->mult = (uint64_t)(1e9 / hz * 4294967296.0 + 0.5);
    t->info.clock_hz = hz;
    t->info.start_ns = start_ns;
}

/* The END record's figures, checked against the rest of the trace: a
 * damaged one must not make a report print nonsense. */
static void check_end(struct scan *sc)
{
    struct evp_trace *t = sc->t;
    if (!sc->have_end)
        return;
    uint64_t events = 0;
    for (size_t i = 0; i < t->nstreams; i++)
        events += t->streams[i].pub.events;
    if (sc->end_events > events + t->info.dropped &&
        sc->end_events - events - t->info.dropped > (uint64_t)1 << 40)
        evp_trace_warnf(t,
                        "end record at byte %zu declares %" PRIu64
                        " events, implausible for a file of %zu bytes "
                        "(%" PRIu64 " readable); the count is ignored",
                        sc->end_off, sc->end_events, t->size, events);
    if (t->info.dropped > (uint64_t)1 << 40) {
        evp_trace_warnf(t,
                        "end record at byte %zu declares %" PRIu64
                        " dropped events, implausible; the count is ignored",
                        sc->end_off, t->info.dropped);
        t->info.dropped = 0;
    }
    if (!sc->end_ns && !sc->end_ticks)
        return; /* written without an end time (a text trace's copy) */
    if (sc->end_ns < t->info.start_ns) {
        evp_trace_warnf(t,
                        "end record at byte %zu: end time %" PRIu64
                        " ns is before the start (%" PRIu64
                        " ns); the end is taken from the last event",
                        sc->end_off, sc->end_ns, t->info.start_ns);
        return;
    }
    t->info.has_end = 1;
    t->info.end_ns = sc->end_ns;
}

/*
 * Read the binary trace in t->data.  FIRST is 0 for a file with an intact
 * header, else the offset of its first whole chunk (the header is
 * damaged: warned, and the chunks read from there).
 */
static int read_binary(struct evp_trace *t, size_t first, char *err,
                       size_t errlen)
{
    const uint8_t *d = t->data;
    size_t size = t->size;
    struct scan sc = {.t = t, .z = &t->open_z};
    sc.inflate_limit = INFLATE_FLOOR + (uint64_t)size * INFLATE_RATIO;

    if (first) {
        char magic[9] = {0}, found[40];
        memcpy(magic, d, size < 8 ? size : 8);
        evp_esc_term_cell(found, sizeof found, magic, 0);
        evp_trace_warnf(t,
                        "file header damaged (bad magic at byte 0: expected "
                        "EVPTRACE, found %s); chunks read from byte %zu",
                        found, first);
    } else if (size < EVP_FILE_HEADER_SIZE) {
        snprintf(err, errlen,
                 "truncated file header (expected 16 bytes, found %zu)", size);
        return -EPROTO;
    } else if (d[8] != EVP_FORMAT_MAJOR) {
        snprintf(err, errlen,
                 "unsupported format version %u.%u (this evalprof reads "
                 "%u.x)",
                 d[8], d[10], EVP_FORMAT_MAJOR);
        return -EPROTO;
    }
    unsigned good = walk_chunks(&sc, first ? first : EVP_FILE_HEADER_SIZE);
    evp_inflater_free(&t->open_z);
    if (!good) {
        /* One line: what was met first says what the file is. */
        if (t->nwarnings > 1)
            snprintf(err, errlen,
                     "no readable chunk: %s (and %zu more "
                     "problems)",
                     t->warnings[0], t->nwarnings - 1);
        else if (t->nwarnings)
            snprintf(err, errlen, "no readable chunk: %s", t->warnings[0]);
        else
            snprintf(err, errlen, "no readable chunk");
        return -EPROTO;
    }
    if (!sc.have_end && !t->nwarnings)
        evp_trace_warnf(t,
                        "no end record: the file stops at byte %zu, before "
                        "the recording finished (anything recorded later "
                        "is lost; dropped-event counts are unknown)",
                        size);
    calibrate_clock(&sc);
    check_end(&sc);
    return 0;
}

/* ---- opening ------------------------------------------------------------ */

/* What a stream is sniffed from: enough for a damaged binary header to
 * show its first chunks, and for a text trace's first lines. */
#define SNIFF_BYTES ((size_t)64 << 10)

enum kind { NOT_TRACE, BINARY, BINARY_DAMAGED, TEXT };

/*
 * What the first N bytes of a file are.  A binary trace has its magic; a
 * binary trace whose header is damaged still has whole chunks (*FIRST:
 * the first); text is anything else without a NUL in its first line (a
 * NUL further on is a damaged line, warned about and skipped).  ERR gets
 * the reason for NOT_TRACE.
 */
static enum kind sniff(const uint8_t *d, size_t n, size_t *first, char *err,
                       size_t errlen)
{
    *first = EVP_FILE_HEADER_SIZE;
    if (n >= 8 && memcmp(d, EVP_FILE_MAGIC, 8) == 0)
        return BINARY;
    const uint8_t *nul = memchr(d, 0, n < 512 ? n : 512);
    const uint8_t *nl = memchr(d, '\n', n);
    int text_start = n && (d[0] == '#' || (d[0] >= '0' && d[0] <= '9'));
    int evpt = n >= 4 && memcmp(d, "EVPT", 4) == 0;
    if (!nul && !evpt)
        return TEXT;
    if (nul && nl && nl < nul && text_start && !evpt)
        return TEXT;
    size_t c = resync(d, n, 0);
    if (c < n && c >= EVP_FILE_HEADER_SIZE) {
        *first = c;
        return BINARY_DAMAGED;
    }
    size_t line = 1;
    for (const uint8_t *p = d; nul && p < nul; p++)
        line += *p == '\n';
    if (evpt || !nul)
        snprintf(err, errlen, "not an evalprof trace (bad magic at byte 0)");
    else
        snprintf(err, errlen,
                 "not an evalprof trace (bad magic at byte 0, and a NUL "
                 "byte at byte %zu, line %zu, where a text trace has none)",
                 (size_t)(nul - d), line);
    return NOT_TRACE;
}

/* The first bytes of a stream (up to SNIFF_BYTES), in a malloc'd buffer. */
static int read_head(struct evp_input *in, uint8_t **head, size_t *n, char *err,
                     size_t errlen)
{
    *head = malloc(SNIFF_BYTES);
    if (!*head) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    ssize_t r = evp_file_read(in->fd, *head, SNIFF_BYTES);
    if (r < 0) {
        snprintf(err, errlen, "%s", strerror((int)-r));
        return (int)r;
    }
    *n = (size_t)r;
    return 0;
}

/* The input of evp_trace_open, on its way into the trace. */
struct load {
    struct evp_trace *t;
    int format; /* opts->format */
    struct evp_input in;
    uint8_t *data; /* the file (mapped or read), or a stream's head */
    size_t n;
    int mapped;
    char *err;
    size_t errlen;
};

/*
 * Read LD's input into the trace, by its kind: a text trace line by line
 * (a stream as it comes, keeping the records, not the text); a binary one
 * kept whole (read to its end first when a stream: its chunks are what
 * the reports need), the trace taking over the buffer.  Run under
 * evp_file_guard(): a mapped file that shrinks meanwhile makes this
 * return -EIO.
 */
static int load(void *ctx)
{
    struct load *ld = ctx;
    struct evp_trace *t = ld->t;
    if (ld->n == 0) {
        snprintf(ld->err, ld->errlen, "empty file");
        return -ENODATA;
    }
    size_t first;
    char why[160];
    enum kind kind = sniff(ld->data, ld->n, &first, why, sizeof why);
    if (ld->format == 2 || (ld->format == 0 && kind == TEXT)) {
        t->info.text = 1;
        return evp_text_read(t, (const char *)ld->data, ld->n, ld->in.fd,
                             ld->err, ld->errlen);
    }
    if (kind == NOT_TRACE || kind == TEXT) {
        snprintf(ld->err, ld->errlen, "%s",
                 kind == TEXT ? "not an evalprof trace (bad magic at byte 0)"
                              : why);
        return -EPROTO;
    }
    if (ld->in.stream) {
        int rc = evp_file_slurp(&ld->in, 0, (char **)&ld->data, &ld->n, ld->err,
                                ld->errlen);
        ld->in.fd = -1;
        if (rc < 0)
            return rc;
    }
    t->data = ld->data;
    t->size = ld->n;
    t->mapped = ld->mapped;
    ld->data = NULL;
    return read_binary(t, kind == BINARY_DAMAGED ? first : 0, ld->err,
                       ld->errlen);
}

int evp_trace_open(const char *path, const struct evp_open_opts *opts,
                   struct evp_trace **out, char *err, size_t errlen)
{
    static const struct evp_open_opts defaults;
    if (!opts)
        opts = &defaults;
    *out = NULL;
    struct evp_trace *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    t->path = strdup(path);
    t->warn = opts->warn ? opts->warn : default_warn;
    t->warn_ctx = opts->warn_ctx;
    t->info.path = t->path;
    t->info.pid = -1;
    t->info.parent_pid = -1;
    t->info.start_wall_ns = -1;
    t->info.opcode_source = "";
    t->mult = UINT64_C(1) << 32;
    t->nfuncs = 1;

    struct load ld = {
        .t = t, .format = opts->format, .err = err, .errlen = errlen};
    int rc = evp_file_open(path, &ld.in, err, errlen);
    if (rc < 0)
        goto fail;
    if (!ld.in.stream &&
        evp_file_map(&ld.in, path, (const void **)&ld.data, &ld.n) == 0)
        ld.mapped = 1;
    else if (!ld.in.stream)
        rc = evp_file_slurp(&ld.in, 0, (char **)&ld.data, &ld.n, err, errlen);
    else
        rc = read_head(&ld.in, &ld.data, &ld.n, err, errlen);
    if (!ld.in.stream)
        ld.in.fd = -1; /* mapped or read: closed */
    if (rc == 0)
        rc = evp_file_guard(load, &ld, err, errlen);
    if (ld.data && ld.mapped)
        evp_file_unmap(ld.data, ld.n);
    else
        free(ld.data);
    if (ld.in.fd >= 0)
        close(ld.in.fd);
    if (rc < 0)
        goto fail;
    if (!t->nops || !t->ops_from_trace) {
        const char *ver = opts->python;
        if (!ver || !*ver)
            ver = t->info.text ? "3.10" : NULL;
        char mm[16];
        unsigned major, minor;
        const char *pv = evp_trace_meta(t, "python.version");
        if (!ver && pv && sscanf(pv, "%u.%u", &major, &minor) == 2) {
            /* A binary trace without a table: go by its version. */
            snprintf(mm, sizeof mm, "%u.%u", major, minor);
            ver = mm;
        }
        if (ver && !t->ops_from_trace &&
            evp_trace_builtin_opcodes(t, ver) < 0) {
            snprintf(err, errlen,
                     "no built-in opcode table for Python %s (known: %s)", ver,
                     evp_optable_versions());
            rc = -EINVAL;
            goto fail;
        }
    } else {
        t->info.opcode_source = "recorded in the trace";
    }
    evp_trace_finish(t);
    if (t->warnings_lost) {
        free(t->warnings[--t->nwarnings]); /* room for the count */
        t->warnings_lost++;
        evp_trace_warnf(t, "%" PRIu64 " more warnings not kept",
                        t->warnings_lost);
    }
    t->opened = 1;
    for (size_t i = 0; i < t->nwarnings && i <= MAX_WARNINGS_PRINTED; i++)
        report_warning(t, i);
    *out = t;
    return 0;
fail:
    evp_trace_close(t);
    return rc;
}

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
    evp_samples_finish(t);
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
    evp_text_reader_free(t);
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

uint64_t evp_trace_end_ns(const struct evp_trace *t)
{
    if (t->info.has_end)
        return t->info.end_ns;
    /* No end record: the latest last event over the streams. */
    uint64_t end = t->info.start_ns;
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
    uint64_t last = evp_samples_last_ns(t);
    return last > end ? last : end;
}
