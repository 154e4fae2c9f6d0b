/*
 * The `.evp` binary trace format: constants and the chunk codec shared by
 * the recorder (which writes) and the reader (which reads).
 *
 * docs/FORMAT.md is the specification, with a diagram; this header is its
 * C mirror.  In short: a 16-byte file header, then chunks.  Each chunk has
 * a 16-byte header (magic, type, flags, payload length, checksum) and a
 * payload; a chunk stands alone, so a file cut anywhere, or with damaged
 * bytes, reads up to (and around) the damage.  All integers little-endian.
 */
#ifndef EVALPROF_FORMAT_H
#define EVALPROF_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "evalprof/events.h"
#include "evalprof/record.h"

#define EVP_FILE_MAGIC "EVPTRACE" /* 8 bytes, no NUL */
#define EVP_FILE_HEADER_SIZE 16
#define EVP_FORMAT_MAJOR 1 /* incompatible changes */
#define EVP_FORMAT_MINOR 2 /* compatible additions */

#define EVP_CHUNK_MAGIC 0x43505645u /* "EVPC" read as little-endian u32 */
#define EVP_CHUNK_HEADER_SIZE 16
#define EVP_CHUNK_MAX_PAYLOAD (64u << 20) /* larger lengths are corrupt */

enum evp_chunk_type {
    EVP_CHUNK_META = 1,    /* key NUL value NUL ... */
    EVP_CHUNK_OPCODES = 2, /* opcode name table */
    EVP_CHUNK_FUNCS = 3,   /* function table entries */
    EVP_CHUNK_THREAD = 4,  /* a thread (stream) and its name */
    EVP_CHUNK_EVENTS = 5,  /* a run of one stream's events */
    EVP_CHUNK_END = 6,     /* end of recording: calibration, drops */
    EVP_CHUNK_STACKS = 7,  /* stack table: frames of sampled stacks */
    EVP_CHUNK_SAMPLES = 8, /* a run of one stream's samples (1.2) */
};

#define EVP_CHUNK_F_ZSTD 0x01u /* payload: u32 raw size, zstd frame */

/* Fixed prefix of an EVENTS payload (40 bytes), then the encoded events. */
struct evp_events_prefix {
    uint32_t stream;     /* thread stream number */
    uint32_t seq;        /* chunk number within the stream, from 0 */
    uint64_t base_ticks; /* the first event's delta is from this */
    uint64_t sync_ticks; /* clock pair sampled when the chunk was written */
    uint64_t sync_ns;    /* CLOCK_MONOTONIC ns of that pair */
    uint32_t count;      /* events in the chunk */
    uint32_t dropped;    /* records of this stream lost just before it */
};
#define EVP_EVENTS_PREFIX_SIZE 40

/* Event codes: the low 4 bits of each event's first varint. */
#define EVP_CODE_EXTENDED 14 /* varint kind follows, then its usual form */
#define EVP_CODE_RAW 15      /* varint kind, varint aux, varint arg */

/* Varints: LEB128, at most 10 bytes for 64 bits. */
#define EVP_VARINT_MAX 10

static inline size_t evp_varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/*
 * Read a varint from [*pp, end).  Returns 0 and advances *pp, or -1 when
 * the input ends inside the varint or it is longer than 10 bytes.
 */
static inline int evp_varint_get(const uint8_t **pp, const uint8_t *end,
                                 uint64_t *out)
{
    const uint8_t *p = *pp;
    if (p < end && *p < 0x80) { /* the common one-byte case */
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *out = v;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

static inline uint64_t evp_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t evp_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void evp_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void evp_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t evp_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline uint64_t evp_get_u64(const uint8_t *p)
{
    return (uint64_t)evp_get_u32(p) | (uint64_t)evp_get_u32(p + 4) << 32;
}

/* Checksum of a chunk: the low 32 bits of XXH3-64 of the payload, seeded
 * with XXH3-64 of header bytes 0-11. */
uint32_t evp_chunk_checksum(const uint8_t *header12, const uint8_t *payload,
                            size_t len);

/* Fill a 16-byte chunk header for PAYLOAD of LEN bytes. */
void evp_chunk_header(uint8_t out[EVP_CHUNK_HEADER_SIZE], unsigned type,
                      unsigned flags, const uint8_t *payload, uint32_t len);

/* Fill the 16-byte file header. */
void evp_file_header(uint8_t out[EVP_FILE_HEADER_SIZE]);

/*
 * Table entries, the one definition of their bytes (docs/FORMAT.md):
 * a string is a varint length and the bytes.  Each returns the bytes
 * written at OUT, which must hold evp_str_bound() of every string plus
 * EVP_VARINT_MAX per number.
 */
static inline size_t evp_str_bound(const char *s)
{
    return EVP_VARINT_MAX + strlen(s);
}
size_t evp_put_str(uint8_t *out, const char *s);
/* FUNCS entry: id, qualified name, file, first line. */
size_t evp_func_entry_put(uint8_t *out, uint32_t id, const char *name,
                          const char *file, uint32_t line);
/* OPCODES entry: opcode, base opcode, name. */
size_t evp_opcode_entry_put(uint8_t *out, unsigned opcode, unsigned base,
                            const char *name);
/* THREAD payload: stream, OS thread id, name. */
size_t evp_thread_put(uint8_t *out, uint32_t stream, uint64_t tid,
                      const char *name);

/* Worst-case encoded size of N records (prefix included). */
static inline size_t evp_events_bound(size_t n)
{
    return EVP_EVENTS_PREFIX_SIZE + n * (1 + 3 * EVP_VARINT_MAX + 2);
}

/*
 * Encode N records into OUT (at least evp_events_bound(n) bytes) as an
 * EVENTS payload: PREFIX (count and base_ticks are filled in from the
 * records) then the events.  Timestamps must not decrease; one that does
 * is stored as equal to its predecessor and counted in *backwards when
 * BACKWARDS is not NULL.  Returns the payload size.
 */
size_t evp_events_encode(uint8_t *out, struct evp_events_prefix *prefix,
                         const struct evp_rec_record *recs, size_t n,
                         uint64_t *backwards);

/*
 * Decode an EVENTS payload of LEN bytes.  Fills *prefix and calls nothing:
 * the caller then walks the body with evp_events_next.
 * Returns 0, or -1 when LEN is shorter than the prefix.
 */
int evp_events_prefix_read(const uint8_t *payload, size_t len,
                           struct evp_events_prefix *prefix);

/* Argument class (enum evp_arg_class) of each kind below EVP_EV__COUNT. */
extern const uint8_t evp_arg_class_of[EVP_EV__COUNT];

/*
 * Decode the event at *PP (before END) into OUT.  *TS holds the previous
 * event's ticks and *LAST_FUNC the previous function id of the chunk;
 * both are advanced.  Returns 0, or -1 for malformed input, leaving
 * everything as it was.  Inline: it is the inner loop of every replay.
 */
static inline int evp_event_decode_one(const uint8_t **pp, const uint8_t *end,
                                       uint64_t *ts, uint32_t *last_func,
                                       struct evp_rec_record *out)
{
    const uint8_t *p = *pp;
    uint64_t h, v, kind, aux = 0, arg = 0;
    uint32_t lf = *last_func;
    if (EVP_LIKELY(end - p >= 2 && p[1] < 0x80 && p[0] >= 0x80)) {
        h = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        p += 2;
    } else if (evp_varint_get(&p, end, &h) < 0) {
        return -1;
    }
    unsigned code = (unsigned)(h & 15);
    kind = code;
    if (code == EVP_CODE_RAW) {
        if (evp_varint_get(&p, end, &kind) < 0 ||
            evp_varint_get(&p, end, &aux) < 0 ||
            evp_varint_get(&p, end, &arg) < 0 || kind > 0xffff ||
            aux > 0xffff || arg > 0xffffffffu)
            return -1;
    } else {
        if (code == EVP_CODE_EXTENDED &&
            (evp_varint_get(&p, end, &kind) < 0 || kind >= EVP_EV__COUNT ||
             kind < EVP_CODE_EXTENDED))
            return -1;
        switch (evp_arg_class_of[kind]) {
        case EVP_ARG_FUNC: {
            if (evp_varint_get(&p, end, &v) < 0)
                return -1;
            /* Unsigned: a damaged delta near +-2^63 must not overflow;
             * any result outside 32 bits is damage. */
            uint64_t f = (uint64_t)lf + (uint64_t)evp_unzigzag(v);
            if (f > 0xffffffffu)
                return -1;
            arg = f;
            lf = (uint32_t)f;
            break;
        }
        case EVP_ARG_OP:
            if (p >= end)
                return -1;
            aux = *p++;
            if (aux == 0xff &&
                (evp_varint_get(&p, end, &aux) < 0 || aux > 0xffff))
                return -1;
            if (evp_varint_get(&p, end, &arg) < 0 || arg > 0xffffffffu)
                return -1;
            break;
        default:
            break;
        }
    }
    *ts += h >> 4;
    out->ts = *ts;
    out->kind = (uint16_t)kind;
    out->aux = (uint16_t)aux;
    out->arg = (uint32_t)arg;
    *last_func = lf;
    *pp = p;
    return 0;
}

/* Cursor over an EVENTS body. */
struct evp_events_cursor {
    const uint8_t *p, *end;
    uint64_t ts;        /* timestamp of the last event decoded */
    uint32_t last_func; /* for function-id deltas */
    uint32_t left;      /* events still to decode per the prefix */
    int bad;            /* malformed input met; next decode returns -1 */
};

void evp_events_cursor_init(struct evp_events_cursor *c, const uint8_t *payload,
                            size_t len, const struct evp_events_prefix *pf);

/*
 * Decode up to MAX records into OUT.  Returns how many were decoded (0 at
 * the end), or -1 on malformed input, with c->p left at the bad byte.
 */
long evp_events_decode(struct evp_events_cursor *c, struct evp_rec_record *out,
                       size_t max);

/* ---- samples (format 1.2) --------------------------------------------- */

/*
 * A sample's state word (docs/FORMAT.md "SAMPLES"): what the sampled
 * thread was doing besides its stack.  Bits 0-8 hold the executed opcode
 * plus one (0: none known), bits 9-13 the phase of the loop as its event
 * kind plus one (0: none reported; a stock interpreter reports none), and
 * the flags above them.
 */
#define EVP_SAMPLE_OP_MASK 0x1ffu
#define EVP_SAMPLE_PHASE_SHIFT 9
#define EVP_SAMPLE_PHASE_MASK (0x1fu << EVP_SAMPLE_PHASE_SHIFT)
#define EVP_SAMPLE_IN_EVAL (1u << 14)   /* in the eval function's code */
#define EVP_SAMPLE_C_CALL (1u << 15)    /* in a callee of the leaf's call */
#define EVP_SAMPLE_NO_GIL (1u << 16)    /* the thread did not hold the GIL */
#define EVP_SAMPLE_TRUNCATED (1u << 17) /* outermost frames not walked */
#define EVP_SAMPLE_NO_FRAME (1u << 18)  /* no Python frame at all */
#define EVP_SAMPLE_GIL_WAIT (1u << 19)  /* no GIL: blocked taking it */
#define EVP_SAMPLE_SYSCALL (1u << 20)   /* blocked in another system call */
#define EVP_SAMPLE_NO_PC (1u << 21)  /* no program counter: 14, 15 not told */
#define EVP_SAMPLE_IN_JIT (1u << 22) /* in JIT-compiled code (with 23) */
#define EVP_SAMPLE_TIER2                                                       \
    (1u << 23) /* running a trace of the tier-2 optimizer */
#define EVP_SAMPLE_KNOWN_FLAGS 0xffc000u

static inline uint32_t evp_sample_state(unsigned opcode1, unsigned phase1,
                                        uint32_t flags)
{
    return (opcode1 & EVP_SAMPLE_OP_MASK) |
           (phase1 << EVP_SAMPLE_PHASE_SHIFT & EVP_SAMPLE_PHASE_MASK) | flags;
}
/* Executed opcode, or -1 when the sample names none. */
static inline int evp_sample_opcode(uint32_t state)
{
    return (int)(state & EVP_SAMPLE_OP_MASK) - 1;
}
/* Phase event kind, or -1 when the sample names none. */
static inline int evp_sample_phase(uint32_t state)
{
    return (int)((state & EVP_SAMPLE_PHASE_MASK) >> EVP_SAMPLE_PHASE_SHIFT) - 1;
}

/* One sample, as the writer encodes it and the reader decodes it. */
struct evp_sample_rec {
    uint64_t ts;     /* recorder clock ticks */
    uint32_t stack;  /* leaf frame's stack node id (STACKS); 0: no frame */
    uint32_t state;  /* EVP_SAMPLE_* state word */
    uint32_t unit;   /* leaf frame's code unit + 1; 0: unknown */
    uint32_t weight; /* timer periods it stands for (>= 1) */
};

/* STACKS entry: node id (>= 1), parent node (0: outermost), function. */
size_t evp_stack_entry_put(uint8_t *out, uint32_t id, uint32_t parent,
                           uint32_t func);

/* Worst-case encoded size of N samples (prefix included). */
static inline size_t evp_samples_bound(size_t n)
{
    return EVP_EVENTS_PREFIX_SIZE + n * (5 * EVP_VARINT_MAX);
}

/*
 * Encode N samples into OUT (at least evp_samples_bound(n) bytes) as a
 * SAMPLES payload: the EVENTS prefix (count and base_ticks filled in;
 * dropped counts samples) then the samples.  Times that decrease are
 * stored as equal to their predecessor and counted in *BACKWARDS when
 * not NULL; a weight of 0 is stored as 1.  Returns the payload size.
 */
size_t evp_samples_encode(uint8_t *out, struct evp_events_prefix *prefix,
                          const struct evp_sample_rec *s, size_t n,
                          uint64_t *backwards);

/* Cursor over a SAMPLES body (after evp_events_prefix_read). */
struct evp_samples_cursor {
    const uint8_t *p, *end;
    uint64_t ts;    /* time of the last sample decoded */
    uint32_t stack; /* its stack, for the stack-id deltas */
    uint32_t left;  /* samples still to decode per the prefix */
    int bad;        /* malformed input met; next decode returns -1 */
};

void evp_samples_cursor_init(struct evp_samples_cursor *c,
                             const uint8_t *payload, size_t len,
                             const struct evp_events_prefix *pf);

/*
 * Decode up to MAX samples into OUT.  Returns how many were decoded (0 at
 * the end), or -1 on malformed input (what came before it is returned
 * first, by the call before).
 */
long evp_samples_decode(struct evp_samples_cursor *c,
                        struct evp_sample_rec *out, size_t max);

#endif /* EVALPROF_FORMAT_H */
