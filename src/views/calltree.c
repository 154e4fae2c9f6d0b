/*
 * The call tree of a trace: one replay, one node per distinct call path
 * (calltree.h says what a node holds).  The profile exports walk it:
 * pprof writes a sample per node, pstats and callgrind sum it per
 * function and per caller-callee pair.
 *
 * Nodes are keyed by (parent, key) in one hash table, so the replay costs
 * one lookup per event, as in folded stacks; each stream keeps its stack
 * of nodes.  What the replay engine counts in a function's times but
 * gives no event (the interval after an event followed by lost events,
 * "# log written" time) is added to the node of that event when the next
 * event of the stream shows how long it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "itab.h"
#include "views.h"

/* A frame open in the replay, and the callee it pushed last: a loop
 * calls the same function again and again, and finds it here without a
 * lookup. */
struct open {
    uint32_t node;
    uint32_t last_key, last; /* last: UINT32_MAX for none */
};

struct builder {
    struct evp_trace *t;
    const struct evp_ctree_opts *o;
    struct evp_ctree *ct;
    size_t cap;
    struct evp_itab index; /* (parent, key) -> node */
    struct open *stack;
    size_t depth, scap;
    struct open base; /* the current stream's root */
    size_t next_stream;
    uint32_t pend; /* node owed the interval after PEND_TS, or NONE */
    uint64_t pend_ts;
};

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
    if (ct->n >= UINT32_MAX - 1 || evp_grow((void **)&ct->node, &b->cap,
                                            ct->n + 1, sizeof *ct->node, 4096))
        return UINT32_MAX;
    id = (uint32_t)ct->n;
    if (evp_itab_put(&b->index, h, id) < 0)
        return UINT32_MAX;
    ct->node[ct->n++] = (struct evp_ctree_node){.parent = parent, .key = key};
    return id;
}

static int push(struct builder *b, uint32_t node)
{
    if (node == UINT32_MAX || evp_grow((void **)&b->stack, &b->scap,
                                       b->depth + 1, sizeof *b->stack, 256))
        return -ENOMEM;
    b->stack[b->depth++] = (struct open){node, 0, UINT32_MAX};
    return 0;
}

/* The node of KEY called from the open frame O. */
static uint32_t callee_of(struct builder *b, struct open *o, uint32_t key)
{
    if (o->last != UINT32_MAX && o->last_key == key)
        return o->last;
    o->last_key = key;
    return o->last = node_of(b, o->node, key);
}

static int begin_stream(void *ctx, const struct evp_stream *s)
{
    struct builder *b = ctx;
    /* Streams come in index order: the search starts where the last
     * one was found. */
    size_t n = evp_trace_nstreams(b->t), i = b->next_stream;
    for (size_t k = 0; k < n && evp_trace_stream(b->t, i) != s; k++)
        i = i + 1 < n ? i + 1 : 0;
    b->next_stream = i + 1;
    b->depth = 0;
    b->pend = UINT32_MAX;
    b->base.node =
        node_of(b, 0, EVP_CTREE_STREAM | ((uint32_t)i & EVP_KEY_VAL));
    b->base.last = UINT32_MAX;
    return b->base.node == UINT32_MAX ? -ENOMEM : 0;
}

/* A push at the depth cap or below it: every frame from here down is the
 * one EVP_CTREE_DEEP node under the frame at the cap. */
static int push_deep(struct builder *b)
{
    uint32_t node = b->stack[b->depth - 1].node;
    if (b->depth == b->o->max_depth) {
        node = node_of(b, node, EVP_CTREE_DEEP);
        if (node == UINT32_MAX)
            return -ENOMEM;
        if (!b->ct->node[node].deep)
            b->ct->cut++;
    }
    size_t below = b->depth + 1 - b->o->max_depth;
    struct evp_ctree_node *nd = &b->ct->node[node];
    if (below > nd->deep)
        nd->deep = below > EVP_KEY_VAL ? EVP_KEY_VAL : (uint32_t)below;
    if (b->depth + 1 > b->ct->deepest)
        b->ct->deepest = b->depth + 1;
    return push(b, node);
}

static int on_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct builder *b = ctx;
    struct evp_ctree_node *nodes;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        if (b->pend != UINT32_MAX) {
            if (e->ts > b->pend_ts)
                b->ct->node[b->pend].ns += e->ts - b->pend_ts;
            b->pend = UINT32_MAX;
        }
        struct open *o = b->depth ? &b->stack[b->depth - 1] : &b->base;
        uint32_t top = o->node;
        if (evp_kind_pushes(e->kind)) {
            size_t cap = b->o->max_depth;
            if (cap && b->depth >= cap) {
                if (push_deep(b))
                    return -ENOMEM;
            } else if (push(b, callee_of(b, o, e->func & EVP_KEY_VAL))) {
                return -ENOMEM;
            }
            top = b->stack[b->depth - 1].node;
            b->ct->node[top].calls++;
            if (e->kind == EVP_EV_C_CALL)
                b->ct->node[top].c_call = 1;
        } else if (evp_kind_pops(e->kind)) {
            if (b->depth)
                b->depth--;
            top = b->depth ? b->stack[b->depth - 1].node : b->base.node;
        }
        uint32_t at = top;
        uint32_t kind = e->kind < EVP_KEY_VAL ? e->kind : EVP_KEY_VAL;
        if (!b->depth || (e->kind == EVP_EV_RECORDER &&
                          (!b->o->max_depth || b->depth <= b->o->max_depth))) {
            at = node_of(b, top, EVP_KEY_PHASE | kind); /* "[evalprof]" */
        } else if (!b->o->max_depth || b->depth <= b->o->max_depth) {
            if (b->o->phases)
                at = node_of(b, at, EVP_KEY_PHASE | kind);
            if (e->kind == EVP_EV_OP && b->o->ops && at != UINT32_MAX)
                at = node_of(b, at, EVP_KEY_OP | evp_event_opcode(e));
        }
        if (at == UINT32_MAX)
            return -ENOMEM;
        nodes = b->ct->node;
        if ((e->flags & (EVP_EVF_GAP | EVP_EVF_LOG)) &&
            !(e->flags & EVP_EVF_LAST)) {
            /* The engine counts this interval in full (it gave the event
             * none of it, or less): owed once the next event is seen. */
            b->pend = at;
            b->pend_ts = e->ts;
        } else {
            nodes[at].ns += e->elapsed;
        }
        nodes[at].events++;
        nodes[at].ops += e->kind == EVP_EV_OP;
    }
    return 0;
}

void evp_ctree_free(struct evp_ctree *ct)
{
    free(ct->node);
    free(ct->kid_start);
    free(ct->kid);
    memset(ct, 0, sizeof *ct);
}

int evp_ctree_build(struct evp_trace *t, const struct evp_ctree_opts *o,
                    struct evp_ctree *ct)
{
    memset(ct, 0, sizeof *ct);
    struct builder b = {.t = t, .o = o, .ct = ct, .pend = UINT32_MAX};
    int rc = -ENOMEM;
    if (evp_itab_reserve(&b.index, 4096) < 0 ||
        evp_grow((void **)&ct->node, &b.cap, 1, sizeof *ct->node, 4096))
        goto done;
    ct->node[0] = (struct evp_ctree_node){.parent = UINT32_MAX};
    ct->n = 1;
    struct evp_replay_opts ro = {
        .compensate = o->compensate, .stream = -1, .func_stats = o->func_stats};
    struct evp_replay_ops ops = {begin_stream, on_events, NULL, NULL};
    rc = evp_replay(t, &ro, &ops, &b);
    if (rc < 0 && rc != -ENOMEM)
        fprintf(stderr, "evalprof: %s: trace could not be replayed\n",
                evp_trace_info(t)->path);
done:
    if (rc == -ENOMEM)
        fprintf(stderr, "evalprof: call tree: out of memory\n");
    evp_itab_free(&b.index);
    free(b.stack);
    if (rc < 0)
        evp_ctree_free(ct);
    else if (ct->cut)
        fprintf(stderr,
                "evalprof: note: stacks deeper than %zu frames (the deepest "
                "%zu) are cut at frame %zu in %zu place%s; the time below "
                "is in a \"[N deeper frames]\" frame (--max-depth 0 keeps "
                "every frame)\n",
                o->max_depth, ct->deepest, o->max_depth, ct->cut,
                ct->cut == 1 ? "" : "s");
    return rc < 0 ? rc : 0;
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
        incl[i] = ops ? ct->node[i].ops : ct->node[i].ns;
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
    while (node && node != UINT32_MAX) {
        uint32_t k = ct->node[node].key;
        if ((k & EVP_KEY_TAG) == EVP_CTREE_STREAM)
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
