/*
 * The cross-check: does perf's picture of a run agree with the evalprof
 * trace the same run recorded?  Both are reduced to four shares:
 *
 *   inside the eval function  perf: a sample with _PyEval_EvalFrameDefault
 *                             (or a "py::" trampoline frame) on its stack;
 *                             trace: time between a push (enter, resume,
 *                             c call) and its pop; a sampled trace: its
 *                             samples with a Python frame, each weighing
 *                             its periods
 *   init                      perf: pymain_init, Py_Initialize*, pre-init;
 *                             trace: the init event's elapsed time
 *   fini                      perf: Py_FinalizeEx and friends;
 *                             trace: the fini event's elapsed time
 *   runtime other             the rest of the traced process
 *
 * A perf sample with no eval frame whose stack does not reach a thread
 * root (_start, clone3...) is one perf could not unwind: what called its
 * leaf is unknown, so it is left out of the shares and counted apart
 * (counting it as runtime other would hold perf's unwinding failures
 * against the trace).  A sampled trace has a second check that needs no
 * unwinding at all: the share of samples whose leaf is the eval
 * function's own code, perf's user leaf symbol against the trace's
 * EVP_SAMPLE_IN_EVAL (the interrupted program counter).  A perf sample
 * taken in evalprof's own signal handler counts the code the signal
 * interrupted (interrupted_leaf), as the trace's sample does.
 *
 * Perf is recorded with CLOCK_MONOTONIC timestamps, the clock traces are
 * converted to, so only samples inside the trace's time window (and of
 * the traced process, when the trace knows its pid) are counted.  Each
 * such sample is also looked up in the trace's own timeline for its
 * thread: "same instant" is the share of samples whose stack says what
 * the trace says at that moment.  Shares more than the threshold apart
 * (5 points) are flagged.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "views.h"
#include "perf.h"
#include "xcheck.h"

static const char *const cat_names[EVP_XC__COUNT] = {
    "inside the eval function", "runtime other", "init", "fini"};

static int eq(const struct evp_perf_frame *f, const char *s)
{
    size_t n = strlen(s);
    return f->len == n && memcmp(f->name, s, n) == 0;
}

static int has_prefix(const struct evp_perf_frame *f, const char *p)
{
    size_t n = strlen(p);
    return f->len >= n && memcmp(f->name, p, n) == 0;
}

/* The eval function: CPython's, its split-off parts (".cold"), and the
 * instrumented interpreter's copies of it. */
static int is_eval_frame(const struct evp_perf_frame *f)
{
    static const char eval[] = "_PyEval_EvalFrameDefault";
    static const char copy[] = "evp_eval_frame_";
    size_t ne = sizeof eval - 1, nc = sizeof copy - 1;
    if (f->len >= ne && memcmp(f->name, eval, ne) == 0 &&
        (f->len == ne || f->name[ne] == '.'))
        return 1;
    return f->len > nc && memcmp(f->name, copy, nc) == 0;
}

static int is_kernel_frame(const struct evp_perf_frame *f)
{
    return f->dso_len > 1 && f->dso[0] == '[' && f->dso[1] == 'k';
}

enum evp_xc_cat evp_xc_classify(const struct evp_perf_sample *s)
{
    int init = 0, fini = 0;
    for (size_t i = 0; i < s->nframes; i++) {
        const struct evp_perf_frame *f = &s->frames[i];
        if (is_eval_frame(f) || eq(f, "_PyEval_EvalFrame") ||
            (f->len > 4 && memcmp(f->name, "py::", 4) == 0))
            return EVP_XC_EVAL;
        if (eq(f, "pymain_init") || eq(f, "Py_InitializeFromConfig") ||
            eq(f, "Py_InitializeEx") || eq(f, "Py_Initialize") ||
            eq(f, "pyinit_core") || eq(f, "pyinit_main") ||
            has_prefix(f, "_Py_PreInitialize"))
            init = 1;
        if (eq(f, "Py_FinalizeEx") || eq(f, "_Py_Finalize") ||
            eq(f, "Py_Finalize") || eq(f, "pymain_free"))
            fini = 1;
    }
    return init ? EVP_XC_INIT : fini ? EVP_XC_FINI : EVP_XC_RUNTIME;
}

/* S's stack reaches a thread's root: its outermost user frame is _start,
 * main, clone3 or the like.  A stack of kernel frames only has none. */
static int rooted(const struct evp_perf_sample *s)
{
    for (size_t i = 0; i < s->nframes; i++)
        if (!is_kernel_frame(&s->frames[i]))
            return evp_perf_is_root_frame(s->frames[i].name, s->frames[i].len);
    return 0;
}

/* S's innermost user function, NULL when it has none: the code the
 * program counter is in, so a function inlined there (perf prints it as
 * its own frame, "(inlined)") is its caller's.  Frames from index END on
 * are not looked at. */
static const struct evp_perf_frame *
user_leaf_below(const struct evp_perf_sample *s, size_t end)
{
    for (size_t i = end; i-- > 0;) {
        const struct evp_perf_frame *f = &s->frames[i];
        if (!is_kernel_frame(f) &&
            !(f->dso_len == 7 && memcmp(f->dso, "inlined", 7) == 0))
            return f;
    }
    return NULL;
}

/* Evalprof's sampling signal handlers, by their own names
 * (src/recorder/sample.c): in the extension (mode B) and in an
 * instrumented interpreter (mode A) alike.  (Not any frame of the
 * extension's file: mode B runs the whole program beneath it.) */
static int is_sampler_frame(const struct evp_perf_frame *f)
{
    return eq(f, "evp_sample_on_trap") || eq(f, "evp_sample_on_signal");
}

/* Where S's user leaf is, seen as the sampled trace sees it: the code a
 * signal interrupted.  A sample taken while evalprof's own handler ran
 * (the sampler's cost, which no trace sample can see) has the handler
 * above a signal frame (the sigreturn trampoline, __restore_rt, which
 * perf may print as an unnamed libc address) above the interrupted
 * code: its leaf is that code, and *OWN is set.  A sample in the
 * trampoline itself (a handler returning; perf unwinds nothing beneath
 * it), or one whose stack ends in the handler, has no leaf to compare:
 * NULL, *OWN set. */
static const struct evp_perf_frame *
interrupted_leaf(const struct evp_perf_sample *s, int *own)
{
    *own = 0;
    for (size_t i = 0; i < s->nframes; i++) {
        if (!is_sampler_frame(&s->frames[i]))
            continue;
        *own = 1;
        /* the outermost handler frame; beneath it the trampoline (its
         * name, or an unresolved address: perf looks the return address
         * up less one, before the symbol), unless perf left it out */
        size_t end = i;
        if (end > 0 &&
            (s->frames[end - 1].len == 0 || s->frames[end - 1].name[0] == '[' ||
             has_prefix(&s->frames[end - 1], "__restore_rt")))
            end--;
        return user_leaf_below(s, end);
    }
    const struct evp_perf_frame *leaf = user_leaf_below(s, s->nframes);
    if (leaf && has_prefix(leaf, "__restore_rt")) {
        *own = 1;
        return NULL;
    }
    return leaf;
}

/* ---- the trace side -------------------------------------------------- */

struct xc_build {
    struct evp_xc_trace *x;
    struct evp_xc_timeline *cur;
};

static int tl_add(struct evp_xc_timeline *tl, uint64_t ts, unsigned cat)
{
    if (tl->n && tl->cat[tl->n - 1] == cat)
        return 0;
    /* two arrays of one length: each grows from the same capacity */
    size_t cts = tl->cap, ccat = tl->cap;
    if (evp_grow((void **)&tl->ts, &cts, tl->n + 1, sizeof *tl->ts, 1024) ||
        evp_grow((void **)&tl->cat, &ccat, tl->n + 1, 1, 1024))
        return -ENOMEM;
    tl->cap = cts;
    tl->ts[tl->n] = ts;
    tl->cat[tl->n] = (uint8_t)cat;
    tl->n++;
    return 0;
}

static int xc_begin(void *ctx, const struct evp_stream *s)
{
    struct xc_build *b = ctx;
    struct evp_xc_trace *x = b->x;
    struct evp_xc_timeline *ntl = realloc(x->tl, (x->ntl + 1) * sizeof *ntl);
    if (!ntl)
        return -ENOMEM;
    x->tl = ntl;
    b->cur = &x->tl[x->ntl++];
    memset(b->cur, 0, sizeof *b->cur);
    b->cur->tid = s->tid;
    return 0;
}

static int xc_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct xc_build *b = ctx;
    struct evp_xc_trace *x = b->x;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        /* inside a frame after the event: the replay's depth */
        int inside = e->depth > 0 || evp_kind_pushes(e->kind);
        unsigned cat = inside                   ? EVP_XC_EVAL
                       : e->kind == EVP_EV_INIT ? EVP_XC_INIT
                       : e->kind == EVP_EV_FINI ? EVP_XC_FINI
                                                : EVP_XC_RUNTIME;
        x->ns[cat] += e->elapsed;
        x->total += e->elapsed;
        if (e->ts < x->first_ns || !x->first_ns)
            x->first_ns = e->ts;
        if (e->ts + e->elapsed > x->last_ns)
            x->last_ns = e->ts + e->elapsed;
        if (tl_add(b->cur, e->ts, cat))
            return -ENOMEM;
    }
    return 0;
}

/* A sampled trace: a sample with a Python frame is inside the eval
 * function (perf finds _PyEval_EvalFrameDefault on such a stack), one
 * without is runtime other; each stands for its weight in periods.  Its
 * timeline steps at every sample: the state seen at a sample holds until
 * the next one. */
struct xc_samples {
    struct evp_xc_trace *x;
    double period_ns;
    const struct evp_stream *st; /* the stream being replayed */
    struct evp_xc_timeline *cur; /* its timeline, from its first sample */
};

static int xc_sbegin(void *ctx, const struct evp_stream *st)
{
    struct xc_samples *b = ctx;
    b->st = st;
    b->cur = NULL;
    return 0;
}

static int xc_sample(struct xc_samples *b, const struct evp_sample *s)
{
    struct evp_xc_trace *x = b->x;
    if (!b->cur) {
        struct evp_xc_timeline *ntl =
            realloc(x->tl, (x->ntl + 1) * sizeof *ntl);
        if (!ntl)
            return -ENOMEM;
        x->tl = ntl;
        b->cur = &x->tl[x->ntl++];
        memset(b->cur, 0, sizeof *b->cur);
        b->cur->tid = b->st->tid;
    }
    unsigned cat = s->stack ? EVP_XC_EVAL : EVP_XC_RUNTIME;
    uint64_t w = (uint64_t)((double)s->weight * b->period_ns);
    x->ns[cat] += w;
    x->total += w;
    if (s->state & EVP_SAMPLE_NO_PC)
        x->leaf_nopc += w; /* the sampler thread's: where is not known */
    else
        x->leaf_total += w;
    if (s->state & EVP_SAMPLE_IN_EVAL) {
        x->leaf_ns += w;
        x->leaf_known = 1;
    }
    /* a sample closes the period before it */
    uint64_t from = s->ts > w ? s->ts - w : 0;
    if (from < x->first_ns || !x->first_ns)
        x->first_ns = from;
    if (s->ts > x->last_ns)
        x->last_ns = s->ts;
    return tl_add(b->cur, from, cat);
}

static int xc_samples_cb(void *ctx, const struct evp_sample *s, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = xc_sample(ctx, &s[i]);
    return rc;
}

int evp_xc_from_trace(struct evp_trace *t, struct evp_xc_trace *x)
{
    memset(x, 0, sizeof *x);
    const struct evp_trace_info *in = evp_trace_info(t);
    x->pid = in->pid;
    x->producer = in->producer;
    x->sampled = in->sampled;
    if (in->sampled) {
        struct xc_samples sb = {x, in->sample_period_ns, NULL, NULL};
        static const struct evp_replay_ops sops = {.begin_stream = xc_sbegin,
                                                   .samples = xc_samples_cb};
        struct evp_replay_opts sro = {.stream = -1};
        int rc = evp_replay(t, &sro, &sops, &sb);
        /* mode B says how many ranges of the eval function it found; mode
         * A always knows its own copy, unless no sample was ever in it */
        const char *er = evp_trace_meta(t, "sample.eval_ranges");
        if (er && strtol(er, NULL, 10) > 0)
            x->leaf_known = 1;
        else if (er)
            x->leaf_known = 0;
        x->start_ns = in->start_ns ? in->start_ns : x->first_ns;
        x->end_ns = in->has_end && in->end_ns ? in->end_ns : x->last_ns;
        if (x->end_ns < x->last_ns)
            x->end_ns = x->last_ns;
        return rc < 0 ? rc : 0;
    }
    struct xc_build b = {x, NULL};
    /* No compensation: perf sees the recorder's own cost as time too. */
    struct evp_replay_opts ro = {.compensate = 0, .stream = -1};
    struct evp_replay_ops ops = {xc_begin, xc_events, NULL, NULL};
    int rc = evp_replay(t, &ro, &ops, &b);
    x->start_ns = in->start_ns ? in->start_ns : x->first_ns;
    x->end_ns = in->has_end && in->end_ns ? in->end_ns : x->last_ns;
    if (x->end_ns < x->last_ns)
        x->end_ns = x->last_ns;
    return rc < 0 ? rc : 0;
}

void evp_xc_trace_free(struct evp_xc_trace *x)
{
    for (size_t i = 0; i < x->ntl; i++) {
        free(x->tl[i].ts);
        free(x->tl[i].cat);
    }
    free(x->tl);
    memset(x, 0, sizeof *x);
}

/* ---- the perf side --------------------------------------------------- */

static int trace_cat_at(const struct evp_xc_trace *x, long tid, uint64_t t)
{
    const struct evp_xc_timeline *tl = NULL;
    for (size_t i = 0; i < x->ntl; i++)
        if (x->tl[i].tid && (long)x->tl[i].tid == tid) {
            tl = &x->tl[i];
            break;
        }
    if (!tl && x->ntl == 1 && !x->tl[0].tid)
        tl = &x->tl[0];
    if (!tl || !tl->n || t < tl->ts[0])
        return -1;
    size_t lo = 0, hi = tl->n; /* last index with ts <= t */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (tl->ts[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return tl->cat[lo];
}

/* True when the trace has a stream of thread TID, or knows no thread's
 * id at all (a text trace). */
static int xc_has_tid(const struct evp_xc_trace *x, long tid)
{
    int known = 0;
    for (size_t i = 0; i < x->ntl; i++) {
        if (x->tl[i].tid && (long)x->tl[i].tid == tid)
            return 1;
        known |= x->tl[i].tid != 0;
    }
    return !known;
}

void evp_xc_add(struct evp_xc_perf *p, const struct evp_xc_trace *x,
                const struct evp_perf_sample *s)
{
    if (x->pid > 0 && s->pid >= 0 && s->pid != x->pid) {
        p->other++;
        return;
    }
    if (s->has_time && s->time_ns < x->start_ns) {
        p->before++;
        return;
    }
    if (s->has_time && s->time_ns > x->end_ns) {
        p->after++;
        return;
    }
    /* A thread the trace has no stream of (evalprof's writer, a thread
     * left untraced) is not what its shares describe. */
    if (s->tid > 0 && !xc_has_tid(x, s->tid)) {
        p->other_threads++;
        return;
    }
    int own;
    const struct evp_perf_frame *leaf = interrupted_leaf(s, &own);
    p->sampler += own;
    p->sampler_noleaf += own && !leaf;
    if (leaf) {
        p->leaf_n++;
        p->leaf_eval += is_eval_frame(leaf);
    }
    enum evp_xc_cat c = evp_xc_classify(s);
    if (c != EVP_XC_EVAL && !rooted(s)) {
        p->unrooted++;
        return;
    }
    p->n[c]++;
    p->total++;
    if (s->has_time) {
        int tc = trace_cat_at(x, s->tid, s->time_ns);
        if (tc >= 0) {
            p->located++;
            p->match[c][tc]++;
        }
    }
}

int evp_xc_print(FILE *out, const struct evp_xc_trace *x,
                 const struct evp_xc_perf *p, double threshold,
                 const char *trace_path)
{
    char a[32], b[32];
    int flags = 0;
    fprintf(out, "cross-check: perf samples against the trace ");
    evp_esc_term(out, trace_path, strlen(trace_path), 0);
    fprintf(out, " (producer: %s)\n\n",
            x->producer && *x->producer ? x->producer : "unknown");
    fprintf(out, "  %-28s %12s %12s\n", "share of time", "perf", "trace");
    uint64_t seen = p->total + p->unrooted; /* of the traced threads */
    double pt = p->total ? (double)p->total : 1.0;
    double tt = x->total ? (double)x->total : 1.0;
    for (int c = 0; c < EVP_XC__COUNT; c++) {
        double ps = 100.0 * (double)p->n[c] / pt;
        double ts = 100.0 * (double)x->ns[c] / tt;
        double d = fabs(ps - ts);
        int flag = p->total && x->total && d > threshold;
        flags += flag;
        fprintf(out, "  %-28s %11.1f%% %11.1f%%", cat_names[c], ps, ts);
        if (flag)
            fprintf(out, "   <- %.1f points apart", d);
        fputc('\n', out);
    }
    if (x->sampled && x->leaf_known && p->leaf_n && x->leaf_total) {
        double ps = 100.0 * (double)p->leaf_eval / (double)p->leaf_n;
        double ts = 100.0 * (double)x->leaf_ns / (double)x->leaf_total;
        double d = fabs(ps - ts);
        int flag = d > threshold;
        flags += flag;
        fprintf(out, "\n  %-28s %11.1f%% %11.1f%%", "leaf in the eval function",
                ps, ts);
        if (flag)
            fprintf(out, "   <- %.1f points apart", d);
        fprintf(out, "\n  (the interrupted code itself, no unwinding: perf's "
                     "user leaf symbol, the trace's program counter)\n");
        if (x->leaf_nopc)
            fprintf(out,
                    "  (the trace's side is %.1f%% of its samples, those "
                    "taken by a signal: the sampler thread's have no "
                    "program counter)\n",
                    100.0 * (double)x->leaf_total /
                        (double)(x->leaf_total + x->leaf_nopc));
        if (p->sampler) {
            fprintf(out,
                    "  (%s of perf's %s samples, %.1f%%, fell in evalprof's "
                    "own signal handler: the sampler's cost, which no "
                    "sample of the trace can see; the row counts the code "
                    "each interrupted",
                    evp_perf_count(a, sizeof a, p->sampler),
                    evp_perf_count(b, sizeof b, seen),
                    seen ? 100.0 * (double)p->sampler / (double)seen : 0.0);
            if (p->sampler_noleaf)
                fprintf(out,
                        ", and leaves out the %s beneath which perf "
                        "unwound no interrupted code (in the handler's "
                        "return, mostly)",
                        evp_perf_count(a, sizeof a, p->sampler_noleaf));
            fputs(")\n", out);
        }
    } else if (x->sampled && x->leaf_nopc && !x->leaf_total)
        fprintf(out, "\n  leaf in the eval function: the trace cannot tell "
                     "(its samples were read by the sampler thread, which "
                     "interrupts no thread and reads no program counter)\n");
    else if (x->sampled && !x->leaf_known)
        fprintf(out, "\n  leaf in the eval function: the trace cannot tell "
                     "(its producer found no code of the eval function)\n");
    fprintf(out, "\n  perf: %s samples in the trace's window",
            evp_perf_count(a, sizeof a, p->total));
    if (x->pid > 0)
        fprintf(out, " from pid %ld", x->pid);
    fprintf(out, " (left out: %s before it, %s after it",
            evp_perf_count(a, sizeof a, p->before),
            evp_perf_count(b, sizeof b, p->after));
    if (p->other)
        fprintf(out, ", %s from other processes",
                evp_perf_count(a, sizeof a, p->other));
    if (p->other_threads)
        fprintf(out, ", %s from threads the trace has no stream of",
                evp_perf_count(a, sizeof a, p->other_threads));
    if (p->unrooted)
        fprintf(out,
                ", %s whose stack perf did not unwind to a thread root "
                "nor through the eval function",
                evp_perf_count(a, sizeof a, p->unrooted));
    fprintf(out, ")\n  trace: %.3f ms of %s, window %.3f ms\n",
            (double)x->total / 1e6,
            x->sampled ? "samples (weights times the period: an estimate)"
                       : "events",
            (double)(x->end_ns - x->start_ns) / 1e6);
    if (p->located) {
        uint64_t same = 0;
        for (int c = 0; c < EVP_XC__COUNT; c++)
            same += p->match[c][c];
        fprintf(out,
                "  same instant: %.1f%% of %s samples fall where the trace "
                "is in the same category\n",
                100.0 * (double)same / (double)p->located,
                evp_perf_count(a, sizeof a, p->located));
    }
    if (p->unrooted * 5 > seen)
        fprintf(out,
                "  note: perf could not unwind %.0f%% of its samples, so its "
                "shares above rest on the rest%s\n",
                100.0 * (double)p->unrooted / (double)seen,
                x->sampled ? "; the leaf row needs no unwinding" : "");
    if (!p->total)
        fprintf(out, "\nnote: no perf sample falls inside the trace's window "
                     "(was perf recorded with -k CLOCK_MONOTONIC?)\n");
    else if (flags)
        fprintf(out,
                "\n%d share%s disagree by more than %.0f points: the trace's "
                "events may sit at other boundaries than perf's symbols "
                "(see docs/EVENTS.md), or the run was too short for %s "
                "samples to be representative\n",
                flags, flags == 1 ? "" : "s", threshold,
                evp_perf_count(a, sizeof a, p->total));
    else
        fprintf(out, "\nperf and the trace agree within %.0f points\n",
                threshold);
    return flags;
}
