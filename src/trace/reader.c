/*
 * The binary trace reader: the index pass over a `.evp` file's chunks
 * (docs/FORMAT.md), run by evp_trace_open (open.c) on the file's bytes.
 *
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
 * trace of any size costs the index and a chunk, not the file.  STACKS and
 * SAMPLES chunks go to the samples index (samples.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "esc.h"
#include "internal.h"

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
size_t evp_binary_resync(const uint8_t *d, size_t size, size_t off)
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
            size_t next = evp_binary_resync(d, size, off);
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
            size_t next = evp_binary_resync(d, size, off);
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
            size_t next = evp_binary_resync(d, size, off);
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
int evp_binary_read(struct evp_trace *t, size_t first, char *err, size_t errlen)
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
