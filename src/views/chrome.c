/*
 * The timeline view (`evalprof export --format chrome`): the Trace Event
 * Format (JSON) read by Perfetto (ui.perfetto.dev), chrome://tracing and
 * speedscope.
 *
 * Each thread is a track; each frame (enter/exit, resume/suspend, C calls)
 * is a slice named after its function.  With ops, every instruction is a
 * slice inside its frame; with phases, the loop's own phases (loop enter,
 * eval-breaker checks, dispatch, error and exception paths, loop exit,
 * runtime other) are too; the recorder's own time is always an
 * "[evalprof]" slice.  init and fini are instant events.  Times are the
 * replay's compensated clock, microseconds from the trace start, to the
 * nanosecond.  Every name is
 * JSON-escaped, with invalid UTF-8 replaced, so any function name yields a
 * valid file.  Filtered (--from/--to, --func, --max-depth, --thread), the
 * frames open where the window starts begin at its start ("cat":
 * "clipped") and those open where it ends end there.
 *
 * A sampled trace is written in the format's own terms for samples:
 * each sample a sample event ("ph":"P") at its time, its stack a
 * "stackFrames" entry ("sf": its leaf; each frame names its parent), its
 * timer periods and state in its args; with --ops and --phases its
 * opcode and phase are leaves of the stack, as in the folded stacks.
 * For the viewers that read slices only (Perfetto, speedscope), the
 * frames are slices too ("cat":"sampled"), estimated: a sample stands for
 * the periods before it, so its frames span them, and a frame goes on
 * through the samples that follow on in time with it on their stack.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "views.h"

struct chrome {
    struct evp_trace *t;
    FILE *out;
    const struct evp_chrome_opts *o;
    uint64_t start;
    long pid;
    uint64_t tid;
    struct evp_replay_frames frames; /* open in this stream (the replay's) */
    uint64_t last_ts;
    int first;
    int filtered;
    struct evp_filter_run fr;
    struct evp_filter_frames shown; /* begun and not ended (filtered) */
};

static void put_ts(struct chrome *c, const char *key, uint64_t ns)
{
    fprintf(c->out, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, ns / 1000,
            ns % 1000);
}

static void begin(struct chrome *c, const char *ph)
{
    fputs(c->first ? "\n" : ",\n", c->out);
    c->first = 0;
    fprintf(c->out, "{\"ph\":\"%s\",\"pid\":%ld,\"tid\":%" PRIu64, ph, c->pid,
            c->tid);
}

static void func_name(struct chrome *c, uint32_t id)
{
    const struct evp_func *f = evp_trace_func(c->t, id);
    char buf[32];
    if (!f)
        snprintf(buf, sizeof buf, "<func %u>", id);
    fputs(",\"name\":", c->out);
    evp_json_string(c->out, f ? f->name : buf);
}

static int chrome_begin(void *ctx, const struct evp_stream *s)
{
    struct chrome *c = ctx;
    c->tid = s->tid ? s->tid : s->id;
    begin(c, "M");
    fputs(",\"name\":\"thread_name\",\"args\":{\"name\":", c->out);
    evp_json_string(c->out, s->name);
    fputs("}}", c->out);
    return 0;
}

/* An instruction or a phase as a complete slice: its elapsed time. */
static void slice(struct chrome *c, const struct evp_event *e, uint64_t ts)
{
    begin(c, "X");
    fputs(",\"name\":", c->out);
    if (e->kind == EVP_EV_OP) {
        const char *nm = evp_trace_opname(c->t, e->aux);
        char buf[32];
        if (!nm)
            snprintf(buf, sizeof buf, "<%u>", e->aux);
        evp_json_string(c->out, nm ? nm : buf);
        fputs(",\"cat\":\"op\"", c->out);
    } else if (e->kind == EVP_EV_RECORDER) {
        fputs("\"" EVP_RECORDER_FRAME "\",\"cat\":\"evalprof\"", c->out);
    } else {
        fprintf(c->out, "\"%s\",\"cat\":\"phase\"", evp_kind_name(e->kind));
    }
    put_ts(c, "ts", ts);
    put_ts(c, "dur", e->elapsed);
    fputc('}', c->out);
}

/* Filtered: begin the frame at LEVEL the window cut, at AT. */
static int open_cut(void *ctx, int32_t level, uint64_t at)
{
    struct chrome *c = ctx;
    begin(c, "B");
    func_name(c, c->frames.func[level - 1]);
    fputs(",\"cat\":\"clipped\"", c->out);
    put_ts(c, "ts", at);
    fputc('}', c->out);
    return 0;
}

/* Filtered: end the innermost frame begun, at AT. */
static int close_shown(void *ctx, int32_t level, uint64_t at)
{
    struct chrome *c = ctx;
    (void)level;
    begin(c, "E");
    put_ts(c, "ts", at);
    fputc('}', c->out);
    return 0;
}

static const struct evp_filter_frame_ops shown_ops = {open_cut, close_shown};

static int chrome_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct chrome *c = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        struct evp_event clipped;
        /* (the compensated clock: slices as long as summary's times) */
        uint64_t ts = e->at > c->start ? e->at - c->start : 0;
        if (c->filtered && !evp_filter_keep(&c->fr, &c->shown, &shown_ops, c,
                                            &e, &clipped, ts))
            continue;
        c->last_ts = ts + e->elapsed;
        if (evp_kind_pushes(e->kind)) {
            begin(c, "B");
            func_name(c, e->func);
            fprintf(c->out, ",\"cat\":\"%s\"", evp_kind_name(e->kind));
            put_ts(c, "ts", ts);
            fputc('}', c->out);
            c->shown.n++;
        } else if (evp_kind_pops(e->kind)) {
            if (e->flags & EVP_EVF_UNMATCHED)
                continue; /* began before the trace: nothing to end */
            begin(c, "E");
            put_ts(c, "ts", ts);
            fputc('}', c->out);
            c->shown.n--;
        } else if (e->kind == EVP_EV_INIT || e->kind == EVP_EV_FINI) {
            begin(c, "i");
            fprintf(c->out, ",\"name\":\"%s\",\"s\":\"p\"",
                    evp_kind_name(e->kind));
            put_ts(c, "ts", ts);
            fputc('}', c->out);
        } else if ((e->kind == EVP_EV_OP && c->o->ops) ||
                   e->kind == EVP_EV_RECORDER ||
                   (c->o->phases && evp_kind_is_phase(e->kind))) {
            slice(c, e, ts);
        }
    }
    return ferror(c->out) ? -EIO : 0;
}

static int chrome_end(void *ctx, const struct evp_stream *s)
{
    struct chrome *c = ctx;
    (void)s;
    if (c->filtered) {
        evp_filter_close_shown(&c->shown, &shown_ops, c, c->last_ts);
        c->last_ts = 0;
        evp_filter_stream(&c->fr);
        return 0;
    }
    /* Frames still open when the trace stops end with it. */
    for (int32_t d = c->frames.depth; d > 0; d--) {
        begin(c, "E");
        put_ts(c, "ts", c->last_ts);
        fputc('}', c->out);
    }
    return 0;
}

/* ---- a sampled trace ----------------------------------------------------- */

/* An entry of the file's stackFrames: its parent (0: none), what it
 * names (a function id or a leaf's key, views.h), its depth from 1. */
struct sframe {
    uint32_t parent, key, depth;
};

struct chrome_sampled {
    struct chrome *c;
    struct evp_itab index; /* (parent, key) -> frame id - 1 */
    struct sframe *f;
    size_t n, cap;
    uint32_t leaf;    /* the stream's last sample's leaf frame, 0: none */
    uint64_t end;     /* its time, from the trace's start */
    double period_ns; /* a timer period */
    int err;
};

struct sframe_probe {
    const struct chrome_sampled *cs;
    uint32_t parent, key;
};

static int same_sframe(const void *ctx, uint32_t i)
{
    const struct sframe_probe *p = ctx;
    return p->cs->f[i].parent == p->parent && p->cs->f[i].key == p->key;
}

/* The id (from 1) of the frame KEY under frame PARENT, made on first use;
 * 0 when out of memory. */
static uint32_t sframe_of(struct chrome_sampled *cs, uint32_t parent,
                          uint32_t key)
{
    struct sframe_probe p = {cs, parent, key};
    uint64_t h = evp_itab_hash_u64((uint64_t)parent << 32 | key);
    uint32_t i = evp_itab_find(&cs->index, h, same_sframe, &p);
    if (i != EVP_ITAB_NONE)
        return i + 1;
    if (cs->n >= UINT32_MAX - 1 ||
        evp_grow((void **)&cs->f, &cs->cap, cs->n + 1, sizeof *cs->f, 256) ||
        evp_itab_put(&cs->index, h, (uint32_t)cs->n) < 0)
        return 0;
    uint32_t depth = parent ? cs->f[parent - 1].depth + 1 : 1;
    cs->f[cs->n++] = (struct sframe){parent, key, depth};
    return (uint32_t)cs->n;
}

/* The frames of sample S from the outermost, as chrome shows them: a cut
 * stack under "<unknown stack>", the functions (as deep as --max-depth
 * keeps), then --phases' and --ops' leaves; a sample with no Python frame
 * is "[runtime other]".
 * Key I of N (*N set by the first call, I 0). */
static uint32_t skey(const struct chrome *c, const struct evp_sample *s,
                     uint32_t i, uint32_t *n)
{
    uint32_t cut = (s->flags & EVP_SMPF_CUT) != 0, d = (uint32_t)s->depth;
    int ph = evp_sample_phase(s->state), op = evp_sample_opcode(s->state);
    /* --max-depth: the frames below it left out, and the leaves theirs */
    size_t cap = c->filtered ? c->o->filter->max_depth : 0;
    int leaves = d || cut;
    if (cap && cut + d > cap) {
        d = cap > cut ? (uint32_t)cap - cut : 0;
        leaves = 0;
    }
    int phase = leaves && c->o->phases;
    int opleaf =
        leaves && c->o->ops && op >= 0 && evp_sample_ip_current(c->t, s->state);
    *n = cut + d + (uint32_t)phase + (uint32_t)opleaf + (!d && !cut);
    if (!d && !cut)
        return EVP_KEY_PHASE | EVP_EV_RUNTIME_OTHER;
    if (i < cut)
        return EVP_KEY_UNKNOWN;
    if (i < cut + d)
        return s->func[i - cut] & EVP_KEY_VAL;
    if (phase && i == cut + d)
        return ph >= 0 ? EVP_KEY_PHASE | (uint32_t)ph
                       : EVP_KEY_SCAT |
                             (uint32_t)evp_sample_cat(s->state, s->stack);
    return EVP_KEY_OP | (uint32_t)op;
}

static void sframe_name(struct chrome *c, uint32_t key)
{
    fputs(",\"name\":", c->out);
    if (key & EVP_KEY_TAG) {
        char name[288];
        evp_view_leaf_name(c->t, key, name, sizeof name);
        evp_json_string(c->out, name);
    } else {
        const struct evp_func *f = evp_trace_func(c->t, key);
        char buf[32];
        if (!f)
            snprintf(buf, sizeof buf, "<func %u>", key);
        evp_json_string(c->out, f ? f->name : buf);
    }
}

/* End the frames from LEAF up to (not including) frame UPTO, at AT. */
static void sframes_close(struct chrome_sampled *cs, uint32_t leaf,
                          uint32_t upto, uint64_t at)
{
    for (uint32_t f = leaf; f && f != upto; f = cs->f[f - 1].parent) {
        begin(cs->c, "E");
        put_ts(cs->c, "ts", at);
        fputc('}', cs->c->out);
    }
}

/* The deepest frame both A and B are in (0: none). */
static uint32_t sframe_common(const struct chrome_sampled *cs, uint32_t a,
                              uint32_t b)
{
    while (a && b && a != b) {
        if (cs->f[a - 1].depth >= cs->f[b - 1].depth)
            a = cs->f[a - 1].parent;
        else
            b = cs->f[b - 1].parent;
    }
    return a == b ? a : 0;
}

/* One sample: the slices of its frames (those it shares with the sample
 * before, contiguous in time, go on), then its sample event. */
static int chrome_sample(struct chrome_sampled *cs, const struct evp_sample *s)
{
    struct chrome *c = cs->c;
    uint64_t ts = s->ts > c->start ? s->ts - c->start : 0;
    double span = (double)s->weight * cs->period_ns;
    uint64_t from = span < (double)ts ? ts - (uint64_t)span : 0;
    if (from < cs->end)
        from = cs->end;
    uint32_t n, leaf = 0;
    skey(c, s, 0, &n);
    for (uint32_t i = 0; i < n; i++)
        if (!(leaf = sframe_of(cs, leaf, skey(c, s, i, &n))))
            return -ENOMEM;
    /* frames go on only through samples that follow on in time */
    uint32_t keep = from > cs->end ? 0 : sframe_common(cs, cs->leaf, leaf);
    sframes_close(cs, cs->leaf, keep, cs->end);
    uint32_t at = keep, kd = keep ? cs->f[keep - 1].depth : 0;
    for (uint32_t i = kd; i < n; i++) {
        at = sframe_of(cs, at, skey(c, s, i, &n));
        begin(c, "B");
        sframe_name(c, cs->f[at - 1].key);
        fputs(",\"cat\":\"sampled\"", c->out);
        put_ts(c, "ts", from);
        fputc('}', c->out);
    }
    begin(c, "P");
    fputs(",\"name\":\"sample\",\"cat\":\"sample\"", c->out);
    put_ts(c, "ts", ts);
    fprintf(c->out, ",\"sf\":%" PRIu32 ",\"weight\":%" PRIu32, leaf, s->weight);
    fputs(",\"args\":{\"state\":", c->out);
    evp_json_string(c->out,
                    evp_sample_cat_name(evp_sample_cat(s->state, s->stack)));
    fprintf(c->out, ",\"periods\":%" PRIu32 "}}", s->weight);
    cs->leaf = leaf;
    cs->end = ts;
    return ferror(c->out) ? -EIO : 0;
}

static int cs_begin(void *ctx, const struct evp_stream *st)
{
    struct chrome_sampled *cs = ctx;
    cs->leaf = 0;
    cs->end = 0;
    return chrome_begin(cs->c, st);
}

static int cs_samples(void *ctx, const struct evp_sample *s, size_t n)
{
    struct chrome_sampled *cs = ctx;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        if (!cs->c->filtered ||
            evp_filter_sample(&cs->c->fr, &s[i]) == EVP_FILTER_KEEP)
            rc = chrome_sample(cs, &s[i]);
    return rc;
}

static int cs_end(void *ctx, const struct evp_stream *st)
{
    struct chrome_sampled *cs = ctx;
    (void)st;
    sframes_close(cs, cs->leaf, 0, cs->end);
    return ferror(cs->c->out) ? -EIO : 0;
}

/* The stackFrames the samples name, after the events. */
static void write_sframes(struct chrome_sampled *cs)
{
    struct chrome *c = cs->c;
    fputs(",\n\"stackFrames\":{", c->out);
    for (size_t i = 0; i < cs->n; i++) {
        const struct sframe *f = &cs->f[i];
        fprintf(c->out, "%s\"%zu\":{", i ? ",\n" : "\n", i + 1);
        const struct evp_func *fn =
            f->key & EVP_KEY_TAG ? NULL : evp_trace_func(c->t, f->key);
        fputs("\"category\":", c->out);
        evp_json_string(c->out, fn && *fn->file ? fn->file : "evalprof");
        sframe_name(c, f->key);
        if (f->parent)
            fprintf(c->out, ",\"parent\":\"%" PRIu32 "\"", f->parent);
        fputc('}', c->out);
    }
    fputs("}", c->out);
}

int evp_view_chrome(struct evp_trace *t, FILE *out,
                    const struct evp_chrome_opts *o)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    struct chrome c = {.t = t, .out = out, .o = o, .first = 1};
    c.start = in->start_ns;
    c.pid = in->pid >= 0 ? in->pid : 1;
    c.filtered = evp_filter_active(o->filter);
    if (evp_filter_open(&c.fr, t, c.filtered ? o->filter : NULL, o->diag) < 0)
        return -EINVAL;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":", out);
    evp_json_string(out, *in->producer ? in->producer : "unknown");
    fputs(",\"python\":", out);
    evp_json_string(out, in->executable);
    fputs(",\"argv\":", out);
    evp_json_string(out, in->argv);
    fputs("},\"traceEvents\":[", out);
    fputs("\n{\"ph\":\"M\",\"name\":\"process_name\",", out);
    fprintf(out, "\"pid\":%ld,\"args\":{\"name\":", c.pid);
    evp_json_string(out, *in->argv ? in->argv : in->path);
    fputs("}}", out);
    c.first = 0;
    static const struct evp_replay_ops ops = {chrome_begin, chrome_events,
                                              chrome_end, NULL};
    static const struct evp_replay_ops sops = {cs_begin, NULL, cs_end,
                                               cs_samples};
    struct evp_replay_opts ro = {.compensate = o->compensate,
                                 .stream = c.filtered ? o->filter->stream : -1,
                                 .frames = &c.frames};
    struct chrome_sampled cs = {.c = &c, .index = EVP_ITAB_INIT};
    cs.period_ns = in->sample_period_ns;
    int rc = evp_sampled_only(t) ? evp_replay(t, &ro, &sops, &cs)
                                 : evp_replay(t, &ro, &ops, &c);
    evp_filter_close(&c.fr);
    fputs("\n]", out);
    if (evp_sampled_only(t))
        write_sframes(&cs);
    fputs("}\n", out);
    evp_itab_free(&cs.index);
    free(cs.f);
    if (rc == -ENOMEM)
        evp_diag_fail(o->diag, "chrome: out of memory");
    return rc < 0 ? rc : ferror(out) ? -EIO : 0;
}
