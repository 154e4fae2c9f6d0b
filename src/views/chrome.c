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
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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

int evp_view_chrome(struct evp_trace *t, FILE *out,
                    const struct evp_chrome_opts *o)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    struct chrome c = {.t = t, .out = out, .o = o, .first = 1};
    c.start = in->start_ns;
    c.pid = in->pid >= 0 ? in->pid : 1;
    c.filtered = evp_filter_active(o->filter);
    if (evp_filter_open(&c.fr, t, c.filtered ? o->filter : NULL) < 0)
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
    struct evp_replay_opts ro = {.compensate = o->compensate,
                                 .stream = c.filtered ? o->filter->stream : -1,
                                 .frames = &c.frames};
    int rc = evp_replay(t, &ro, &ops, &c);
    evp_filter_close(&c.fr);
    fputs("\n]}\n", out);
    if (rc == -ENOMEM)
        fprintf(stderr, "evalprof: chrome: out of memory\n");
    return rc < 0 ? rc : ferror(out) ? -EIO : 0;
}
