/*
 * The callgrind view (`evalprof export --format callgrind`): the trace in
 * callgrind's profile format (valgrind's docs/callgrind-format), for
 * callgrind_annotate and KCachegrind.
 *
 *   events: wall [ops]
 *   summary: <total>
 *   fl=(1) prog.py
 *   fn=(1) main
 *   17 52776                  self cost at the function's first line
 *   cfl=(1)
 *   cfn=(2) middle
 *   calls=20 13
 *   17 12793596               inclusive cost of those calls
 *
 * "wall" is compensated nanoseconds, "ops" (with --ops) instructions.  A
 * function's self cost is its self time in `evalprof summary --funcs`;
 * the cost of the calls from a caller to a function is the time of the
 * activations that were not already running it, so that a function's
 * inclusive cost (what callgrind_annotate --inclusive=yes and KCachegrind
 * add up over its callers) is the summary's inclusive time, a recursive
 * function's time counted once.  Each thread is a function of its own,
 * "[MainThread]", that calls its outermost frames and holds as self cost
 * the time outside any frame.  Lines are the functions' first lines (the
 * trace has none per instruction); functions are named by qualified name
 * in their file ("???" when unknown, as valgrind writes it).
 *
 * A sampled trace has two costs: "cpu" (or "wall", as its timer counted),
 * the estimated ns of the timer periods (periods x the period), and
 * "samples", the periods; its calls are counted by the periods of the
 * stacks a function was called on (a sampled trace counts no calls),
 * once a stack, so that each function's inclusive cost is its estimated
 * inclusive time in `summary --funcs`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "itab.h"
#include "views.h"

/* A function as callgrind names it (file and name), or a thread. */
struct fn {
    uint32_t key; /* a function id, or EVP_KEY_STREAM | stream */
    uint64_t self_ns, self_ops;
    uint32_t active;
    uint8_t named; /* its "(id) name" written */
    uint32_t file; /* index in files */
};

struct cg {
    struct evp_trace *t;
    const struct evp_profile_opts *o;
    struct evp_ctree ct;
    uint64_t *incl_ns, *incl_ops; /* by node */
    struct evp_strset names;      /* "file\0name" -> fn */
    struct evp_strset files;      /* file -> index */
    struct fn *fn;
    size_t nfn, fcap;
    uint32_t *fn_of;              /* by node: fn + 1 */
    struct evp_ctree_pairs calls; /* fns: caller, callee */
    uint8_t *file_named;          /* by file: its "(id) name" written */
    char *buf;
    size_t bufcap;
};

static void fn_text(const struct cg *c, uint32_t key, const char **file,
                    const char **name, uint32_t *line, char *tmp, size_t len)
{
    *file = "???";
    *line = 0;
    if ((key & EVP_KEY_TAG) == EVP_KEY_STREAM) {
        const struct evp_stream *s = evp_trace_stream(c->t, key & EVP_KEY_VAL);
        snprintf(tmp, len, "[%s]",
                 s && s->name && *s->name ? s->name : "thread");
        *name = tmp;
        return;
    }
    if (key == EVP_KEY_RECORDER) {
        *name = EVP_RECORDER_FRAME;
        return;
    }
    const struct evp_func *f = evp_trace_func(c->t, key);
    if (!f) {
        snprintf(tmp, len, "func %" PRIu32, key);
        *name = tmp;
        return;
    }
    *name = f->name;
    if (*f->file)
        *file = f->file;
    *line = f->line;
}

/* The fn of NODE (a frame or a stream root), made on first use. */
static uint32_t fn_of(struct cg *c, uint32_t node)
{
    if (c->fn_of[node])
        return c->fn_of[node] - 1;
    uint32_t key = c->ct.node[node].key;
    const char *file, *name;
    uint32_t line;
    char tmp[64];
    fn_text(c, key, &file, &name, &line, tmp, sizeof tmp);
    size_t fl = strlen(file), nl = strlen(name);
    if (evp_grow((void **)&c->buf, &c->bufcap, fl + nl + 1, 1, 256))
        return UINT32_MAX;
    memcpy(c->buf, file, fl + 1);
    memcpy(c->buf + fl + 1, name, nl);
    int added;
    uint32_t id = evp_strset_add(&c->names, c->buf, fl + 1 + nl, &added);
    uint32_t fid = evp_strset_add(&c->files, file, fl, NULL);
    if (id == EVP_ITAB_NONE || fid == EVP_ITAB_NONE)
        return UINT32_MAX;
    if (added) {
        if (evp_grow((void **)&c->fn, &c->fcap, c->nfn + 1, sizeof *c->fn, 256))
            return UINT32_MAX;
        c->fn[c->nfn++] = (struct fn){.key = key, .file = fid};
    }
    c->fn_of[node] = id + 1;
    return id;
}

/* Whether node key K is a function of callgrind's: a frame, a stream (its
 * thread) or the recorder's "[evalprof]"; the other nodes are leaves
 * whose cost is their function's. */
static int is_fn(uint32_t k)
{
    uint32_t tag = k & EVP_KEY_TAG;
    return !tag || tag == EVP_KEY_STREAM || k == EVP_KEY_RECORDER;
}

/* The fn of the nearest function above NODE (UINT32_MAX: none; fn_of
 * made it on the way down, or it is made now). */
static uint32_t fn_above(struct cg *c, uint32_t node)
{
    uint32_t up = c->ct.node[node].parent;
    while (up && up != UINT32_MAX && !is_fn(c->ct.node[up].key))
        up = c->ct.node[up].parent;
    return up && up != UINT32_MAX ? fn_of(c, up) : UINT32_MAX;
}

/* The walk: self costs; calls and their cost from the activations that
 * were not already running the callee. */
static int visit(void *ctx, uint32_t node, int down)
{
    struct cg *c = ctx;
    const struct evp_ctree_node *nd = &c->ct.node[node];
    const struct evp_ctree_count *n = &c->ct.count[node];
    /* a sampled trace: values are timer periods, the second cost too */
    int sampled = c->ct.sampled;
    if (!is_fn(nd->key)) {
        /* a leaf: time outside any frame, or an instruction's */
        uint32_t up = down ? fn_above(c, node) : UINT32_MAX;
        if (up != UINT32_MAX) {
            c->fn[up].self_ns += nd->value;
            c->fn[up].self_ops += sampled ? nd->value : n->ops;
        }
        return 0;
    }
    uint32_t id = fn_of(c, node);
    if (id == UINT32_MAX)
        return -ENOMEM;
    if (!down) {
        c->fn[id].active--;
        return 0;
    }
    uint32_t up = fn_above(c, node);
    struct fn *f = &c->fn[id];
    f->self_ns += nd->value;
    f->self_ops += sampled ? nd->value : n->ops;
    if (up != UINT32_MAX) {
        struct evp_ctree_pair *k = evp_ctree_pair(&c->calls, up, id);
        if (!k)
            return -ENOMEM;
        /* ("[evalprof]" is called once a hand-over; of samples, a call
         * is counted by its periods, once a stack) */
        if (sampled)
            k->calls += f->active ? 0 : c->incl_ns[node];
        else
            k->calls += nd->key == EVP_KEY_RECORDER ? n->events : n->calls;
        if (!f->active) {
            k->ns += c->incl_ns[node];
            k->ops += sampled ? c->incl_ns[node] : c->incl_ops[node];
        }
    }
    f->active++;
    return 0;
}

static int cmp_call(const void *x, const void *y)
{
    const struct evp_ctree_pair *a = x, *b = y;
    if (a->caller != b->caller)
        return a->caller < b->caller ? -1 : 1;
    return (a->callee > b->callee) - (a->callee < b->callee);
}

/* "(id) name" the first time, "(id)" after. */
static void w_named(FILE *out, const char *tag, uint32_t id, uint8_t *named,
                    const char *name)
{
    fprintf(out, "%s=(%" PRIu32 ")", tag, id + 1);
    if (!*named) {
        putc(' ', out);
        evp_esc_term(out, name, strlen(name), 0);
        *named = 1;
    }
    putc('\n', out);
}

static void w_fn(struct cg *c, FILE *out, const char *fl, const char *fn,
                 uint32_t id)
{
    struct fn *f = &c->fn[id];
    const char *file, *name;
    uint32_t line;
    char tmp[64];
    fn_text(c, f->key, &file, &name, &line, tmp, sizeof tmp);
    /* (names are given once, under whichever tag comes first) */
    w_named(out, fl, f->file, &c->file_named[f->file], file);
    w_named(out, fn, id, &f->named, name);
}

/* A cost line: NS and OPS, or of a sampled trace the periods NS as their
 * estimated ns and the periods. */
static void w_cost(const struct cg *c, FILE *out, uint32_t line, uint64_t ns,
                   uint64_t ops)
{
    if (c->ct.sampled) {
        fprintf(out, "%" PRIu32 " %" PRIu64 " %" PRIu64 "\n", line,
                evp_sample_ns(c->t, ns), ns);
        return;
    }
    fprintf(out, "%" PRIu32 " %" PRIu64, line, ns);
    if (c->o->ops)
        fprintf(out, " %" PRIu64, ops);
    putc('\n', out);
}

static uint32_t fn_line(const struct cg *c, uint32_t id)
{
    uint32_t key = c->fn[id].key;
    const struct evp_func *f =
        key & EVP_KEY_TAG ? NULL : evp_trace_func(c->t, key);
    return f ? f->line : 0;
}

static void write_out(struct cg *c, FILE *out)
{
    const struct evp_trace_info *in = evp_trace_info(c->t);
    uint64_t tot_ns = 0, tot_ops = 0;
    for (size_t i = 0; i < c->nfn; i++) {
        tot_ns += c->fn[i].self_ns;
        tot_ops += c->fn[i].self_ops;
    }
    fputs("# callgrind format\nversion: 1\ncreator: evalprof\n", out);
    if (in->pid >= 0)
        fprintf(out, "pid: %ld\n", in->pid);
    fputs("cmd: ", out);
    evp_esc_term(out, in->argv, strlen(in->argv), 0);
    fputs("\ndesc: Trace: ", out);
    evp_esc_term(out, in->path, strlen(in->path), 0);
    char note[768];
    if (*evp_view_producer_note(c->t, note, sizeof note))
        fprintf(out, "\ndesc: Producer: %s", note);
    if (in->has_kind_cost) {
        evp_view_kind_costs(c->t, note, sizeof note);
        fprintf(out, "\ndesc: Overhead: %s; %s", note,
                c->o->compensate ? "subtracted from wall times"
                                 : "not subtracted");
    }
    fputs("\npositions: line\n", out);
    if (c->ct.sampled) {
        const char *clock =
            strcmp(in->sample_clock, "cpu") == 0 ? "cpu" : "wall";
        fprintf(out,
                "event: %s : estimated %s time (ns), timer periods x %.0f "
                "ns\nevent: samples : timer periods\nevents: %s "
                "samples\nsummary: %" PRIu64 " %" PRIu64 "\n\n",
                clock, strcmp(clock, "cpu") == 0 ? "CPU" : "wall-clock",
                in->sample_period_ns, clock, evp_sample_ns(c->t, tot_ns),
                tot_ns);
    } else {
        fputs("event: wall : compensated wall time (ns)\n", out);
        if (c->o->ops)
            fputs("event: ops : instructions\n", out);
        fprintf(out, "events: wall%s\nsummary: %" PRIu64,
                c->o->ops ? " ops" : "", tot_ns);
        if (c->o->ops)
            fprintf(out, " %" PRIu64, tot_ops);
        fputs("\n\n", out);
    }
    size_t k = 0;
    for (uint32_t i = 0; i < c->nfn; i++) {
        uint32_t line = fn_line(c, i);
        w_fn(c, out, "fl", "fn", i);
        w_cost(c, out, line, c->fn[i].self_ns, c->fn[i].self_ops);
        for (; k < c->calls.n && c->calls.p[k].caller == i; k++) {
            const struct evp_ctree_pair *cl = &c->calls.p[k];
            w_fn(c, out, "cfl", "cfn", cl->callee);
            fprintf(out, "calls=%" PRIu64 " %" PRIu32 "\n", cl->calls,
                    fn_line(c, cl->callee));
            w_cost(c, out, line, cl->ns, cl->ops);
        }
        putc('\n', out);
    }
    if (c->ct.sampled) {
        fprintf(out, "totals: %" PRIu64 " %" PRIu64 "\n",
                evp_sample_ns(c->t, tot_ns), tot_ns);
        return;
    }
    fprintf(out, "totals: %" PRIu64, tot_ns);
    if (c->o->ops)
        fprintf(out, " %" PRIu64, tot_ops);
    putc('\n', out);
}

int evp_view_callgrind(struct evp_trace *t, FILE *out,
                       const struct evp_profile_opts *o)
{
    struct cg c = {.t = t,
                   .o = o,
                   .names = EVP_STRSET_INIT,
                   .files = EVP_STRSET_INIT,
                   .calls = EVP_CTREE_PAIRS_INIT};
    struct evp_ctree_opts co = {.ops = 0,
                                .compensate = o->compensate,
                                .stream = -1,
                                .stream_roots = 1,
                                .full_intervals = 1,
                                .counts = 1,
                                .diag = o->diag};
    int rc = evp_ctree_build(t, &co, &c.ct);
    if (rc < 0)
        return rc;
    rc = -ENOMEM;
    c.fn_of = calloc(c.ct.n ? c.ct.n : 1, sizeof *c.fn_of);
    if (!c.fn_of || evp_ctree_index(&c.ct) ||
        !(c.incl_ns = evp_ctree_inclusive(&c.ct, 0)) ||
        !(c.incl_ops = evp_ctree_inclusive(&c.ct, 1)))
        goto done;
    if ((rc = evp_ctree_walk(&c.ct, visit, &c)) != 0)
        goto done;
    if (c.calls.n)
        qsort(c.calls.p, c.calls.n, sizeof *c.calls.p, cmp_call);
    rc = -ENOMEM;
    if (!(c.file_named = calloc(c.files.n ? c.files.n : 1, 1)))
        goto done;
    write_out(&c, out);
    rc = ferror(out) ? -EIO : 0;
done:
    if (rc == -ENOMEM)
        evp_diag_fail(o->diag, "callgrind: out of memory");
    evp_ctree_free(&c.ct);
    evp_strset_free(&c.names);
    evp_strset_free(&c.files);
    evp_ctree_pairs_free(&c.calls);
    free(c.incl_ns);
    free(c.incl_ops);
    free(c.fn);
    free(c.fn_of);
    free(c.file_named);
    free(c.buf);
    return rc;
}
