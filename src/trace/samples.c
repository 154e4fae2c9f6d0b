/*
 * Samples of a sampled trace (docs/FORMAT.md "Samples"): the STACKS
 * entries gathered into the stack table and the SAMPLES chunks indexed
 * per stream (trace.h "samples"); the replay engine walks them
 * (replay.h).
 *
 * Samples stay encoded where they are, as events do (reader.c): the
 * index pass decodes each chunk once to check it and count its samples
 * and their weights, keeping only its place; the replay engine decodes
 * again, a chunk at a time, and gives the mapping's pages back behind it.
 * A chunk whose samples stop decoding keeps the ones before the damage.
 *
 * The stack table is resolved after every chunk is read, as function ids
 * are: entries may come in any order of chunks, and a damaged chunk costs
 * only its own nodes.  A duplicate or out-of-range entry is refused with a
 * warning; a node whose caller is missing, or whose callers loop, gets
 * the caller EVP_STACK_UNKNOWN, which the views show as "<unknown stack>".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* depth markers while the table is resolved */
#define DEFINED UINT32_MAX        /* entry read, depth not yet known */
#define VISITING (UINT32_MAX - 1) /* on the walk being resolved */

int evp_stack_add(struct evp_trace *t, uint64_t id, uint64_t parent,
                  uint64_t func)
{
    /* ids are dense: far beyond the entries read is damage, refused
     * before it sizes the table.  A caller is not bounded so: one defined
     * later (a writer's "<unknown stack>" node, after the table) is found
     * then, and one never defined is a missing caller, warned of once the
     * table is read. */
    uint64_t bound = (uint64_t)t->nsraw + MAX_STACK_AHEAD;
    if (id == 0 || id > bound || parent > UINT32_MAX || func > MAX_FUNC_ID)
        return -EINVAL;
    if (evp_grow((void **)&t->sraw, &t->sraw_cap, t->nsraw + 1, sizeof *t->sraw,
                 256))
        return -ENOMEM;
    t->sraw[t->nsraw++] =
        (struct stack_entry){(uint32_t)id, (uint32_t)parent, (uint32_t)func};
    return 0;
}

int evp_stacks_parse(struct evp_trace *t, const uint8_t *p, size_t len,
                     uint32_t chunk, uint64_t off)
{
    const uint8_t *end = p + len;
    uint64_t n, id, parent, func;
    if (evp_varint_get(&p, end, &n) < 0)
        return -1;
    uint64_t refused = 0, first_bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (evp_varint_get(&p, end, &id) < 0 ||
            evp_varint_get(&p, end, &parent) < 0 ||
            evp_varint_get(&p, end, &func) < 0) {
            evp_trace_warnf(t,
                            "chunk %u at byte %" PRIu64
                            " (stack table): entry %" PRIu64 " of %" PRIu64
                            " malformed; the rest of the chunk is skipped",
                            chunk, off, i, n);
            break;
        }
        int rc = evp_stack_add(t, id, parent, func);
        if (rc == -ENOMEM)
            return -1;
        if (rc < 0 && !refused++)
            first_bad = id;
    }
    if (refused)
        evp_trace_warnf(t,
                        "chunk %u at byte %" PRIu64 " (stack table): %" PRIu64
                        " entries refused (ids or function ids out of "
                        "range, the first for node %" PRIu64 ")",
                        chunk, off, refused, first_bad);
    return 0;
}

int evp_samples_index(struct evp_trace *t, struct stream *s,
                      struct segment *seg, const uint8_t *payload)
{
    struct evp_samples_cursor c;
    struct evp_sample_rec buf[256];
    uint64_t good = 0, weight = 0;
    long n;
    evp_samples_cursor_init(&c, payload, seg->len, &seg->pf);
    while ((n = evp_samples_decode(&c, buf, 256)) > 0) {
        good += (uint64_t)n;
        for (long i = 0; i < n; i++)
            weight += buf[i].weight;
    }
    if (n < 0)
        evp_trace_warnf(t,
                        "chunk %u at byte %" PRIu64
                        " (samples): stream %u, malformed sample data after "
                        "%" PRIu64 " of %u samples; the rest of the chunk is "
                        "skipped",
                        seg->chunk, seg->offset, seg->pf.stream, good,
                        seg->pf.count);
    seg->pf.count = (uint32_t)good;
    if (evp_grow((void **)&s->ssegs, &s->scap, s->nssegs + 1, sizeof *s->ssegs,
                 2))
        return -1;
    s->ssegs[s->nssegs++] = *seg;
    s->pub.samples += good;
    s->pub.sample_weight += weight;
    s->pub.samples_lost += seg->pf.dropped;
    s->pub.sample_chunks++;
    return 0;
}

/* Depth of every defined node; a walk that meets a missing caller or a
 * loop cuts the stack there.  Returns the number of nodes cut. */
static uint64_t resolve_depths(struct evp_trace *t)
{
    struct evp_stack_node *st = t->stacks;
    uint32_t *path = NULL;
    size_t npath = 0, cap = 0;
    uint64_t cut = 0;
    for (uint32_t i = 1; i <= t->nstacks; i++) {
        if (st[i].depth != DEFINED)
            continue;
        uint32_t cur = i;
        npath = 0;
        while (cur && cur <= t->nstacks && st[cur].depth == DEFINED) {
            if (evp_grow((void **)&path, &cap, npath + 1, sizeof *path, 64)) {
                free(path);
                return cut; /* out of memory: the rest stay unresolved */
            }
            st[cur].depth = VISITING;
            path[npath++] = cur;
            cur = st[cur].parent;
        }
        uint32_t base = 0;
        if (cur && (cur > t->nstacks || st[cur].depth == 0 ||
                    st[cur].depth == VISITING)) {
            /* caller missing or a loop: the outermost node on the walk
             * hangs under "<unknown stack>" */
            st[path[npath - 1]].parent = EVP_STACK_UNKNOWN;
            cut++;
        } else if (cur) {
            base = st[cur].depth;
        }
        while (npath)
            st[path[--npath]].depth = ++base;
    }
    free(path);
    return cut;
}

static void resolve_stacks(struct evp_trace *t)
{
    uint32_t max = 0;
    for (size_t i = 0; i < t->nsraw; i++)
        if (t->sraw[i].id > max)
            max = t->sraw[i].id;
    if (!t->nsraw)
        return;
    t->stacks = calloc((size_t)max + 1, sizeof *t->stacks);
    if (!t->stacks) {
        evp_trace_warnf(t,
                        "out of memory for the stack table (%u nodes); "
                        "samples are shown without their stacks",
                        max);
        goto out;
    }
    t->nstacks = max;
    uint64_t dup = 0;
    uint32_t first_dup = 0;
    for (size_t i = 0; i < t->nsraw; i++) {
        const struct stack_entry *e = &t->sraw[i];
        if (t->stacks[e->id].depth) {
            if (!dup++)
                first_dup = e->id;
            continue;
        }
        t->stacks[e->id] = (struct evp_stack_node){e->parent, e->func, DEFINED};
    }
    if (dup)
        evp_trace_warnf(t,
                        "stack table: %" PRIu64
                        " entries for nodes already defined (the first for "
                        "node %u); the later ones are refused",
                        dup, first_dup);
    uint64_t cut = resolve_depths(t);
    for (uint32_t i = 1; i <= t->nstacks; i++)
        t->info.stack_nodes += t->stacks[i].depth != 0;
    if (cut)
        evp_trace_warnf(t,
                        "stack table: %" PRIu64
                        " nodes name a caller that is missing or damaged; "
                        "their frames are shown under \"%s\"",
                        cut, EVP_STACK_UNKNOWN_NAME);
out:
    free(t->sraw);
    t->sraw = NULL;
    t->nsraw = t->sraw_cap = 0;
}

void evp_samples_finish(struct evp_trace *t)
{
    struct evp_trace_info *in = &t->info;
    resolve_stacks(t);
    in->samples = in->sample_weight = in->samples_lost = 0;
    uint64_t chunks = 0;
    for (size_t k = 0; k < t->nstreams; k++) {
        struct stream *s = &t->streams[k];
        if (!s->nssegs)
            continue;
        evp_segments_order(t, s->pub.id, s->ssegs, s->nssegs, "sample ",
                           "samples");
        chunks += s->nssegs;
        in->samples += s->pub.samples;
        in->sample_weight += s->pub.sample_weight;
        in->samples_lost += s->pub.samples_lost;
    }
    const char *v;
    in->sample_clock = (v = evp_trace_meta(t, "sample.clock")) ? v : "";
    in->sample_blocked = evp_trace_meta(t, "sample.blocked") != NULL;
    double rate = (v = evp_trace_meta(t, "sample.rate_hz")) ? atof(v) : 0;
    double period = (v = evp_trace_meta(t, "sample.period_ns")) ? atof(v) : 0;
    /* damaged figures are no figures */
    if (!(rate > 0 && rate < 1e9))
        rate = 0;
    if (!(period >= 1 && period < 1e12))
        period = 0;
    in->sample_rate_hz = rate ? rate : period ? 1e9 / period : 0;
    in->sample_period_ns = period ? period : rate ? 1e9 / rate : 0;
    in->sample_missed =
        (v = evp_trace_meta(t, "sample.missed")) ? strtoull(v, NULL, 10) : 0;
    in->sampled = chunks > 0 || rate > 0 || period > 0;
}

uint64_t evp_trace_nsamples(const struct evp_trace *t)
{
    return t->info.samples;
}

uint32_t evp_trace_nstacks(const struct evp_trace *t)
{
    return t->nstacks;
}

const struct evp_stack_node *evp_trace_stack(const struct evp_trace *t,
                                             uint32_t id)
{
    if (id == 0 || id > t->nstacks || !t->stacks[id].depth)
        return NULL;
    return &t->stacks[id];
}

unsigned evp_trace_records(const struct evp_trace *t)
{
    return (t->info.events ? EVP_RECORDS_EVENTS : 0u) |
           (t->info.sampled ? EVP_RECORDS_SAMPLES : 0u);
}

/* Trace-clock ns of the latest stream's last sample (0: none). */
static uint64_t samples_last_ns(const struct evp_trace *t)
{
    uint64_t end = 0;
    struct evp_sample_rec buf[256];
    for (size_t k = 0; k < t->nstreams; k++) {
        const struct stream *s = &t->streams[k];
        if (!s->nssegs)
            continue;
        const struct segment *seg = &s->ssegs[s->nssegs - 1];
        struct evp_inflater z = {0};
        const uint8_t *payload = evp_segment_payload(seg, &z);
        uint64_t last = 0;
        long n;
        if (payload) {
            struct evp_samples_cursor c;
            evp_samples_cursor_init(&c, payload, seg->len, &seg->pf);
            while ((n = evp_samples_decode(&c, buf, 256)) > 0)
                last = buf[n - 1].ts;
        }
        evp_inflater_free(&z);
        if (last && evp_trace_ticks_to_ns(t, last) > end)
            end = evp_trace_ticks_to_ns(t, last);
    }
    return end;
}

uint64_t evp_trace_end_ns(const struct evp_trace *t)
{
    if (t->info.has_end)
        return t->info.end_ns;
    /* No end record: the latest last record over the streams. */
    uint64_t end = t->info.start_ns;
    uint64_t last = evp_events_last_ns(t);
    if (last > end)
        end = last;
    last = samples_last_ns(t);
    return last > end ? last : end;
}
