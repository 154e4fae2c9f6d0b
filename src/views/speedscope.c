/*
 * The speedscope view (`evalprof export --format speedscope`): speedscope's
 * own file format (https://www.speedscope.app/file-format-schema.json),
 * one "evented" profile per thread, so that its time-order view shows the
 * run as it happened and its left-heavy and sandwich views aggregate it.
 *
 *   {"$schema": ..., "exporter": "evalprof ...", "name": argv,
 *    "activeProfileIndex": 0,
 *    "profiles": [{"type": "evented", "name": thread, "unit": "nanoseconds",
 *                  "events": [{"type": "O", "frame": 3, "at": 120}, ...],
 *                  "startValue": 0, "endValue": 9000}, ...],
 *    "shared": {"frames": [{"name": "main", "file": "x.py", "line": 1},
 *                          ...]}}
 *
 * Frames open at enter and resume (and c call) and close at the matching
 * exit, suspend or c return; with --ops every instruction is a frame of
 * its own ("op:NAME") inside its function, with --phases so are the loop's
 * phases ("[loop fast]", ...), each closed after its (compensated) elapsed
 * time; the recorder's own time is always an "[evalprof]" frame.  Times
 * are the replay's compensated clock, nanoseconds from the trace's start.
 * Speedscope needs every close to match the innermost open frame at a time no
 * earlier than the previous event: exits without an enter (frames that began
 * before the trace) are left out, and frames still open when a stream ends
 * close at its last event.  The frame table is written last, once every frame
 * is known; JSON readers do not care for the order of an object's keys.
 * Filtered (--from/--to, --func, --max-depth, --thread), the frames open
 * where the window starts open at its start and those open where it ends
 * close there.
 *
 * A sampled trace (samples, no events) is written as speedscope's
 * "sampled" profiles instead, one per thread: each sample its stack as a
 * list of frame indexes, outermost first (with --ops and --phases its
 * opcode and phase as leaves, as the folded view has them), weighted by
 * its estimated time, weight x sample.period_ns, in nanoseconds.
 * Filtered, the samples of the window (--from/--to) with the function on
 * their stack (--func) are written, their stacks cut at --max-depth.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "views.h"

struct speedscope {
    struct evp_trace *t;
    FILE *out;
    const struct evp_chrome_opts *o;
    uint64_t start;
    struct evp_itab index; /* key -> frame */
    uint32_t *keys;        /* by frame */
    size_t nframes, cap;
    struct evp_replay_frames open; /* the replay's frames of this stream */
    uint64_t at;                   /* time of the last event written */
    int first_event, first_profile;
    int err;
    int filtered;
    struct evp_filter_run fr;
    struct evp_filter_frames shown; /* opened and not closed (filtered) */
};

struct key_probe {
    const struct speedscope *s;
    uint32_t key;
};

static int same_key(const void *ctx, uint32_t frame)
{
    const struct key_probe *p = ctx;
    return p->s->keys[frame] == p->key;
}

/* The frame of KEY, made on first use; UINT32_MAX when out of memory. */
static uint32_t frame_of(struct speedscope *s, uint32_t key)
{
    struct key_probe probe = {s, key};
    uint64_t h = evp_itab_hash_u64(key);
    uint32_t f = evp_itab_find(&s->index, h, same_key, &probe);
    if (f != EVP_ITAB_NONE)
        return f;
    f = (uint32_t)s->nframes;
    if (evp_grow((void **)&s->keys, &s->cap, s->nframes + 1, sizeof *s->keys,
                 256) ||
        evp_itab_put(&s->index, h, f) < 0)
        return UINT32_MAX;
    s->keys[s->nframes++] = key;
    return f;
}

static void event(struct speedscope *s, char type, uint32_t frame, uint64_t at)
{
    if (at < s->at)
        at = s->at; /* never back in time (compensated leaves) */
    s->at = at;
    fprintf(s->out,
            "%s{\"type\":\"%c\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}",
            s->first_event ? "\n" : ",\n", type, frame, at);
    s->first_event = 0;
}

/* Write an open ('O') or close ('C') of the frame of KEY at AT. */
static int frame_event(struct speedscope *s, char type, uint32_t key,
                       uint64_t at)
{
    uint32_t f = frame_of(s, key);
    if (f == UINT32_MAX)
        return -ENOMEM;
    event(s, type, f, at);
    return 0;
}

static int ss_begin(void *ctx, const struct evp_stream *st)
{
    struct speedscope *s = ctx;
    char buf[48];
    const char *name = st->name;
    if (!name || !*name) {
        snprintf(buf, sizeof buf, "thread %" PRIu64,
                 st->tid ? st->tid : (uint64_t)st->id);
        name = buf;
    }
    fputs(s->first_profile ? "\n{" : ",\n{", s->out);
    s->first_profile = 0;
    fputs("\"type\":\"evented\",\"name\":", s->out);
    evp_json_string(s->out, name);
    fputs(",\"unit\":\"nanoseconds\",\"events\":[", s->out);
    s->at = 0;
    s->first_event = 1;
    return 0;
}

/* Filtered: open ('O') or close ('C') the frame at LEVEL, at AT. */
static int open_cut(void *ctx, int32_t level, uint64_t at)
{
    struct speedscope *s = ctx;
    return frame_event(s, 'O', s->open.func[level - 1], at);
}

static int close_shown(void *ctx, int32_t level, uint64_t at)
{
    struct speedscope *s = ctx;
    return frame_event(s, 'C', s->open.func[level - 1], at);
}

static const struct evp_filter_frame_ops shown_ops = {open_cut, close_shown};

static int ss_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct speedscope *s = ctx;
    for (size_t i = 0; i < n && !s->err; i++) {
        const struct evp_event *e = &ev[i];
        struct evp_event clipped;
        /* (the compensated clock: slices as long as summary's times) */
        uint64_t ts = e->at > s->start ? e->at - s->start : 0;
        if (s->filtered) {
            int k = evp_filter_keep(&s->fr, &s->shown, &shown_ops, s, &e,
                                    &clipped, ts);
            if (k <= 0) {
                s->err = k;
                continue;
            }
        }
        /* (frames deeper than the replay follows are left out) */
        int followed = e->depth < EVP_REPLAY_MAX_FRAMES;
        if (evp_kind_pushes(e->kind)) {
            if (followed) {
                if (!s->shown.n)
                    s->shown.lo = e->depth;
                s->err = frame_event(s, 'O', e->func, ts);
                s->shown.n++;
            }
        } else if (evp_kind_pops(e->kind)) {
            /* the frame it closes, whatever the exit names */
            if (followed && !(e->flags & EVP_EVF_UNMATCHED)) {
                s->err = frame_event(s, 'C', s->open.func[e->depth], ts);
                s->shown.n--;
            }
        } else if ((e->kind == EVP_EV_OP && s->o->ops) ||
                   e->kind == EVP_EV_RECORDER ||
                   (s->o->phases && evp_kind_is_phase(e->kind))) {
            uint32_t key = e->kind == EVP_EV_OP
                               ? EVP_KEY_OP | (e->aux & EVP_KEY_VAL)
                               : EVP_KEY_PHASE | e->kind;
            s->err = frame_event(s, 'O', key, ts);
            if (!s->err)
                s->err = frame_event(s, 'C', key, ts + e->elapsed);
        }
        if (e->flags & EVP_EVF_LAST && !s->err && ts + e->elapsed > s->at)
            s->at = ts + e->elapsed;
    }
    return s->err ? s->err : ferror(s->out) ? -EIO : 0;
}

static int ss_end(void *ctx, const struct evp_stream *st)
{
    struct speedscope *s = ctx;
    (void)st;
    /* frames still open when the trace stops close with it */
    if (s->filtered) {
        if (!s->err)
            s->err = evp_filter_close_shown(&s->shown, &shown_ops, s, s->at);
        evp_filter_stream(&s->fr);
    }
    int32_t d = s->open.depth < EVP_REPLAY_MAX_FRAMES ? s->open.depth
                                                      : EVP_REPLAY_MAX_FRAMES;
    if (s->filtered)
        d = 0;
    while (d > 0 && !s->err)
        s->err = frame_event(s, 'C', s->open.func[--d], s->at);
    if (s->err)
        return s->err;
    fprintf(s->out, "\n],\"startValue\":0,\"endValue\":%" PRIu64 "}", s->at);
    return ferror(s->out) ? -EIO : 0;
}

/* ---- a sampled trace: one "sampled" profile per stream ---------------- */

/* The profile being written: its stream, and the samples' weights (in
 * ns), written after the samples' stacks.  A stream's profile begins at
 * its first sample: a stream without samples has none. */
struct ss_sampled {
    struct speedscope *s;
    const struct evp_stream *st;
    int in_stream;
    uint64_t *weights;
    size_t nw, wcap;
};

static int ss_sbegin(void *ctx, const struct evp_stream *st)
{
    struct ss_sampled *p = ctx;
    p->st = st;
    return 0;
}

static int ss_send(void *ctx, const struct evp_stream *st)
{
    struct ss_sampled *p = ctx;
    struct speedscope *s = p->s;
    (void)st;
    if (!p->in_stream)
        return 0;
    uint64_t total = 0;
    fputs("],\n\"weights\":[", s->out);
    for (size_t i = 0; i < p->nw; i++) {
        fprintf(s->out, "%s%" PRIu64, i ? "," : "", p->weights[i]);
        total += p->weights[i];
    }
    fprintf(s->out, "],\"startValue\":0,\"endValue\":%" PRIu64 "}", total);
    p->nw = 0;
    p->in_stream = 0;
    return ferror(s->out) ? -EIO : 0;
}

/* One sample: its stack's frame indexes, outermost first, then the
 * leaves --phases and --ops ask for. */
static int ss_sample(struct ss_sampled *p, const struct evp_sample *r)
{
    struct speedscope *s = p->s;
    if (!p->in_stream) {
        fputs(s->first_profile ? "\n" : ",\n", s->out);
        s->first_profile = 0;
        fputs("{\"type\":\"sampled\",\"name\":", s->out);
        evp_json_string(s->out, p->st ? p->st->name : "thread");
        fputs(",\"unit\":\"nanoseconds\",\n\"samples\":[", s->out);
        p->in_stream = 1;
    }
    size_t n = (size_t)r->depth;
    int unknown = (r->flags & EVP_SMPF_CUT) != 0;
    uint32_t keys[3];
    size_t nk = 0;
    /* --max-depth: the frames below it left out, and the leaves theirs */
    size_t cap = s->filtered ? s->o->filter->max_depth : 0;
    int cut = cap && n + (size_t)unknown > cap;
    if (cut)
        n = cap > (size_t)unknown ? cap - (size_t)unknown : 0;
    if (!n && !unknown) {
        keys[nk++] = EVP_KEY_PHASE | EVP_EV_RUNTIME_OTHER;
    } else if (!cut) {
        int ph = evp_sample_phase(r->state), op = evp_sample_opcode(r->state);
        if (s->o->phases)
            keys[nk++] = ph >= 0
                             ? EVP_KEY_PHASE | (uint32_t)ph
                             : EVP_KEY_SCAT |
                                   (uint32_t)evp_sample_cat(r->state, r->stack);
        if (s->o->ops && op >= 0 && evp_sample_ip_current(s->t, r->state))
            keys[nk++] = EVP_KEY_OP | (uint32_t)op;
    }
    fputs(p->nw ? ",[" : "[", s->out);
    int sep = 0;
    if (unknown) {
        uint32_t f = frame_of(s, EVP_KEY_UNKNOWN);
        if (f == UINT32_MAX)
            return -ENOMEM;
        fprintf(s->out, "%" PRIu32, f);
        sep = 1;
    }
    for (size_t i = 0; i < n + nk; i++) {
        uint32_t f =
            frame_of(s, i < n ? r->func[i] & EVP_KEY_VAL : keys[i - n]);
        if (f == UINT32_MAX)
            return -ENOMEM;
        fprintf(s->out, sep ? ",%" PRIu32 : "%" PRIu32, f);
        sep = 1;
    }
    putc(']', s->out);
    if (evp_grow((void **)&p->weights, &p->wcap, p->nw + 1, sizeof *p->weights,
                 1024))
        return -ENOMEM;
    p->weights[p->nw++] = evp_sample_ns(s->t, r->weight);
    return ferror(s->out) ? -EIO : 0;
}

static int ss_samples(void *ctx, const struct evp_sample *smp, size_t n)
{
    struct ss_sampled *p = ctx;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        if (!p->s->filtered ||
            evp_filter_sample(&p->s->fr, &smp[i]) == EVP_FILTER_KEEP)
            rc = ss_sample(p, &smp[i]);
    return rc;
}

static int ss_sampled(struct speedscope *s, const struct evp_replay_opts *ro)
{
    static const struct evp_replay_ops ops = {ss_sbegin, NULL, ss_send,
                                              ss_samples};
    struct ss_sampled p = {.s = s};
    int rc = evp_replay(s->t, ro, &ops, &p);
    free(p.weights);
    return rc;
}

static void write_frame(struct speedscope *s, uint32_t key)
{
    char buf[64];
    fputs("{\"name\":", s->out);
    switch (key & EVP_KEY_TAG) {
    case EVP_KEY_UNKNOWN:
        evp_json_string(s->out, EVP_STACK_UNKNOWN_NAME);
        break;
    case EVP_KEY_SCAT:
        evp_json_string(s->out, evp_sample_cat_leaf((int)(key & EVP_KEY_VAL)));
        break;
    case EVP_KEY_OP:
    case EVP_KEY_PHASE: {
        char name[272]; /* "op:" and an opcode name from the trace */
        evp_view_leaf_name(s->t, key, name, sizeof name);
        evp_json_string(s->out, name);
        break;
    }
    default: {
        const struct evp_func *f = evp_trace_func(s->t, key);
        if (!f) {
            snprintf(buf, sizeof buf, "<func %u>", key);
            evp_json_string(s->out, buf);
            break;
        }
        evp_json_string(s->out, f->name);
        if (f->file && *f->file) {
            fputs(",\"file\":", s->out);
            evp_json_string(s->out, f->file);
        }
        if (f->line)
            fprintf(s->out, ",\"line\":%u", f->line);
        break;
    }
    }
    putc('}', s->out);
}

int evp_view_speedscope(struct evp_trace *t, FILE *out,
                        const struct evp_chrome_opts *o)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    struct speedscope s = {
        .t = t, .out = out, .o = o, .start = in->start_ns, .first_profile = 1};
    s.index = (struct evp_itab)EVP_ITAB_INIT;
    s.filtered = evp_filter_active(o->filter);
    if (evp_filter_open(&s.fr, t, s.filtered ? o->filter : NULL, o->diag) < 0)
        return -EINVAL;
    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
          "\n\"exporter\":\"evalprof\",\"name\":",
          out);
    evp_json_string(out, *in->argv ? in->argv : in->path);
    fputs(",\"activeProfileIndex\":0,\n\"profiles\":[", out);
    static const struct evp_replay_ops ops = {ss_begin, ss_events, ss_end,
                                              NULL};
    struct evp_replay_opts ro = {.compensate = o->compensate,
                                 .stream = s.filtered ? o->filter->stream : -1,
                                 .frames = &s.open};
    int rc = evp_sampled_only(t) ? ss_sampled(&s, &ro)
                                 : evp_replay(t, &ro, &ops, &s);
    evp_filter_close(&s.fr);
    fputs("\n],\n\"shared\":{\"frames\":[", out);
    for (size_t f = 0; f < s.nframes; f++) {
        fputs(f ? ",\n" : "\n", out);
        write_frame(&s, s.keys[f]);
    }
    fputs("\n]}}\n", out);
    evp_itab_free(&s.index);
    free(s.keys);
    if (rc == -ENOMEM)
        evp_diag_fail(o->diag, "speedscope: out of memory");
    return rc < 0 ? rc : ferror(out) ? -EIO : 0;
}
