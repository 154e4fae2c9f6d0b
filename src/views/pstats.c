/*
 * The pstats view (`evalprof export --format pstats`): the trace as the
 * file cProfile's dump_stats() writes, for Python's pstats module and
 * the tools built on it (snakeviz, gprof2dot, tuna):
 *
 *   marshal.dumps({(file, line, name): (cc, nc, tt, ct, callers)})
 *   callers = {(file, line, name): (nc, cc, tt, ct)}
 *
 * nc counts calls (a generator's resumptions among them, as cProfile
 * counts them), cc the primitive ones (made while the function was not
 * already running), tt the self and ct the inclusive time in seconds, a
 * recursive function's time counted once: the figures of `evalprof
 * summary --funcs`, taken from the replay engine's func_stats.  A
 * caller's entry holds the same for the calls from that caller, its
 * recursion counted by caller and callee together (cProfile's
 * sub-entries).  Python functions are keyed by file, first line and
 * qualified name, C functions as cProfile keys built-ins: ("~", 0,
 * "<built-in method module.name>").  Functions with the same key are one.
 *
 * A sampled trace counts no calls: there nc and cc are the timer periods
 * of the samples with the function on their stack (once a stack), tt and
 * ct its estimated self and inclusive time (periods x the period), as
 * `summary --funcs` of the trace estimates them; a caller's entry holds
 * the same of the stacks where it called the function.
 *
 * Marshal (CPython's Python/marshal.c): a type byte, then the value;
 * integers 'i' (int32, little-endian) or 'l' (a sign and count, int32,
 * then 15-bit digits, int16 each, least significant first), floats 'g'
 * (IEEE double, little-endian), strings 'u' (int32 length, UTF-8),
 * tuples '(' (int32 count, items), dicts '{' (key, value ..., then '0').
 * Every code here is read by marshal version 2 and later: every Python 3.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "itab.h"
#include "views.h"

/* ---- marshal ------------------------------------------------------------ */

static void w_u32(FILE *f, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        putc((int)(v >> (8 * i) & 0xff), f);
}

static void w_int(FILE *f, uint64_t v)
{
    if (v <= INT32_MAX) {
        putc('i', f);
        w_u32(f, (uint32_t)v);
        return;
    }
    unsigned digits[5], n = 0;
    for (; v; v >>= 15)
        digits[n++] = (unsigned)(v & 0x7fff);
    putc('l', f);
    w_u32(f, n);
    for (unsigned i = 0; i < n; i++) {
        putc((int)(digits[i] & 0xff), f);
        putc((int)(digits[i] >> 8), f);
    }
}

static void w_float(FILE *f, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    putc('g', f);
    for (int i = 0; i < 8; i++)
        putc((int)(bits >> (8 * i) & 0xff), f);
}

/* A string, escaped (marshal refuses a string that is not UTF-8). */
static int w_str(FILE *f, const char *s)
{
    size_t len;
    char *c = evp_ctree_name(s, strlen(s), &len);
    if (!c)
        return -ENOMEM;
    putc('u', f);
    w_u32(f, (uint32_t)len);
    fwrite(c, 1, len, f);
    free(c);
    return 0;
}

static void w_tuple(FILE *f, uint32_t n)
{
    putc('(', f);
    w_u32(f, n);
}

/* ---- functions and callers ----------------------------------------------- */

/* One entry of the stats dict: a key, and what cProfile counts. */
struct entry {
    uint64_t nc, cc, tt_ns, ct_ns;
    uint32_t func; /* a function id with this key */
    uint32_t active;
    int c_func;
};

struct pstats {
    struct evp_trace *t;
    struct evp_ctree ct;
    uint64_t *incl;         /* by node */
    uint32_t *entry_of;     /* by function id: entry + 1 (0: none yet) */
    struct evp_strset keys; /* key text -> entry */
    struct entry *e;
    size_t ne, ecap;
    struct evp_ctree_pairs pairs; /* entries: callers and callees */
    char *buf;
    size_t bufcap;
};

/* The key of function ID: "~", 0, "<built-in method m.name>" for a C
 * function (cProfile's form), else file, line, name. */
static void key_of(const struct pstats *s, uint32_t id, int c_func,
                   const char **file, uint32_t *line, char *name, size_t len)
{
    const struct evp_func *f = evp_trace_func(s->t, id);
    const char *nm = f ? f->name : "?";
    const char *fl = f ? f->file : "";
    if (c_func || !*fl) {
        *file = "~";
        *line = 0;
        if (c_func)
            snprintf(name, len, "<built-in method %s%s%s>", fl, *fl ? "." : "",
                     nm);
        else
            snprintf(name, len, "%s", nm);
    } else {
        *file = fl;
        *line = f->line;
        snprintf(name, len, "%s", nm);
    }
}

/* The entry of function ID (node NODE made it), made on first use. */
static uint32_t entry_of(struct pstats *s, uint32_t id, uint32_t node)
{
    const struct evp_ctree_count *nd = &s->ct.count[node];
    if (id <= evp_trace_nfuncs(s->t) && s->entry_of[id])
        return s->entry_of[id] - 1;
    const char *file;
    uint32_t line;
    char name[1024];
    key_of(s, id, nd->c_call, &file, &line, name, sizeof name);
    size_t need = strlen(file) + strlen(name) + 16;
    if (evp_grow((void **)&s->buf, &s->bufcap, need, 1, 256))
        return UINT32_MAX;
    int len =
        snprintf(s->buf, need, "%s%c%" PRIu32 "%c%s", file, 0, line, 0, name);
    int added;
    uint32_t e = evp_strset_add(&s->keys, s->buf, (size_t)len, &added);
    if (e == EVP_ITAB_NONE)
        return UINT32_MAX;
    if (added) {
        if (evp_grow((void **)&s->e, &s->ecap, s->ne + 1, sizeof *s->e, 256))
            return UINT32_MAX;
        s->e[s->ne++] = (struct entry){.func = id, .c_func = nd->c_call};
    }
    if (id <= evp_trace_nfuncs(s->t))
        s->entry_of[id] = e + 1;
    return e;
}

static int is_frame(const struct evp_ctree_node *nd)
{
    return !(nd->key & EVP_KEY_TAG);
}

/* The entry of the frame node that called NODE, or UINT32_MAX: its
 * parent, when that is a frame (not a stream's root). */
static uint32_t caller_of(struct pstats *s, uint32_t node)
{
    uint32_t up = s->ct.node[node].parent;
    const struct evp_ctree_node *nd = &s->ct.node[up];
    if (!up || !is_frame(nd))
        return UINT32_MAX;
    return entry_of(s, nd->key, up);
}

/* The walk: primitive calls of every entry and pair, pairs' times. */
static int visit(void *ctx, uint32_t node, int down)
{
    struct pstats *s = ctx;
    const struct evp_ctree_node *nd = &s->ct.node[node];
    if (!is_frame(nd))
        return 0;
    uint32_t e = entry_of(s, nd->key, node);
    uint32_t caller = caller_of(s, node);
    if (e == UINT32_MAX)
        return -ENOMEM;
    if (!down) {
        s->e[e].active--;
        if (caller != UINT32_MAX)
            evp_ctree_pair(&s->pairs, caller, e)->active--;
        return 0;
    }
    const struct evp_ctree_count *c = &s->ct.count[node];
    struct entry *en = &s->e[e];
    /* a sampled trace counts no calls: its counts are the timer periods
     * on the stacks, once a stack (its times, periods until written) */
    int sampled = s->ct.sampled;
    uint64_t calls = sampled ? s->incl[node] : c->calls;
    if (!en->active) {
        en->cc += calls;
        if (sampled)
            en->ct_ns += s->incl[node];
    }
    if (sampled)
        en->tt_ns += nd->value;
    en->active++;
    if (caller != UINT32_MAX) {
        struct evp_ctree_pair *p = evp_ctree_pair(&s->pairs, caller, e);
        if (!p)
            return -ENOMEM;
        if (!sampled || !p->active)
            p->calls += calls;
        p->self_ns += nd->value;
        if (!p->active) {
            p->prim_calls += calls;
            p->ns += s->incl[node];
        }
        p->active++;
    }
    return 0;
}

static int w_key(FILE *f, const struct pstats *s, const struct entry *e)
{
    const char *file;
    uint32_t line;
    char name[1024];
    key_of(s, e->func, e->c_func, &file, &line, name, sizeof name);
    w_tuple(f, 3);
    int rc = w_str(f, file);
    w_int(f, line);
    return rc | w_str(f, name);
}

static void w_times(FILE *f, uint64_t a, uint64_t b, uint64_t tt, uint64_t ct)
{
    w_int(f, a);
    w_int(f, b);
    w_float(f, (double)tt / 1e9);
    w_float(f, (double)ct / 1e9);
}

static int cmp_pair_callee(const void *x, const void *y)
{
    const struct evp_ctree_pair *a = x, *b = y;
    if (a->callee != b->callee)
        return a->callee < b->callee ? -1 : 1;
    return (a->caller > b->caller) - (a->caller < b->caller);
}

int evp_view_pstats(struct evp_trace *t, FILE *out,
                    const struct evp_profile_opts *o)
{
    struct pstats s = {
        .t = t, .keys = EVP_STRSET_INIT, .pairs = EVP_CTREE_PAIRS_INIT};
    uint32_t nfuncs = evp_trace_nfuncs(t);
    struct evp_func_stats *fs = calloc((size_t)nfuncs + 1, sizeof *fs);
    if (!fs) {
        evp_diag_fail(o->diag, "pstats: out of memory");
        return -ENOMEM;
    }
    struct evp_ctree_opts co = {.compensate = o->compensate,
                                .stream = -1,
                                .stream_roots = 1,
                                .full_intervals = 1,
                                .counts = 1,
                                .func_stats = fs,
                                .diag = o->diag};
    int rc = evp_ctree_build(t, &co, &s.ct);
    if (rc < 0) {
        free(fs);
        return rc;
    }
    rc = -ENOMEM;
    s.entry_of = calloc((size_t)nfuncs + 1, sizeof *s.entry_of);
    if (!s.entry_of || evp_ctree_index(&s.ct) ||
        !(s.incl = evp_ctree_inclusive(&s.ct, 0)))
        goto done;
    if ((rc = evp_ctree_walk(&s.ct, visit, &s)) != 0)
        goto done;
    /* Of events, the functions' own figures are the replay engine's, as
     * the summary prints them; of samples, the tree's, as estimated times
     * (the summary's too: periods x the period). */
    for (uint32_t id = 1; id <= nfuncs && !s.ct.sampled; id++) {
        if (!s.entry_of[id])
            continue;
        struct entry *e = &s.e[s.entry_of[id] - 1];
        e->nc += fs[id].calls + fs[id].resumes;
        e->tt_ns += fs[id].self_ns;
        e->ct_ns += fs[id].incl_ns;
    }
    for (size_t i = 0; i < s.ne && s.ct.sampled; i++) {
        struct entry *e = &s.e[i];
        e->nc = e->cc;
        e->tt_ns = evp_sample_ns(t, e->tt_ns);
        e->ct_ns = evp_sample_ns(t, e->ct_ns);
    }
    for (size_t i = 0; i < s.pairs.n && s.ct.sampled; i++) {
        struct evp_ctree_pair *p = &s.pairs.p[i];
        p->self_ns = evp_sample_ns(t, p->self_ns);
        p->ns = evp_sample_ns(t, p->ns);
    }
    struct evp_ctree_pair *pp = s.pairs.p;
    size_t np = s.pairs.n;
    if (np)
        qsort(pp, np, sizeof *pp, cmp_pair_callee);
    rc = 0;
    putc('{', out);
    size_t k = 0;
    for (uint32_t i = 0; i < s.ne; i++) {
        const struct entry *e = &s.e[i];
        rc |= w_key(out, &s, e);
        w_tuple(out, 5);
        w_times(out, e->cc, e->nc, e->tt_ns, e->ct_ns);
        putc('{', out);
        for (; k < np && pp[k].callee == i; k++) {
            const struct evp_ctree_pair *p = &pp[k];
            rc |= w_key(out, &s, &s.e[p->caller]);
            w_tuple(out, 4);
            w_times(out, p->calls, p->prim_calls, p->self_ns, p->ns);
        }
        putc('0', out);
    }
    putc('0', out);
    if (!rc && ferror(out))
        rc = -EIO;
done:
    if (rc == -ENOMEM)
        evp_diag_fail(o->diag, "pstats: out of memory");
    evp_ctree_free(&s.ct);
    evp_strset_free(&s.keys);
    evp_ctree_pairs_free(&s.pairs);
    free(fs);
    free(s.incl);
    free(s.entry_of);
    free(s.e);
    free(s.buf);
    return rc;
}
