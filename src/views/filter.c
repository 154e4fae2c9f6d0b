/*
 * The event filters of the tree and the timelines (--from/--to, --func,
 * --max-depth): one decision per replayed event, so that the three views
 * agree on what a filter keeps.  A whole trace of a long run is more
 * than a terminal or a timeline viewer can take (`evalprof tree
 * --help` says how large); these cut it to the part a reader looks at.
 *
 * The window keeps the events whose time on the replay's compensated
 * clock (the timelines' time axis) falls in [from, to); the
 * function filter follows the stream's calls whatever the window, so
 * that a call begun before the window still counts.  Which frames are
 * open around a kept event (a window starting mid-call) is the view's to
 * show: evp_filter_shown says which of them the filters keep, and
 * evp_filter_keep makes the whole decision for the timelines (chrome,
 * speedscope), which differ only in how they write a frame's open and
 * close.  A sampled trace's samples are kept by their time (on the trace
 * clock: samples are not compensated) and, with --func, by the function
 * being on their stack.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

int evp_filter_active(const struct evp_filter *f)
{
    return f && (f->from_ns || f->to_ns || f->func || f->max_depth ||
                 f->stream >= 0);
}

/* Whether function F is what NAME asks for: its name, "name:file" (the
 * file whole or its last component), "file:line" or "name (file:line)". */
static int func_matches(const struct evp_func *f, const char *name)
{
    if (strcmp(f->name, name) == 0)
        return 1;
    if (!*f->file)
        return 0;
    const char *base = strrchr(f->file, '/');
    base = base ? base + 1 : f->file;
    char buf[4096];
    size_t n = strlen(f->name);
    if (strncmp(name, f->name, n) == 0 && name[n] == ':' &&
        (strcmp(name + n + 1, f->file) == 0 || strcmp(name + n + 1, base) == 0))
        return 1;
    snprintf(buf, sizeof buf, "%s:%u", f->file, f->line);
    if (strcmp(buf, name) == 0)
        return 1;
    snprintf(buf, sizeof buf, "%s:%u", base, f->line);
    if (strcmp(buf, name) == 0)
        return 1;
    snprintf(buf, sizeof buf, "%s (%s:%u)", f->name, f->file, f->line);
    return strcmp(buf, name) == 0;
}

int evp_filter_open(struct evp_filter_run *r, struct evp_trace *t,
                    const struct evp_filter *f, struct evp_diag *d)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->start = evp_trace_info(t)->start_ns;
    r->in_func = -1;
    if (!f || !f->func)
        return 0;
    uint32_t n = evp_trace_nfuncs(t), found = 0;
    r->nfuncs = n;
    r->funcs = calloc((size_t)n + 1, 1);
    if (!r->funcs) {
        evp_diag_fail(d, "out of memory");
        return -ENOMEM;
    }
    for (uint32_t id = 1; id <= n; id++) {
        const struct evp_func *fn = evp_trace_func(t, id);
        if (fn && func_matches(fn, f->func)) {
            r->funcs[id] = 1;
            found++;
        }
    }
    if (!found) {
        evp_diag_fail(d,
                      "--func %s: no function of the trace is called so (a "
                      "name, name:file, file:line, as `evalprof summary "
                      "--funcs --wide` lists them)",
                      f->func);
        evp_filter_close(r);
        return -EINVAL;
    }
    return 0;
}

void evp_filter_close(struct evp_filter_run *r)
{
    free(r->funcs);
    r->funcs = NULL;
}

void evp_filter_stream(struct evp_filter_run *r)
{
    r->in_func = -1;
}

int evp_filter_sample(const struct evp_filter_run *r,
                      const struct evp_sample *s)
{
    const struct evp_filter *f = r->f;
    if (!f)
        return EVP_FILTER_KEEP;
    uint64_t ts = s->ts > r->start ? s->ts - r->start : 0;
    if (f->to_ns && ts >= f->to_ns)
        return EVP_FILTER_AFTER;
    if (ts < f->from_ns)
        return EVP_FILTER_DROP;
    if (!r->funcs)
        return EVP_FILTER_KEEP;
    for (int32_t i = 0; i < s->depth; i++)
        if (s->func[i] <= r->nfuncs && r->funcs[s->func[i]])
            return EVP_FILTER_KEEP;
    return EVP_FILTER_DROP;
}

uint64_t evp_filter_to(const struct evp_filter_run *r)
{
    return r->f && r->f->to_ns ? r->f->to_ns : UINT64_MAX;
}

/* Whether E is inside a call of the function asked for, following the
 * calls (pushes at depth D open one, the pop at D closes it). */
static int in_func(struct evp_filter_run *r, const struct evp_event *e)
{
    if (!r->funcs)
        return 1;
    int push = evp_kind_pushes(e->kind), pop = evp_kind_pops(e->kind);
    if (r->in_func < 0) {
        if (push && e->func && r->funcs[e->func]) {
            r->in_func = e->depth;
            return 1;
        }
        return 0;
    }
    if (e->depth > r->in_func)
        return 1;
    if (e->depth == r->in_func && pop && !(e->flags & EVP_EVF_UNMATCHED)) {
        r->in_func = -1;
        return 1;
    }
    /* (a call that ended without its pop: events lost) */
    r->in_func = -1;
    return in_func(r, e);
}

int evp_filter_event(struct evp_filter_run *r, const struct evp_event *e)
{
    const struct evp_filter *f = r->f;
    if (!f)
        return EVP_FILTER_KEEP;
    int inside = in_func(r, e);
    uint64_t ts = e->at > r->start ? e->at - r->start : 0;
    if (f->to_ns && ts >= f->to_ns)
        return EVP_FILTER_AFTER;
    if (ts < f->from_ns || !inside)
        return EVP_FILTER_DROP;
    if (f->max_depth) {
        /* a push or pop at depth D is frame D+1's edge */
        size_t level = (size_t)e->depth +
                       (evp_kind_pushes(e->kind) || evp_kind_pops(e->kind));
        if (level > f->max_depth)
            return EVP_FILTER_DROP;
    }
    return EVP_FILTER_KEEP;
}

int32_t evp_filter_shown(const struct evp_filter_run *r,
                         const struct evp_event *e, int32_t *lo)
{
    int32_t hi =
        e->depth + (evp_kind_pops(e->kind) && !(e->flags & EVP_EVF_UNMATCHED));
    *lo = r->funcs ? r->in_func : 0;
    if (*lo < 0) /* the pop that closed the call just now */
        *lo = e->depth;
    if (r->f && r->f->max_depth && (size_t)hi > r->f->max_depth)
        hi = (int32_t)r->f->max_depth;
    if (hi > EVP_REPLAY_MAX_FRAMES)
        hi = EVP_REPLAY_MAX_FRAMES;
    return hi > *lo ? hi : *lo;
}

const struct evp_event *evp_filter_clip(const struct evp_filter_run *r,
                                        const struct evp_event *e, uint64_t ts,
                                        struct evp_event *buf)
{
    uint64_t to = evp_filter_to(r);
    if (ts + e->elapsed <= to)
        return e;
    *buf = *e;
    buf->elapsed = to > ts ? to - ts : 0;
    return buf;
}

int evp_filter_close_shown(struct evp_filter_frames *fr,
                           const struct evp_filter_frame_ops *ops, void *ctx,
                           uint64_t at)
{
    int rc = 0;
    for (; fr->n > 0 && rc == 0; fr->n--)
        rc = ops->close(ctx, fr->lo + fr->n, at);
    return rc;
}

int evp_filter_keep(struct evp_filter_run *r, struct evp_filter_frames *fr,
                    const struct evp_filter_frame_ops *ops, void *ctx,
                    const struct evp_event **e, struct evp_event *clipped,
                    uint64_t ts)
{
    int k = evp_filter_event(r, *e), rc = 0;
    if (k == EVP_FILTER_AFTER)
        rc = evp_filter_close_shown(fr, ops, ctx, evp_filter_to(r));
    if (k != EVP_FILTER_KEEP || rc < 0)
        return rc;
    int32_t lo, hi = evp_filter_shown(r, *e, &lo);
    if (!fr->n)
        fr->lo = lo;
    /* begun where the window starts, or at the event's time before it */
    uint64_t at = r->f->from_ns < ts ? r->f->from_ns : ts;
    for (int32_t l = fr->lo + fr->n + 1; l <= hi && rc == 0; l++) {
        rc = ops->open(ctx, l, at);
        fr->n++;
    }
    if (rc < 0)
        return rc;
    *e = evp_filter_clip(r, *e, ts, clipped);
    return 1;
}
