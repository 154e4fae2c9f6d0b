/*
 * The replay engine: turns each stream's records into replayed events
 * (elapsed time, depth, function) and hands them to a view in batches,
 * then the stream's samples, each with its stack resolved from the
 * trace's stack table.
 *
 * An event's elapsed time is only known when the next event of its stream
 * arrives, so the engine keeps one event pending.  "# log written" records
 * of text traces are folded into the pending event (their time is left
 * out of its elapsed figure).  The call stack is kept here once for all
 * views; with func_stats the engine also sums inclusive and self time per
 * function, counting a recursive function's time only at its outermost
 * activation.
 *
 * Compensation, done here once for every view: the recorder measured what
 * one event costs (and mode B what one event of each kind costs the
 * program in all, its callbacks included); with compensate on, that cost
 * is taken off every elapsed time, by the kind of the event (what an
 * interval too short cannot give comes off the next, up to one event's
 * cost), the cost of all events inside a call is taken off the call's
 * inclusive time, and each event's compensated clock (evp_event.at) runs
 * slower by as much, so that timelines and function times agree.  The
 * recorder's own time (buffer hand-offs, EVP_EV_RECORDER) is not taken
 * off: it is an "[evalprof]" callee of the function it interrupted, in
 * that function's inclusive time and never in its self time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "evalprof/replay.h"
#include "internal.h"

#define BATCH 512
#define SBATCH 256 /* samples a batch */

/* What a followed frame needs for function times (func_stats only). */
struct frame {
    uint64_t ts;    /* ns at the push */
    uint64_t ovh;   /* overhead accumulated before the push */
    uint64_t child; /* compensated inclusive time of callees */
};

struct rstate {
    struct evp_trace *t;
    const struct evp_replay_opts *o;
    const struct evp_replay_ops *ops;
    void *ctx;
    struct evp_event out[BATCH + 1]; /* out[nout] is the pending event */
    size_t nout;
    int have_pend;
    uint64_t pend_log; /* log-written ns inside the pending event */
    /* The call stack: DEPTH frames open, the first EVP_REPLAY_MAX_FRAMES
     * of them followed (their functions in FUNCS, their times in FRAMES
     * when func_stats asks for them). */
    size_t depth;
    uint32_t *funcs;
    size_t funcs_cap;
    struct frame *frames;
    size_t frames_cap;
    size_t deepest; /* most frames open at once in this stream */
    /* opts->frames; BATCH_LOW: the lowest depth a pop reached in the
     * batch being gathered (SIZE_MAX: none), at or above which a push
     * starts a new batch, so that no event of a batch sees a frame
     * replaced by a later one */
    struct evp_replay_frames *pub;
    size_t batch_low;
    uint32_t *active;              /* per function id: open activations */
    uint32_t nstat;                /* entries in func_stats / active */
    uint64_t cost;                 /* non-zero: compensate (by kcost) */
    uint64_t kcost[EVP_EV__COUNT]; /* ns subtracted per event, by kind */
    uint64_t kmax;                 /* the largest kcost: the most carried */
    uint64_t carry; /* cost not yet taken off (an interval too short) */
    struct evp_func_stats *fstats; /* opts->func_stats */
    int keep_log;                  /* opts->keep_log */
    uint32_t top, parent;          /* innermost frame's function, its caller */
    uint64_t ovh;                  /* accumulated overhead of this stream */
    struct evp_replay_stats st;
    struct evp_inflater z; /* the compressed chunk being replayed */
    /* samples: a batch, and their frames end to end */
    struct evp_sample *smp;
    uint32_t *sfunc;
    size_t sfunc_cap;
    int rc;
};

/* KIND's nesting effect, from the kinds table's constant push and pop
 * sets (events.h): no table to fill, nothing shared between replays that
 * run in several threads at once. */
static inline unsigned nest_of(unsigned kind)
{
    return evp_kind_pushes(kind) ? EVP_NEST_PUSH
           : evp_kind_pops(kind) ? EVP_NEST_POP
                                 : EVP_NEST_NONE;
}

/* The frames as the view sees them (opts->frames), before a callback. */
static void show_frames(struct rstate *r)
{
    if (r->pub) {
        r->pub->func = r->funcs;
        r->pub->depth = (int32_t)r->depth;
    }
}

static int flush_out(struct rstate *r)
{
    if (r->nout && !r->rc) {
        show_frames(r);
        int rc = r->ops->events(r->ctx, r->out, r->nout);
        if (rc)
            r->rc = rc;
    }
    r->nout = 0;
    r->batch_low = SIZE_MAX;
    return r->rc;
}

/* Hand the view the finished events before the pending one, which
 * becomes the first of the next batch. */
static void flush_before_pending(struct rstate *r)
{
    struct evp_event pending = r->out[r->nout];
    flush_out(r);
    r->out[0] = pending;
}

/*
 * The state the per-event loop touches, copied out of struct rstate into
 * a local so the compiler keeps it in registers: stores into the output
 * events would otherwise force every rstate field to be reloaded.  It is
 * written back (hot_sync) before calling anything out of line.
 */
struct hot {
    struct evp_event *out;
    size_t nout;
    uint64_t plog; /* log-written ns inside the pending event */
    uint64_t cost; /* non-zero: compensate, by kcost */
    const uint64_t *kcost;
    uint64_t kmax, carry;
    uint64_t depth; /* copies of r->depth, r->top, r->parent */
    uint32_t top, parent;
    int have; /* out[nout] holds a pending event */
    int keep_log;
    int fstats;
};

static inline void hot_load(struct hot *h, const struct rstate *r)
{
    h->out = (struct evp_event *)r->out;
    h->nout = r->nout;
    h->plog = r->pend_log;
    h->cost = r->cost;
    h->kcost = r->kcost;
    h->kmax = r->kmax;
    h->carry = r->carry;
    h->depth = r->depth;
    h->top = r->top;
    h->parent = r->parent;
    h->have = r->have_pend;
    h->keep_log = r->keep_log;
    h->fstats = r->fstats != NULL;
}

static inline void hot_sync(const struct hot *h, struct rstate *r)
{
    r->nout = h->nout;
    r->pend_log = h->plog;
    r->have_pend = h->have;
    r->depth = h->depth;
    r->top = h->top;
    r->parent = h->parent;
    r->carry = h->carry;
}

/* EL ns of the recorder's own (an "[evalprof]" frame): a callee's time
 * for the innermost followed frame, in its inclusive time, not its self. */
static void recorder_time(struct rstate *r, const struct hot *h, uint64_t el)
{
    r->st.recorder_ns += el;
    size_t d =
        h->depth < EVP_REPLAY_MAX_FRAMES ? h->depth : EVP_REPLAY_MAX_FRAMES;
    if (h->fstats && d)
        r->frames[d - 1].child += el;
}

/* Give the pending event its elapsed time (the next event is at NEXT_NS)
 * and queue it for the view. */
static inline __attribute__((always_inline)) void
finish_pending(struct rstate *r, struct hot *h, uint64_t next_ns,
               unsigned flags)
{
    struct evp_event *e = &h->out[h->nout];
    uint64_t el = 0;
    if (!(flags & (EVP_EVF_LAST | EVP_EVF_GAP))) {
        el = next_ns > e->ts ? next_ns - e->ts : 0;
        if (h->plog) {
            el = el > h->plog ? el - h->plog : 0;
            e->flags |= EVP_EVF_LOG;
        }
        if (h->cost) {
            /* An interval shorter than its event's cost (a hook that
             * records two events back to back) passes the rest on to the
             * next interval, up to one event's cost: the time the
             * producer took comes off where it was spent. */
            uint64_t k = e->kind < EVP_EV__COUNT ? h->kcost[e->kind] : 0;
            k += h->carry;
            uint64_t c = el < k ? el : k;
            h->carry = k - c < h->kmax ? k - c : h->kmax;
            el -= c;
            r->ovh += c;
            r->st.overhead_ns += c;
        }
        if (EVP_UNLIKELY(e->kind == EVP_EV_RECORDER))
            recorder_time(r, h, el);
    } else {
        h->carry = 0; /* no interval: nothing to carry over the gap */
    }
    e->elapsed = el;
    e->flags |= (uint16_t)flags;
    h->nout++;
    h->have = 0;
    h->plog = 0;
    if (h->nout == BATCH) {
        r->nout = h->nout;
        flush_out(r);
        h->nout = 0;
    }
}

/* The innermost followed frame's function and its caller's, after the
 * depth changed: frames deeper than the followed ones belong to the
 * innermost followed frame. */
static void set_top(struct rstate *r)
{
    size_t d =
        r->depth < EVP_REPLAY_MAX_FRAMES ? r->depth : EVP_REPLAY_MAX_FRAMES;
    r->top = d ? r->funcs[d - 1] : 0;
    r->parent = d > 1 ? r->funcs[d - 2] : 0;
}

static int push_frame(struct rstate *r, uint32_t func, uint64_t ts)
{
    size_t d = r->depth;
    if (d < EVP_REPLAY_MAX_FRAMES) {
        if (evp_grow((void **)&r->funcs, &r->funcs_cap, d + 1, sizeof *r->funcs,
                     256) ||
            (r->fstats && evp_grow((void **)&r->frames, &r->frames_cap, d + 1,
                                   sizeof *r->frames, 256)))
            return -ENOMEM;
        r->funcs[d] = func;
        if (r->fstats) {
            r->frames[d] = (struct frame){ts, r->ovh, 0};
            r->active[func < r->nstat ? func : 0]++;
        }
        r->parent = r->top;
        r->top = func;
    } /* else counted, not followed */
    r->depth++;
    if (r->depth > r->deepest)
        r->deepest = r->depth;
    return 0;
}

/* Close the innermost frame at TS and account its time. */
static void pop_frame(struct rstate *r, uint64_t ts)
{
    size_t d = --r->depth;
    if (d < r->batch_low)
        r->batch_low = d;
    if (d >= EVP_REPLAY_MAX_FRAMES)
        return; /* not followed: its time stays with the frame above */
    set_top(r);
    if (!r->fstats)
        return;
    const struct frame *f = &r->frames[d];
    uint64_t incl = ts > f->ts ? ts - f->ts : 0;
    uint64_t ovh = r->ovh - f->ovh;
    incl = incl > ovh ? incl - ovh : 0;
    uint32_t id = r->funcs[d] < r->nstat ? r->funcs[d] : 0;
    struct evp_func_stats *fs = &r->fstats[id];
    fs->self_ns += incl > f->child ? incl - f->child : 0;
    if (--r->active[id] == 0) {
        fs->incl_ns += incl;
        if (incl > fs->max_incl_ns)
            fs->max_incl_ns = incl;
    }
    if (d)
        r->frames[d - 1].child += incl;
}

static inline __attribute__((always_inline)) void
one_record(struct rstate *r, struct hot *h, const struct evp_rec_record *rec,
           uint64_t ns)
{
    unsigned kind = rec->kind;
    if (EVP_UNLIKELY(kind == EVP_EV_LOG_WRITTEN) && !h->keep_log) {
        r->st.log_ns += rec->arg;
        if (h->have)
            h->plog += rec->arg;
        return;
    }
    if (EVP_LIKELY(h->have))
        finish_pending(r, h, ns, 0);

    struct evp_event *e = &h->out[h->nout];
    e->ts = ns;
    e->kind = kind;
    e->arg = rec->arg;
    e->aux = rec->aux;
    e->flags = 0;
    e->at = ns - r->ovh;
    e->unit = 0;
    h->have = 1;
    if (EVP_UNLIKELY(kind == EVP_EV_RECORDER))
        r->st.recorder_events++;
    if (EVP_UNLIKELY(kind == EVP_EV_OP_AT)) {
        e->kind = EVP_EV_OP;
        e->arg = rec->arg & 0xff;
        e->unit = (rec->arg >> 8) + 1;
    }

    unsigned nest = nest_of(kind);
    if (EVP_LIKELY(nest == EVP_NEST_NONE)) {
        e->depth = (int32_t)h->depth;
        e->func = h->top;
        e->parent = h->parent;
        return;
    }
    hot_sync(h, r);
    if (nest == EVP_NEST_PUSH) {
        if (r->pub && r->depth >= r->batch_low &&
            r->depth < EVP_REPLAY_MAX_FRAMES) {
            /* The push reuses a frame an event of this batch still sees. */
            flush_before_pending(r);
            h->nout = 0;
            e = &h->out[0];
        }
        e->depth = (int32_t)r->depth;
        e->func = rec->arg;
        e->parent = r->top;
        if (r->fstats) {
            uint32_t id = rec->arg < r->nstat ? rec->arg : 0;
            if (kind == EVP_EV_RESUME)
                r->fstats[id].resumes++;
            else
                r->fstats[id].calls++;
        }
        if (push_frame(r, rec->arg, ns) < 0)
            r->rc = -ENOMEM;
    } else {
        e->func = rec->arg ? rec->arg : r->top;
        if (r->depth) {
            pop_frame(r, ns);
            e->depth = (int32_t)r->depth;
            e->parent = r->top;
        } else {
            e->depth = 0;
            e->parent = 0;
            e->flags = EVP_EVF_UNMATCHED;
            r->st.unmatched++;
        }
    }
    h->depth = r->depth;
    h->top = r->top;
    h->parent = r->parent;
}

static void replay_segment(struct rstate *r, struct stream *s,
                           struct segment *seg)
{
    struct evp_trace *t = r->t;
    /* Decoded one event at a time straight into the replay: no batch
     * buffer between the codec and the engine. */
    struct evp_events_prefix *pf = &seg->pf;
    const uint8_t *payload = evp_segment_payload(seg, &r->z);
    if (!payload) {
        if (!seg->reported)
            evp_trace_warnf(t,
                            "stream %u, chunk %u at byte %" PRIu64
                            ": no longer decompresses (the file changed "
                            "while being read?); its %u events are skipped",
                            s->pub.id, seg->chunk, seg->offset, pf->count);
        seg->reported = 1;
        return;
    }
    const uint8_t *p = payload + EVP_EVENTS_PREFIX_SIZE;
    const uint8_t *end = payload + seg->len;
    struct hot h;
    hot_load(&h, r);
    uint64_t ticks = pf->base_ticks;
    uint32_t last_func = 0, done = 0;
    const uint64_t at = t->anchor_ticks, an = t->anchor_ns, mult = t->mult;
    struct evp_rec_record rec;
    while (done < pf->count) {
        if (evp_event_decode_one(&p, end, &ticks, &last_func, &rec) < 0) {
            if (!seg->reported) /* once per trace, not once per view */
                evp_trace_warnf(t,
                                "stream %u, chunk %u at byte %" PRIu64
                                ": malformed event data after %u of %u "
                                "events; the rest of the chunk is skipped",
                                s->pub.id, seg->chunk, seg->offset, done,
                                pf->count);
            seg->reported = 1;
            break;
        }
        int64_t d = (int64_t)(rec.ts - at);
        uint64_t ns = an + (uint64_t)(int64_t)(((__int128)d * mult) >> 32);
        one_record(r, &h, &rec, ns);
        /* r->rc is checked now and then: a view that stops sees no more
         * callbacks (flush_out), the rest is cheap decoding. */
        if (EVP_UNLIKELY((++done & 4095) == 0) && r->rc)
            break;
    }
    hot_sync(&h, r);
}

/* Frames still open when the stream ends close at its last event (LAST)
 * for the function times; the view still sees them open (opts->frames)
 * until end_stream. */
static void close_open_frames(struct rstate *r, uint64_t last)
{
    size_t open = r->depth;
    r->st.unclosed += open;
    if (r->depth > EVP_REPLAY_MAX_FRAMES)
        r->depth = EVP_REPLAY_MAX_FRAMES; /* the rest were not followed */
    while (r->depth)
        pop_frame(r, last);
    r->depth = open;
}

/* The stream's deepest nesting, into the totals, and a warning when the
 * replay could not follow every frame. */
static void note_depth(struct rstate *r, const struct stream *s)
{
    int32_t d = r->deepest < INT32_MAX ? (int32_t)r->deepest : INT32_MAX;
    if (d > r->st.max_depth)
        r->st.max_depth = d;
    if (r->deepest > EVP_REPLAY_MAX_FRAMES)
        evp_trace_warnf(r->t,
                        "stream %u: calls nested %zu deep; frames below "
                        "depth %d are counted but not followed (their time "
                        "is the self time of the frame at that depth)",
                        s->pub.id, r->deepest, EVP_REPLAY_MAX_FRAMES);
}

/* ---- samples --------------------------------------------------------------
 */

/* The frames of the stack whose leaf is node LEAF, outermost first, into
 * BUF (room for the leaf's depth); *FLAGS gets EVP_SMPF_CUT when damage
 * cut the stack.  Returns how many. */
static int32_t stack_frames(const struct evp_trace *t, uint32_t leaf,
                            uint32_t *buf, uint32_t *flags)
{
    *flags = 0;
    if (!leaf)
        return 0;
    const struct evp_stack_node *nd = evp_trace_stack(t, leaf);
    if (!nd) {
        *flags = EVP_SMPF_CUT;
        return 0;
    }
    size_t depth = nd->depth, i = depth;
    while (i && nd) {
        buf[--i] = nd->func;
        if (nd->parent == EVP_STACK_UNKNOWN) {
            *flags = EVP_SMPF_CUT;
            break;
        }
        nd = nd->parent ? evp_trace_stack(t, nd->parent) : NULL;
    }
    /* a chain resolved by the reader always has DEPTH nodes; anything
     * else is cut at what was walked */
    if (i) {
        memmove(buf, buf + i, (depth - i) * sizeof *buf);
        *flags = EVP_SMPF_CUT;
    }
    return (int32_t)(depth - i);
}

/* The N samples in REC as the view sees them, handed to it. */
static int hand_samples(struct rstate *r, const struct evp_sample_rec *rec,
                        size_t n)
{
    const struct evp_trace *t = r->t;
    size_t room = 0;
    for (size_t i = 0; i < n; i++) {
        const struct evp_stack_node *nd = evp_trace_stack(t, rec[i].stack);
        room += nd ? nd->depth : 0;
    }
    if (evp_grow((void **)&r->sfunc, &r->sfunc_cap, room ? room : 1,
                 sizeof *r->sfunc, 1024))
        return r->rc = -ENOMEM;
    uint32_t *at = r->sfunc;
    for (size_t i = 0; i < n; i++) {
        struct evp_sample *s = &r->smp[i];
        s->ts = evp_trace_ticks_to_ns(t, rec[i].ts);
        s->stack = rec[i].stack;
        s->state = rec[i].state;
        s->weight = rec[i].weight;
        s->unit = rec[i].unit;
        s->func = at;
        s->depth = stack_frames(t, rec[i].stack, at, &s->flags);
        at += s->depth;
        r->st.samples++;
        r->st.periods += rec[i].weight;
    }
    int rc = r->ops->samples(r->ctx, r->smp, n);
    if (rc)
        r->rc = rc;
    return r->rc;
}

/* Stream S's samples, a chunk at a time, each chunk's pages given back
 * behind it. */
static void replay_samples(struct rstate *r, struct stream *s)
{
    struct evp_sample_rec buf[SBATCH];
    for (size_t i = 0; i < s->nssegs && !r->rc; i++) {
        struct segment *seg = &s->ssegs[i];
        const uint8_t *payload = evp_segment_payload(seg, &r->z);
        if (!payload) {
            if (!seg->reported)
                evp_trace_warnf(r->t,
                                "stream %u, chunk %u at byte %" PRIu64
                                ": no longer decompresses (the file "
                                "changed while being read?); its %u "
                                "samples are skipped",
                                s->pub.id, seg->chunk, seg->offset,
                                seg->pf.count);
            seg->reported = 1;
            continue;
        }
        struct evp_samples_cursor c;
        long n;
        evp_samples_cursor_init(&c, payload, seg->len, &seg->pf);
        while (!r->rc && (n = evp_samples_decode(&c, buf, SBATCH)) > 0)
            hand_samples(r, buf, (size_t)n);
        evp_segment_release(r->t, seg);
    }
}

static int replay_stream(struct rstate *r, struct stream *s)
{
    const struct evp_replay_ops *ops = r->ops;
    r->depth = r->deepest = 0;
    r->batch_low = SIZE_MAX;
    r->top = r->parent = 0;
    r->have_pend = 0;
    r->pend_log = 0;
    r->ovh = 0;
    r->carry = 0;
    r->nout = 0;
    if (r->active)
        memset(r->active, 0, r->nstat * sizeof *r->active);
    if (ops->begin_stream && (r->rc = ops->begin_stream(r->ctx, &s->pub)))
        return r->rc;
    uint32_t expect = 0;
    for (size_t k = 0; ops->events && k < s->nsegs && !r->rc; k++) {
        struct segment *seg = &s->segs[k];
        if (seg->pf.seq != expect && r->have_pend) {
            struct hot h; /* events lost between: no elapsed time */
            hot_load(&h, r);
            finish_pending(r, &h, 0, EVP_EVF_GAP);
            hot_sync(&h, r);
        }
        expect = seg->pf.seq + 1;
        replay_segment(r, s, seg);
        evp_segment_release(r->t, seg);
    }
    if (r->rc)
        return r->rc;
    uint64_t last = r->out[r->nout].ts;
    if (r->have_pend) {
        struct hot h;
        hot_load(&h, r);
        finish_pending(r, &h, 0, EVP_EVF_LAST);
        hot_sync(&h, r);
    }
    close_open_frames(r, last);
    note_depth(r, s);
    if (flush_out(r))
        return r->rc;
    if (ops->samples)
        replay_samples(r, s);
    if (r->rc)
        return r->rc;
    show_frames(r);
    if (ops->end_stream && (r->rc = ops->end_stream(r->ctx, &s->pub)))
        return r->rc;
    return 0;
}

int evp_replay(struct evp_trace *t, const struct evp_replay_opts *opts,
               const struct evp_replay_ops *ops, void *ctx)
{
    static const struct evp_replay_opts defaults = {.stream = -1};
    if (!opts)
        opts = &defaults;
    struct rstate *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->t = t;
    r->o = opts;
    r->ops = ops;
    r->ctx = ctx;
    if (opts->compensate) {
        for (unsigned k = 0; k < EVP_EV__COUNT; k++) {
            r->kcost[k] = (uint64_t)(evp_trace_kind_cost_ns(t, k) + 0.5);
            r->cost |= r->kcost[k];
            if (r->kcost[k] > r->kmax)
                r->kmax = r->kcost[k];
        }
    }
    if (ops->samples && !(r->smp = malloc(SBATCH * sizeof *r->smp))) {
        free(r);
        return -ENOMEM;
    }
    r->pub = opts->frames;
    r->fstats = opts->func_stats;
    r->keep_log = opts->keep_log;
    if (opts->func_stats) {
        r->nstat = (uint32_t)t->nfuncs ? (uint32_t)t->nfuncs : 1;
        r->active = calloc(r->nstat, sizeof *r->active);
        if (!r->active) {
            free(r->smp);
            free(r);
            return -ENOMEM;
        }
    }
    int rc = 0;
    for (size_t i = 0; i < t->nstreams && !rc; i++) {
        if (opts->stream >= 0 && (size_t)opts->stream != i)
            continue;
        rc = replay_stream(r, &t->streams[i]);
    }
    if (opts->stats) {
        *opts->stats = r->st;
        opts->stats->events = 0;
        for (size_t i = 0; i < t->nstreams; i++)
            if (opts->stream < 0 || (size_t)opts->stream == i)
                opts->stats->events += t->streams[i].pub.events;
    }
    free(r->funcs);
    free(r->frames);
    free(r->active);
    free(r->smp);
    free(r->sfunc);
    evp_inflater_free(&r->z);
    free(r);
    return rc;
}
