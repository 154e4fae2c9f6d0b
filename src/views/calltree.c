/*
 * The call tree of a trace: one replay, one node per distinct call path
 * (calltree.h says what a node holds).  The folded stacks walk it to
 * write their lines; pprof writes a sample per node, pstats and callgrind
 * sum it per function and per caller-callee pair.
 *
 * Nodes are keyed by (parent, key) in one hash table, so the replay costs
 * one lookup per record.  No stack is kept here: the replay's depth moves
 * a cursor along the tree, a push down to the child of the pushed
 * function, a pop back up to the node's parent; a sample's stack, which
 * the replay engine resolved, is walked down from the stream's root.
 * What the replay engine counts in a function's times but gives no event
 * (the interval after an event followed by lost events, "# log written"
 * time) is added, with FULL_INTERVALS, to the node of that event when the
 * next event of the stream shows how long it was.
 */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "itab.h"
#include "views.h"

struct builder {
    struct evp_trace *t;
    const struct evp_ctree_opts *o;
    struct evp_ctree *ct;
    size_t cap, dcap, lcap;
    struct evp_itab index; /* (parent, key) -> node */
    uint32_t cur;          /* node of the innermost open frame, or base */
    uint32_t base;         /* root of the current stream */
    int roots;             /* a root node per stream */
    size_t next_stream;    /* index of the stream expected next */
    size_t cur_deep;       /* deep leaf of the current stack below the cap */
    uint32_t pend;         /* node owed the interval after PEND_TS, or NONE */
    uint64_t pend_ts;
    struct evp_lines *lines; /* LINES: the trace's line tables */
    struct evp_itab lindex;  /* (func, line) -> index in ct->line */
};

#define NONE UINT32_MAX

struct node_probe {
    const struct evp_ctree *ct;
    uint32_t parent, key;
};

static int same_node(const void *ctx, uint32_t id)
{
    const struct node_probe *p = ctx;
    const struct evp_ctree_node *nd = &p->ct->node[id];
    return nd->parent == p->parent && nd->key == p->key;
}

static uint32_t node_of(struct builder *b, uint32_t parent, uint32_t key)
{
    struct evp_ctree *ct = b->ct;
    struct node_probe p = {ct, parent, key};
    uint64_t h = evp_itab_hash_u64((uint64_t)parent << 32 | key);
    uint32_t id = evp_itab_find(&b->index, h, same_node, &p);
    if (id != EVP_ITAB_NONE)
        return id;
    if (ct->n >= UINT32_MAX - 1) /* ids are 32-bit */
        return NONE;
    size_t had = b->cap;
    if (evp_grow((void **)&ct->node, &b->cap, ct->n + 1, sizeof *ct->node,
                 4096))
        return NONE;
    if (ct->count && b->cap > had) {
        struct evp_ctree_count *c =
            realloc(ct->count, b->cap * sizeof *ct->count);
        if (!c) {
            b->cap = had;
            return NONE;
        }
        ct->count = c;
    }
    id = (uint32_t)ct->n;
    if (evp_itab_put(&b->index, h, id) < 0)
        return NONE;
    ct->node[ct->n] = (struct evp_ctree_node){parent, key, 0};
    if (ct->count)
        ct->count[ct->n] = (struct evp_ctree_count){0, 0, 0, 0};
    ct->n++;
    return id;
}

/* A push with D >= max_depth frames open: every frame from here down is
 * the one "[N deeper frames]" node under the frame at the cap. */
static int push_deep(struct builder *b, size_t d)
{
    struct evp_ctree *ct = b->ct;
    size_t cap = b->o->max_depth;
    uint32_t leaf = b->cur; /* below the cap: already the deep node */
    if (d == cap) {
        size_t before = ct->n;
        leaf = node_of(b, b->cur, EVP_KEY_DEEP);
        if (leaf == NONE)
            return -ENOMEM;
        if (ct->n > before) {
            if (evp_grow((void **)&ct->deep, &b->dcap, ct->ndeep + 1,
                         sizeof *ct->deep, 16))
                return -ENOMEM;
            ct->deep[ct->ndeep] = (struct evp_ctree_deep){leaf, 0};
            b->cur_deep = ct->ndeep++;
        } else {
            size_t lo = 0, hi = ct->ndeep;
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (ct->deep[mid].node <= leaf)
                    lo = mid;
                else
                    hi = mid;
            }
            b->cur_deep = lo;
        }
    }
    size_t below = d + 1 - cap;
    if (below > EVP_KEY_VAL)
        below = EVP_KEY_VAL;
    if (below > ct->deep[b->cur_deep].frames)
        ct->deep[b->cur_deep].frames = (uint32_t)below;
    if (d + 1 > ct->deepest)
        ct->deepest = d + 1;
    b->cur = leaf;
    return 0;
}

/* Follow a push of FUNC from D frames to D + 1. */
static int enter_frame(struct builder *b, size_t d, uint32_t func)
{
    if (b->o->max_depth && d >= b->o->max_depth)
        return push_deep(b, d);
    b->cur = node_of(b, b->cur, func & EVP_KEY_VAL);
    return b->cur == NONE ? -ENOMEM : 0;
}

/* Follow a pop to D frames (below the cap, the deep node stays). */
static void leave_frame(struct builder *b, size_t d)
{
    if (!b->o->max_depth || d <= b->o->max_depth)
        b->cur = b->ct->node[b->cur].parent;
}

struct line_probe {
    const struct evp_ctree *ct;
    uint32_t func, line;
};

static int same_line(const void *ctx, uint32_t id)
{
    const struct line_probe *p = ctx;
    return p->ct->line[id].func == p->func && p->ct->line[id].line == p->line;
}

/* The node of FUNC's LINE under AT (NONE out of memory). */
static uint32_t line_node(struct builder *b, uint32_t at, uint32_t func,
                          uint32_t line)
{
    struct evp_ctree *ct = b->ct;
    struct line_probe p = {ct, func, line};
    uint64_t h = evp_itab_hash_u64((uint64_t)func << 32 | line);
    uint32_t id = evp_itab_find(&b->lindex, h, same_line, &p);
    if (id == EVP_ITAB_NONE) {
        if (ct->nline >= EVP_KEY_VAL ||
            evp_grow((void **)&ct->line, &b->lcap, ct->nline + 1,
                     sizeof *ct->line, 64) < 0 ||
            evp_itab_put(&b->lindex, h, (uint32_t)ct->nline) < 0)
            return NONE;
        id = (uint32_t)ct->nline++;
        ct->line[id] = (struct evp_ctree_line){func, line};
    }
    return node_of(b, at, EVP_KEY_LINE | id);
}

static int begin_stream(void *ctx, const struct evp_stream *s)
{
    struct builder *b = ctx;
    b->base = 0;
    b->pend = NONE;
    if (b->roots) {
        /* Streams come in index order; the root is keyed by the index,
         * which names it (ids need not be dense). */
        size_t n = evp_trace_nstreams(b->t), i = b->next_stream;
        for (size_t k = 0; k < n && evp_trace_stream(b->t, i) != s; k++)
            i = i + 1 < n ? i + 1 : 0;
        b->next_stream = i + 1;
        b->base = node_of(b, 0, EVP_KEY_STREAM | ((uint32_t)i & EVP_KEY_VAL));
        if (b->base == NONE)
            return -ENOMEM;
    }
    b->cur = b->base;
    return 0;
}

static int on_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct builder *b = ctx;
    const struct evp_ctree_opts *o = b->o;
    struct evp_ctree *ct = b->ct;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        if (b->pend != NONE) {
            if (e->ts > b->pend_ts)
                ct->node[b->pend].value += e->ts - b->pend_ts;
            b->pend = NONE;
        }
        size_t depth = (size_t)e->depth; /* frames open after the event */
        if (evp_kind_pushes(e->kind)) {
            if (enter_frame(b, depth++, e->func))
                return -ENOMEM;
            if (ct->count) {
                ct->count[b->cur].calls++;
                if (e->kind == EVP_EV_C_CALL)
                    ct->count[b->cur].c_call = 1;
            }
        } else if (evp_kind_pops(e->kind) && !(e->flags & EVP_EVF_UNMATCHED)) {
            leave_frame(b, depth);
        }
        if (!e->elapsed && !ct->count)
            continue;
        uint32_t at = b->cur;
        uint32_t kind = e->kind < EVP_KEY_VAL ? e->kind : EVP_KEY_VAL;
        int is_op = e->kind == EVP_EV_OP;
        if (!depth || (e->kind == EVP_EV_RECORDER &&
                       (!o->max_depth || depth <= o->max_depth))) {
            at = node_of(b, at, EVP_KEY_PHASE | kind); /* "[evalprof]" too */
        } else if (!o->max_depth || depth <= o->max_depth) {
            /* (below the cap, everything is the deep node's) */
            if (o->phases)
                at = node_of(b, at, EVP_KEY_PHASE | kind);
            uint32_t line = is_op && b->lines && at != NONE
                                ? evp_lines_line(b->lines, e->func, e->unit)
                                : 0;
            if (line)
                at = line_node(b, at, e->func, line);
            if (is_op && o->ops && at != NONE)
                at = node_of(b, at, EVP_KEY_OP | evp_event_opcode(e));
        }
        if (at == NONE)
            return -ENOMEM;
        if (o->full_intervals && (e->flags & (EVP_EVF_GAP | EVP_EVF_LOG)) &&
            !(e->flags & EVP_EVF_LAST)) {
            /* The engine counts this interval in full (it gave the event
             * none of it, or less): owed once the next event is seen. */
            b->pend = at;
            b->pend_ts = e->ts;
        } else {
            ct->node[at].value += e->elapsed;
        }
        if (ct->count) {
            ct->count[at].events++;
            ct->count[at].ops += is_op;
        }
    }
    return 0;
}

static int on_samples(void *ctx, const struct evp_sample *smp, size_t ns)
{
    struct builder *b = ctx;
    const struct evp_ctree_opts *o = b->o;
    struct evp_ctree *ct = b->ct;
    for (size_t k = 0; k < ns; k++) {
        const struct evp_sample *s = &smp[k];
        size_t n = (size_t)s->depth, d = 0;
        b->cur = b->base;
        if (s->flags & EVP_SMPF_CUT) {
            b->cur = node_of(b, b->cur, EVP_KEY_UNKNOWN);
            if (b->cur == NONE)
                return -ENOMEM;
            d++;
        }
        for (size_t i = 0; i < n; i++)
            if (enter_frame(b, d++, s->func[i]))
                return -ENOMEM;
        uint32_t at = b->cur;
        if (!d) {
            at = node_of(b, at, EVP_KEY_PHASE | EVP_EV_RUNTIME_OTHER);
        } else if (!o->max_depth || d <= o->max_depth) {
            int ph = evp_sample_phase(s->state),
                op = evp_sample_opcode(s->state);
            /* in JIT code the frame's instruction pointer may lag: the
             * sample is its function's, at no line or opcode */
            int current = evp_sample_ip_current(b->t, s->state);
            if (o->phases)
                at = node_of(b, at,
                             ph >= 0 ? EVP_KEY_PHASE | (uint32_t)ph
                                     : EVP_KEY_SCAT | (uint32_t)evp_sample_cat(
                                                          s->state, s->stack));
            uint32_t line =
                n && b->lines && at != NONE && current
                    ? evp_lines_line(b->lines, s->func[n - 1], s->unit)
                    : 0;
            if (line)
                at = line_node(b, at, s->func[n - 1], line);
            if (op >= 0 && current && o->ops && at != NONE)
                at = node_of(b, at, EVP_KEY_OP | (uint32_t)op);
        }
        if (at == NONE)
            return -ENOMEM;
        ct->node[at].value += s->weight;
        if (ct->count)
            ct->count[at].events++;
    }
    return 0;
}

void evp_ctree_free(struct evp_ctree *ct)
{
    free(ct->node);
    free(ct->count);
    free(ct->kid_start);
    free(ct->kid);
    free(ct->deep);
    free(ct->line);
    memset(ct, 0, sizeof *ct);
}

int evp_ctree_build(struct evp_trace *t, const struct evp_ctree_opts *o,
                    struct evp_ctree *ct)
{
    memset(ct, 0, sizeof *ct);
    struct builder b = {.t = t, .o = o, .ct = ct, .pend = NONE};
    ct->sampled = evp_sampled_only(t);
    b.roots = o->stream_roots || (o->stream < 0 && evp_trace_nstreams(t) > 1);
    int rc = -ENOMEM;
    if (o->lines && !(b.lines = evp_lines_open(t)))
        goto done;
    if (evp_grow((void **)&ct->node, &b.cap, 1, sizeof *ct->node, 4096) ||
        evp_itab_reserve(&b.index, b.cap) < 0)
        goto done;
    if (o->counts && !(ct->count = calloc(b.cap, sizeof *ct->count)))
        goto done;
    ct->node[0] = (struct evp_ctree_node){NONE, 0, 0}; /* the root */
    ct->n = 1;
    struct evp_replay_opts ro = {.compensate = o->compensate,
                                 .stream = o->stream,
                                 .func_stats = o->func_stats};
    struct evp_replay_ops ops = {begin_stream, on_events, NULL, NULL};
    if (ct->sampled)
        ops = (struct evp_replay_ops){begin_stream, NULL, NULL, on_samples};
    rc = evp_replay(t, &ro, &ops, &b);
done:
    evp_diag_replay(o->diag, o->view ? o->view : "call tree", t, rc);
    evp_itab_free(&b.index);
    evp_itab_free(&b.lindex);
    evp_lines_close(b.lines);
    if (rc < 0)
        evp_ctree_free(ct);
    return rc < 0 ? rc : 0;
}

void evp_ctree_note_cut(const struct evp_ctree *ct, size_t max_depth,
                        const char *what, struct evp_diag *d)
{
    if (ct->ndeep)
        evp_diag_note(d,
                      "stacks deeper than %zu frames (the deepest %zu) are "
                      "cut at frame %zu in %zu place%s; the time below is in "
                      "a \"[N deeper frames]\" %s (--max-depth 0 keeps every "
                      "frame)",
                      max_depth, ct->deepest, max_depth, ct->ndeep,
                      ct->ndeep == 1 ? "" : "s", what);
}

uint32_t evp_ctree_deep(const struct evp_ctree *ct, uint32_t node)
{
    size_t lo = 0, hi = ct->ndeep;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ct->deep[mid].node == node)
            return ct->deep[mid].frames;
        if (ct->deep[mid].node < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

int evp_ctree_index(struct evp_ctree *ct)
{
    size_t n = ct->n;
    ct->kid_start = calloc(n + 1, sizeof *ct->kid_start);
    ct->kid = malloc((n ? n : 1) * sizeof *ct->kid);
    if (!ct->kid_start || !ct->kid)
        return -ENOMEM;
    for (size_t i = 1; i < n; i++)
        ct->kid_start[ct->node[i].parent + 1]++;
    for (size_t i = 0; i < n; i++)
        ct->kid_start[i + 1] += ct->kid_start[i];
    /* kid_start[p] advanced while filling, then shifted back */
    for (size_t i = 1; i < n; i++)
        ct->kid[ct->kid_start[ct->node[i].parent]++] = (uint32_t)i;
    for (size_t i = n; i > 0; i--)
        ct->kid_start[i] = ct->kid_start[i - 1];
    ct->kid_start[0] = 0;
    return 0;
}

uint64_t *evp_ctree_inclusive(const struct evp_ctree *ct, int ops)
{
    uint64_t *incl = malloc((ct->n ? ct->n : 1) * sizeof *incl);
    if (!incl)
        return NULL;
    for (size_t i = 0; i < ct->n; i++)
        incl[i] = ops ? (ct->count ? ct->count[i].ops : 0) : ct->node[i].value;
    for (size_t i = ct->n; i-- > 1;) /* children after their parent */
        incl[ct->node[i].parent] += incl[i];
    return incl;
}

int evp_ctree_walk(const struct evp_ctree *ct,
                   int (*fn)(void *ctx, uint32_t node, int down), void *ctx)
{
    /* One entry per open node: the node and the next child to visit. */
    struct open {
        uint32_t node, next;
    } *st = NULL;
    size_t depth = 0, cap = 0;
    int rc = 0;
    if (evp_grow((void **)&st, &cap, 1, sizeof *st, 256))
        return -ENOMEM;
    st[depth++] = (struct open){0, ct->kid_start[0]};
    while (depth && !rc) {
        struct open *o = &st[depth - 1];
        if (o->next == ct->kid_start[o->node + 1]) {
            if (o->node)
                rc = fn(ctx, o->node, 0);
            depth--;
            continue;
        }
        uint32_t kid = ct->kid[o->next++];
        if ((rc = fn(ctx, kid, 1)) != 0)
            break;
        if (evp_grow((void **)&st, &cap, depth + 1, sizeof *st, 256)) {
            rc = -ENOMEM;
            break;
        }
        st[depth++] = (struct open){kid, ct->kid_start[kid]};
    }
    free(st);
    return rc;
}

long evp_ctree_stream_of(const struct evp_ctree *ct, uint32_t node)
{
    while (node && node != NONE) {
        uint32_t k = ct->node[node].key;
        if ((k & EVP_KEY_TAG) == EVP_KEY_STREAM)
            return (long)(k & EVP_KEY_VAL);
        node = ct->node[node].parent;
    }
    return -1;
}

char *evp_ctree_name(const char *s, size_t n, size_t *len)
{
    char *buf = NULL;
    FILE *m = open_memstream(&buf, len);
    if (!m)
        return NULL;
    evp_esc_term(m, s, n, 0);
    if (fclose(m)) {
        free(buf);
        return NULL;
    }
    return buf;
}

struct pair_probe {
    const struct evp_ctree_pairs *ps;
    uint32_t caller, callee;
};

static int same_pair(const void *ctx, uint32_t i)
{
    const struct pair_probe *q = ctx;
    const struct evp_ctree_pair *p = &q->ps->p[i];
    return p->caller == q->caller && p->callee == q->callee;
}

struct evp_ctree_pair *evp_ctree_pair(struct evp_ctree_pairs *ps,
                                      uint32_t caller, uint32_t callee)
{
    struct pair_probe q = {ps, caller, callee};
    uint64_t h = evp_itab_hash_u64((uint64_t)caller << 32 | callee);
    uint32_t i = evp_itab_find(&ps->index, h, same_pair, &q);
    if (i == EVP_ITAB_NONE) {
        i = (uint32_t)ps->n;
        if (evp_grow((void **)&ps->p, &ps->cap, ps->n + 1, sizeof *ps->p,
                     256) ||
            evp_itab_put(&ps->index, h, i) < 0)
            return NULL;
        ps->p[ps->n++] =
            (struct evp_ctree_pair){.caller = caller, .callee = callee};
    }
    return &ps->p[i];
}

void evp_ctree_pairs_free(struct evp_ctree_pairs *ps)
{
    evp_itab_free(&ps->index);
    free(ps->p);
    memset(ps, 0, sizeof *ps);
}
