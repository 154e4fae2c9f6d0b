/*
 * The sampled chunks of a trace file, read by walking its chunks with the
 * format's codec (docs/FORMAT.md "Samples"): the stack table and every
 * sample with its stream, and whether the file keeps the order the format
 * asks for (a node's parent before it, a node before the first sample
 * that uses it, SAMPLES sequence numbers from 0 per stream), zstd
 * chunks inflated.  For the
 * recorder's sampling tests, which check the bytes the recorder wrote.
 */
#ifndef EVP_TEST_SAMPLED_CHUNKS_H
#define EVP_TEST_SAMPLED_CHUNKS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "evalprof/format.h"

struct sc_sample {
    uint32_t stream;
    struct evp_sample_rec s;
};

struct sc_trace {
    struct {
        uint32_t parent, func;
    } * node; /* by id; node[0] unused */
    size_t nnodes;
    struct sc_sample *samples;
    size_t nsamples, cap;
    uint64_t dropped;       /* the SAMPLES prefixes' dropped counts */
    uint64_t samples_bytes; /* SAMPLES chunks, headers included */
    uint64_t stacks_bytes;  /* STACKS chunks, headers included */
    uint64_t file_bytes;
    size_t samples_chunks;
    size_t compressed; /* STACKS and SAMPLES chunks that were zstd */
    int order_ok;      /* parents before children, nodes before samples */
    int seq_ok;        /* per-stream SAMPLES sequence numbers 0, 1, ... */
    uint32_t next_seq[256];
    char err[160];
};

static void sc_free(struct sc_trace *t)
{
    free(t->node);
    free(t->samples);
    memset(t, 0, sizeof *t);
}

static int sc_stacks(struct sc_trace *t, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    uint64_t n, id, parent, func;
    if (evp_varint_get(&p, end, &n) < 0)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        if (evp_varint_get(&p, end, &id) < 0 ||
            evp_varint_get(&p, end, &parent) < 0 ||
            evp_varint_get(&p, end, &func) < 0)
            return -1;
        if (id != t->nnodes + 1 || parent > t->nnodes || !func)
            t->order_ok = 0;
        void *g = realloc(t->node, (t->nnodes + 2) * sizeof *t->node);
        if (!g)
            return -1;
        t->node = g;
        t->nnodes++;
        t->node[t->nnodes].parent = (uint32_t)parent;
        t->node[t->nnodes].func = (uint32_t)func;
    }
    return p == end ? 0 : -1;
}

static int sc_samples(struct sc_trace *t, const uint8_t *p, size_t len)
{
    struct evp_events_prefix pf;
    if (evp_events_prefix_read(p, len, &pf) < 0)
        return -1;
    if (pf.stream < 256) {
        if (pf.seq != t->next_seq[pf.stream])
            t->seq_ok = 0;
        t->next_seq[pf.stream] = pf.seq + 1;
    }
    t->dropped += pf.dropped;
    struct evp_samples_cursor c;
    evp_samples_cursor_init(&c, p, len, &pf);
    struct evp_sample_rec buf[256];
    long got;
    while ((got = evp_samples_decode(&c, buf, 256)) > 0) {
        for (long i = 0; i < got; i++) {
            if (t->nsamples == t->cap) {
                t->cap = t->cap ? 2 * t->cap : 1024;
                void *g = realloc(t->samples, t->cap * sizeof *t->samples);
                if (!g)
                    return -1;
                t->samples = g;
            }
            if (buf[i].stack > t->nnodes)
                t->order_ok = 0;
            t->samples[t->nsamples].stream = pf.stream;
            t->samples[t->nsamples].s = buf[i];
            t->nsamples++;
        }
    }
    return got < 0 || c.left ? -1 : 0;
}

/* Read PATH's sampled chunks into *T: 0, or -1 with T->err set. */
static int sc_read(const char *path, struct sc_trace *t)
{
    memset(t, 0, sizeof *t);
    t->order_ok = t->seq_ok = 1;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(t->err, sizeof t->err, "%s: cannot open", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(size > 0 ? (size_t)size : 1);
    if (!b || fread(b, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(b);
        snprintf(t->err, sizeof t->err, "%s: cannot read", path);
        return -1;
    }
    fclose(f);
    t->file_bytes = (uint64_t)size;
    size_t pos = EVP_FILE_HEADER_SIZE;
    int rc = 0;
    while (rc == 0 && pos + EVP_CHUNK_HEADER_SIZE <= (size_t)size) {
        const uint8_t *h = b + pos;
        uint32_t len = evp_get_u32(h + 8);
        if (evp_get_u32(h) != EVP_CHUNK_MAGIC ||
            len > (size_t)size - pos - EVP_CHUNK_HEADER_SIZE) {
            snprintf(t->err, sizeof t->err, "bad chunk at byte %zu", pos);
            rc = -1;
            break;
        }
        const uint8_t *p = h + EVP_CHUNK_HEADER_SIZE;
        unsigned type = h[4];
        uint8_t *raw = NULL;
        if ((type == EVP_CHUNK_STACKS || type == EVP_CHUNK_SAMPLES) &&
            (h[5] & EVP_CHUNK_F_ZSTD)) {
            uint32_t rawlen = len >= 4 ? evp_get_u32(p) : 0;
            raw = malloc(rawlen ? rawlen : 1);
            if (!raw || len < 4 ||
                ZSTD_decompress(raw, rawlen, p + 4, len - 4) != rawlen) {
                snprintf(t->err, sizeof t->err, "bad zstd chunk at byte %zu",
                         pos);
                free(raw);
                rc = -1;
                break;
            }
            t->compressed++;
            p = raw;
            len = rawlen;
        }
        if (type == EVP_CHUNK_STACKS) {
            t->stacks_bytes += EVP_CHUNK_HEADER_SIZE + len;
            if (sc_stacks(t, p, len) < 0) {
                snprintf(t->err, sizeof t->err, "bad STACKS at byte %zu", pos);
                rc = -1;
            }
        } else if (type == EVP_CHUNK_SAMPLES) {
            t->samples_bytes += EVP_CHUNK_HEADER_SIZE + len;
            t->samples_chunks++;
            if (sc_samples(t, p, len) < 0) {
                snprintf(t->err, sizeof t->err, "bad SAMPLES at byte %zu", pos);
                rc = -1;
            }
        }
        pos += EVP_CHUNK_HEADER_SIZE + evp_get_u32(h + 8);
        free(raw);
    }
    free(b);
    return rc;
}

/* The function of the frame DEPTH levels above sample S's leaf (0: the
 * leaf), or 0 when the stack is shallower. */
static uint32_t sc_func_at(const struct sc_trace *t, const struct sc_sample *s,
                           unsigned depth)
{
    uint32_t n = s->s.stack;
    while (n && depth--)
        n = n <= t->nnodes ? t->node[n].parent : 0;
    return n && n <= t->nnodes ? t->node[n].func : 0;
}

/* Frames of sample S's stack. */
static unsigned sc_depth(const struct sc_trace *t, const struct sc_sample *s)
{
    unsigned d = 0;
    for (uint32_t n = s->s.stack; n && n <= t->nnodes && d < 100000;
         n = t->node[n].parent)
        d++;
    return d;
}

#endif /* EVP_TEST_SAMPLED_CHUNKS_H */
