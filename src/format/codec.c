/*
 * The `.evp` chunk codec: chunk headers and checksums, and the compact
 * encoding of a run of events (docs/FORMAT.md, "Events").
 *
 * Shared by the recorder's writer thread, the reader and `evalprof
 * import`, so that there is exactly one definition of the bytes.  Each
 * event costs one varint holding (time delta << 4 | code) plus, by kind,
 * nothing, a zigzag function-id delta, or an opcode byte and an oparg
 * varint; on the discussion's event mix that is about 2.5 bytes an event.
 */
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "evalprof/format.h"

uint32_t evp_chunk_checksum(const uint8_t *header12, const uint8_t *payload,
                            size_t len)
{
    /* XXH3 of the payload, seeded with XXH3 of the header: fast enough
     * that checking every chunk costs a few percent of a read. */
    uint64_t seed = XXH3_64bits(header12, 12);
    return (uint32_t)XXH3_64bits_withSeed(payload, len, seed);
}

void evp_chunk_header(uint8_t out[EVP_CHUNK_HEADER_SIZE], unsigned type,
                      unsigned flags, const uint8_t *payload, uint32_t len)
{
    evp_put_u32(out, EVP_CHUNK_MAGIC);
    out[4] = (uint8_t)type;
    out[5] = (uint8_t)flags;
    out[6] = out[7] = 0;
    evp_put_u32(out + 8, len);
    evp_put_u32(out + 12, evp_chunk_checksum(out, payload, len));
}

size_t evp_put_str(uint8_t *out, const char *s)
{
    size_t n = strlen(s), k = evp_varint_put(out, n);
    memcpy(out + k, s, n);
    return k + n;
}

size_t evp_func_entry_put(uint8_t *out, uint32_t id, const char *name,
                          const char *file, uint32_t line)
{
    size_t k = evp_varint_put(out, id);
    k += evp_put_str(out + k, name);
    k += evp_put_str(out + k, file);
    k += evp_varint_put(out + k, line);
    return k;
}

size_t evp_opcode_entry_put(uint8_t *out, unsigned opcode, unsigned base,
                            const char *name)
{
    size_t k = evp_varint_put(out, opcode);
    k += evp_varint_put(out + k, base);
    k += evp_put_str(out + k, name);
    return k;
}

size_t evp_thread_put(uint8_t *out, uint32_t stream, uint64_t tid,
                      const char *name)
{
    size_t k = evp_varint_put(out, stream);
    k += evp_varint_put(out + k, tid);
    k += evp_put_str(out + k, name);
    return k;
}

void evp_file_header(uint8_t out[EVP_FILE_HEADER_SIZE])
{
    memcpy(out, EVP_FILE_MAGIC, 8);
    out[8] = EVP_FORMAT_MAJOR;
    out[9] = 0;
    out[10] = EVP_FORMAT_MINOR;
    out[11] = 0;
    evp_put_u32(out + 12, 0);
}

/* Largest time delta an event header can carry (the code takes 4 bits). */
#define DELTA_MAX (UINT64_C(1) << 59)

size_t evp_events_encode(uint8_t *out, struct evp_events_prefix *pf,
                         const struct evp_rec_record *recs, size_t n,
                         uint64_t *backwards)
{
    uint8_t *p = out + EVP_EVENTS_PREFIX_SIZE;
    uint64_t prev = n ? recs[0].ts : pf->base_ticks;
    uint32_t last_func = 0;

    pf->base_ticks = prev;
    pf->count = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        const struct evp_rec_record *r = &recs[i];
        uint64_t ts = r->ts;
        if (ts < prev || ts - prev > DELTA_MAX) {
            /* A clock that went backwards (or a wild jump): keep order. */
            if (backwards)
                (*backwards)++;
            ts = ts < prev ? prev : prev + DELTA_MAX;
        }
        uint64_t delta = ts - prev;
        prev = ts;

        unsigned kind = r->kind;
        unsigned code, form;
        if (kind < EVP_EV__COUNT) {
            form = evp_arg_class_of[kind];
            code = kind < EVP_CODE_EXTENDED ? kind : EVP_CODE_EXTENDED;
            if ((form == EVP_ARG_NONE && (r->aux || r->arg)) ||
                (form == EVP_ARG_FUNC && r->aux))
                code = EVP_CODE_RAW;
        } else {
            form = EVP_ARG_NONE;
            code = EVP_CODE_RAW;
        }
        p += evp_varint_put(p, delta << 4 | code);
        if (code == EVP_CODE_RAW) {
            p += evp_varint_put(p, kind);
            p += evp_varint_put(p, r->aux);
            p += evp_varint_put(p, r->arg);
            continue;
        }
        if (code == EVP_CODE_EXTENDED)
            p += evp_varint_put(p, kind);
        if (form == EVP_ARG_FUNC) {
            p += evp_varint_put(
                p, evp_zigzag((int64_t)r->arg - (int64_t)last_func));
            last_func = r->arg;
        } else if (form == EVP_ARG_OP) {
            if (r->aux < 0xff) {
                *p++ = (uint8_t)r->aux;
            } else {
                *p++ = 0xff;
                p += evp_varint_put(p, r->aux);
            }
            p += evp_varint_put(p, r->arg);
        }
    }
    evp_put_u32(out, pf->stream);
    evp_put_u32(out + 4, pf->seq);
    evp_put_u64(out + 8, pf->base_ticks);
    evp_put_u64(out + 16, pf->sync_ticks);
    evp_put_u64(out + 24, pf->sync_ns);
    evp_put_u32(out + 32, pf->count);
    evp_put_u32(out + 36, pf->dropped);
    return (size_t)(p - out);
}

int evp_events_prefix_read(const uint8_t *payload, size_t len,
                           struct evp_events_prefix *pf)
{
    if (len < EVP_EVENTS_PREFIX_SIZE)
        return -1;
    pf->stream = evp_get_u32(payload);
    pf->seq = evp_get_u32(payload + 4);
    pf->base_ticks = evp_get_u64(payload + 8);
    pf->sync_ticks = evp_get_u64(payload + 16);
    pf->sync_ns = evp_get_u64(payload + 24);
    pf->count = evp_get_u32(payload + 32);
    pf->dropped = evp_get_u32(payload + 36);
    return 0;
}

void evp_events_cursor_init(struct evp_events_cursor *c, const uint8_t *payload,
                            size_t len, const struct evp_events_prefix *pf)
{
    c->p = payload + EVP_EVENTS_PREFIX_SIZE;
    c->end = payload + len;
    c->ts = pf->base_ticks;
    c->last_func = 0;
    c->left = pf->count;
    c->bad = 0;
}

long evp_events_decode(struct evp_events_cursor *c, struct evp_rec_record *out,
                       size_t max)
{
    if (c->bad)
        return -1;
    if (max > c->left)
        max = c->left;
    size_t n = 0;
    while (n < max && evp_event_decode_one(&c->p, c->end, &c->ts, &c->last_func,
                                           &out[n]) == 0)
        n++;
    c->left -= (uint32_t)n;
    if (n < max) {
        /* Hand out what was decoded; report the damage on the next call. */
        c->bad = 1;
        return n ? (long)n : -1;
    }
    return (long)n;
}

size_t evp_stack_entry_put(uint8_t *out, uint32_t id, uint32_t parent,
                           uint32_t func)
{
    size_t n = evp_varint_put(out, id);
    n += evp_varint_put(out + n, parent);
    n += evp_varint_put(out + n, func);
    return n;
}

/* Samples: delta ticks, zigzag stack delta, state, unit + 1, weight - 1. */
size_t evp_samples_encode(uint8_t *out, struct evp_events_prefix *pf,
                          const struct evp_sample_rec *s, size_t n,
                          uint64_t *backwards)
{
    uint8_t *p = out + EVP_EVENTS_PREFIX_SIZE;
    uint64_t prev = n ? s[0].ts : pf->base_ticks;
    uint32_t stack = 0;

    pf->base_ticks = prev;
    pf->count = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        uint64_t ts = s[i].ts;
        if (ts < prev) {
            if (backwards)
                (*backwards)++;
            ts = prev;
        }
        p += evp_varint_put(p, ts - prev);
        prev = ts;
        p +=
            evp_varint_put(p, evp_zigzag((int64_t)s[i].stack - (int64_t)stack));
        stack = s[i].stack;
        p += evp_varint_put(p, s[i].state);
        p += evp_varint_put(p, s[i].unit);
        p += evp_varint_put(p, s[i].weight ? s[i].weight - 1 : 0);
    }
    evp_put_u32(out, pf->stream);
    evp_put_u32(out + 4, pf->seq);
    evp_put_u64(out + 8, pf->base_ticks);
    evp_put_u64(out + 16, pf->sync_ticks);
    evp_put_u64(out + 24, pf->sync_ns);
    evp_put_u32(out + 32, pf->count);
    evp_put_u32(out + 36, pf->dropped);
    return (size_t)(p - out);
}

void evp_samples_cursor_init(struct evp_samples_cursor *c,
                             const uint8_t *payload, size_t len,
                             const struct evp_events_prefix *pf)
{
    c->p = payload + EVP_EVENTS_PREFIX_SIZE;
    c->end = payload + len;
    c->ts = pf->base_ticks;
    c->stack = 0;
    c->left = pf->count;
    c->bad = 0;
}

static int sample_decode_one(struct evp_samples_cursor *c,
                             struct evp_sample_rec *out)
{
    const uint8_t *p = c->p;
    uint64_t dt, ds, state, unit, w;
    if (evp_varint_get(&p, c->end, &dt) < 0 ||
        evp_varint_get(&p, c->end, &ds) < 0 ||
        evp_varint_get(&p, c->end, &state) < 0 ||
        evp_varint_get(&p, c->end, &unit) < 0 ||
        evp_varint_get(&p, c->end, &w) < 0)
        return -1;
    uint64_t stack = (uint64_t)c->stack + (uint64_t)evp_unzigzag(ds);
    if (stack > 0xffffffffu || state > 0xffffffffu || unit > 0xffffffffu ||
        w >= 0xffffffffu || dt > UINT64_MAX - c->ts)
        return -1;
    c->ts += dt;
    c->stack = (uint32_t)stack;
    c->p = p;
    out->ts = c->ts;
    out->stack = (uint32_t)stack;
    out->state = (uint32_t)state;
    out->unit = (uint32_t)unit;
    out->weight = (uint32_t)w + 1;
    return 0;
}

long evp_samples_decode(struct evp_samples_cursor *c,
                        struct evp_sample_rec *out, size_t max)
{
    if (c->bad)
        return -1;
    if (max > c->left)
        max = c->left;
    size_t n = 0;
    while (n < max && sample_decode_one(c, &out[n]) == 0)
        n++;
    c->left -= (uint32_t)n;
    if (n < max) {
        c->bad = 1;
        return n ? (long)n : -1;
    }
    return (long)n;
}
