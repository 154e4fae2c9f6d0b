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

/* Argument class of kinds below EVP_EV__COUNT, as a byte table for the
 * hot decode loop. */
static uint8_t arg_class[EVP_EV__COUNT];
static int arg_class_ready;

static void arg_class_init(void)
{
    if (__atomic_load_n(&arg_class_ready, __ATOMIC_ACQUIRE))
        return;
    for (unsigned k = 0; k < EVP_EV__COUNT; k++)
        arg_class[k] = (uint8_t)evp_kind_info(k)->arg;
    __atomic_store_n(&arg_class_ready, 1, __ATOMIC_RELEASE);
}

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
    arg_class_init();
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
            form = arg_class[kind];
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
    arg_class_init();
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
    const uint8_t *p = c->p, *end = c->end;
    uint64_t ts = c->ts;
    uint32_t last_func = c->last_func;
    size_t n = 0;
    uint64_t h, v, aux, arg;

    if (c->bad)
        return -1;
    if (max > c->left)
        max = c->left;
    while (n < max) {
        const uint8_t *start = p;
        if (EVP_LIKELY(end - p >= 2 && p[1] < 0x80 && p[0] >= 0x80)) {
            h = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
            p += 2;
        } else if (evp_varint_get(&p, end, &h) < 0) {
            goto bad;
        }
        unsigned code = (unsigned)(h & 15);
        uint64_t kind = code;
        uint64_t ev_ts = ts + (h >> 4);
        aux = arg = 0;
        if (code == EVP_CODE_RAW) {
            if (evp_varint_get(&p, end, &kind) < 0 ||
                evp_varint_get(&p, end, &aux) < 0 ||
                evp_varint_get(&p, end, &arg) < 0 || kind > 0xffff ||
                aux > 0xffff || arg > 0xffffffffu)
                goto bad_at_start;
        } else {
            if (code == EVP_CODE_EXTENDED &&
                (evp_varint_get(&p, end, &kind) < 0 ||
                 kind >= EVP_EV__COUNT || kind < EVP_CODE_EXTENDED))
                goto bad_at_start;
            switch (arg_class[kind]) {
            case EVP_ARG_FUNC: {
                if (evp_varint_get(&p, end, &v) < 0)
                    goto bad_at_start;
                /* Unsigned: a damaged delta near +-2^63 must not
                 * overflow; any result outside 32 bits is damage. */
                uint64_t f = (uint64_t)last_func + (uint64_t)evp_unzigzag(v);
                if (f > 0xffffffffu)
                    goto bad_at_start;
                arg = f;
                last_func = (uint32_t)f;
                break;
            }
            case EVP_ARG_OP:
                if (p >= end)
                    goto bad_at_start;
                aux = *p++;
                if (aux == 0xff &&
                    (evp_varint_get(&p, end, &aux) < 0 || aux > 0xffff))
                    goto bad_at_start;
                if (evp_varint_get(&p, end, &arg) < 0 || arg > 0xffffffffu)
                    goto bad_at_start;
                break;
            default:
                break;
            }
        }
        ts = ev_ts;
        out[n].ts = ts;
        out[n].kind = (uint16_t)kind;
        out[n].aux = (uint16_t)aux;
        out[n].arg = (uint32_t)arg;
        n++;
        continue;
    bad_at_start:
        p = start;
    bad:
        /* Hand out what was decoded; report the damage on the next call. */
        c->bad = 1;
        c->p = p;
        c->ts = ts;
        c->last_func = last_func;
        c->left -= (uint32_t)n;
        return n ? (long)n : -1;
    }
    c->p = p;
    c->ts = ts;
    c->last_func = last_func;
    c->left -= (uint32_t)n;
    return (long)n;
}
