/*
 * The folded view: a trace as collapsed stacks, "a;b;c <ns>" per line,
 * for flamegraph.pl, inferno, speedscope and `evalprof flamegraph`.
 *
 * One consumer of the replay engine.  Each stream keeps its own stack of
 * tree nodes (pushed and popped on the nesting events, as replay.h asks
 * views to do); every event's elapsed time is added to the node it falls
 * in, or to a leaf under it:
 *   - outside any frame: a root-level leaf named after the event
 *     ("[init]", "[runtime other]", "[fini]"), so the lines add up to the
 *     time the trace covers;
 *   - inside a frame: the frame itself, or with --phases a leaf named
 *     after the event ("[loop enter]", "[dispatch]", "[op]" ...), and with
 *     --ops an "op:NAME" leaf for instructions.
 * The time after a push belongs to the callee, the time after a pop to
 * the caller, as in the tree view.
 *
 * Nodes are keyed by (parent, key) in one hash table, so the replay costs
 * one lookup per event; the stack strings are only built at the end, one
 * per node with time, and written sorted through the shared accumulator.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../perf/perf.h"
#include "views.h"

/* Keys: a function id, or a tagged leaf. */
#define K_FUNC 0x00000000u
#define K_PHASE 0x10000000u /* | kind: "[name]" */
#define K_OP 0x20000000u    /* | opcode: "op:NAME" */
#define K_STREAM 0x30000000u /* | stream index: stream root */
#define K_TAG 0xf0000000u

struct fnode {
    uint32_t parent;
    uint32_t key;
    uint64_t ns;
};

struct fslot {
    uint64_t h;
    uint32_t node;
};

struct folded {
    struct evp_trace *t;
    const struct evp_folded_opts *o;
    struct fnode *nodes;
    size_t n, cap;
    struct fslot *tab;
    size_t tcap;
    uint32_t *stack;
    size_t depth, scap;
    uint32_t base; /* root of the current stream */
    int multi;
};

static uint64_t hkey(uint32_t parent, uint32_t key)
{
    uint64_t h = ((uint64_t)parent << 32 | key) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 31;
    return h ? h : 1;
}

static int fgrow(struct folded *f)
{
    size_t nc = f->tcap * 2;
    struct fslot *nt = calloc(nc, sizeof *nt);
    if (!nt)
        return -ENOMEM;
    for (size_t i = 0; i < f->tcap; i++) {
        if (!f->tab[i].h)
            continue;
        size_t j = f->tab[i].h & (nc - 1);
        while (nt[j].h)
            j = (j + 1) & (nc - 1);
        nt[j] = f->tab[i];
    }
    free(f->tab);
    f->tab = nt;
    f->tcap = nc;
    return 0;
}

static uint32_t node_of(struct folded *f, uint32_t parent, uint32_t key)
{
    uint64_t h = hkey(parent, key);
    size_t j = h & (f->tcap - 1);
    while (f->tab[j].h) {
        struct fnode *nd = &f->nodes[f->tab[j].node];
        if (f->tab[j].h == h && nd->parent == parent && nd->key == key)
            return f->tab[j].node;
        j = (j + 1) & (f->tcap - 1);
    }
    if (f->n == f->cap) {
        size_t nc = f->cap * 2;
        struct fnode *nn = realloc(f->nodes, nc * sizeof *nn);
        if (!nn)
            return UINT32_MAX;
        f->nodes = nn;
        f->cap = nc;
    }
    uint32_t id = (uint32_t)f->n++;
    f->nodes[id] = (struct fnode){parent, key, 0};
    f->tab[j] = (struct fslot){h, id};
    if (f->n * 2 > f->tcap && fgrow(f))
        return UINT32_MAX;
    return id;
}

static int fpush(struct folded *f, uint32_t node)
{
    if (f->depth == f->scap) {
        size_t nc = f->scap ? f->scap * 2 : 256;
        uint32_t *ns = realloc(f->stack, nc * sizeof *ns);
        if (!ns)
            return -ENOMEM;
        f->stack = ns;
        f->scap = nc;
    }
    f->stack[f->depth++] = node;
    return 0;
}

static int begin_stream(void *ctx, const struct evp_stream *s)
{
    struct folded *f = ctx;
    f->depth = 0;
    f->base = 0;
    if (f->multi) {
        f->base = node_of(f, 0, K_STREAM | (s->id & 0x0fffffffu));
        if (f->base == UINT32_MAX)
            return -ENOMEM;
    }
    return 0;
}

static int on_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct folded *f = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        uint32_t top = f->depth ? f->stack[f->depth - 1] : f->base;
        if (evp_kind_pushes(e->kind)) {
            top = node_of(f, top, K_FUNC | (e->func & 0x0fffffffu));
            if (top == UINT32_MAX || fpush(f, top))
                return -ENOMEM;
        } else if (evp_kind_pops(e->kind)) {
            if (f->depth)
                f->depth--;
            top = f->depth ? f->stack[f->depth - 1] : f->base;
        }
        if (!e->elapsed)
            continue;
        uint32_t at = top;
        int inside = f->depth > 0;
        uint32_t kind = e->kind < 0x0fffffffu ? e->kind : 0x0fffffffu;
        if (!inside) {
            at = node_of(f, top, K_PHASE | kind);
        } else {
            int is_op = e->kind == EVP_EV_OP;
            if (f->o->phases)
                at = node_of(f, at, K_PHASE | kind);
            if (is_op && f->o->ops && at != UINT32_MAX)
                at = node_of(f, at, K_OP | (evp_event_opcode(e) & 0xffffu));
        }
        if (at == UINT32_MAX)
            return -ENOMEM;
        f->nodes[at].ns += e->elapsed;
    }
    return 0;
}

/* Append the folded name of node key K to *B. */
static int put_name(struct folded *f, uint32_t k, char **b, size_t *cap,
                    size_t *len)
{
    char tmp[160];
    const char *s = tmp;
    size_t n;
    const char *file = "";
    uint32_t line = 0;
    switch (k & K_TAG) {
    case K_PHASE:
        n = (size_t)snprintf(tmp, sizeof tmp, "[%s]",
                             evp_kind_name(k & ~K_TAG));
        break;
    case K_OP: {
        const char *op = evp_trace_opname(f->t, k & ~K_TAG);
        if (op)
            n = (size_t)snprintf(tmp, sizeof tmp, "op:%s", op);
        else
            n = (size_t)snprintf(tmp, sizeof tmp, "op:%u", k & ~K_TAG);
        break;
    }
    case K_STREAM: {
        const struct evp_stream *st = evp_trace_stream(f->t, k & ~K_TAG);
        s = st && st->name && *st->name ? st->name : "thread";
        n = strlen(s);
        break;
    }
    default: {
        const struct evp_func *fn = evp_trace_func(f->t, k);
        if (fn) {
            s = fn->name;
            file = fn->file ? fn->file : "";
            line = fn->line;
        } else {
            snprintf(tmp, sizeof tmp, "func %u", k);
        }
        n = strlen(s);
        break;
    }
    }
    char ln[32];
    size_t extra = *file ? strlen(file) + 4 + (size_t)snprintf(ln, sizeof ln,
                                                              "%" PRIu32, line)
                         : 0;
    size_t need = *len + 4 * (n + extra) + 2;
    if (need > *cap) {
        size_t nc = *cap ? *cap * 2 : 1024;
        while (nc < need)
            nc *= 2;
        char *nb = realloc(*b, nc);
        if (!nb)
            return -ENOMEM;
        *b = nb;
        *cap = nc;
    }
    *len += evp_esc_folded(*b + *len, s, n);
    if (*file) {
        (*b)[(*len)++] = ' ';
        (*b)[(*len)++] = '(';
        *len += evp_esc_folded(*b + *len, file, strlen(file));
        (*b)[(*len)++] = ':';
        size_t k2 = strlen(ln);
        memcpy(*b + *len, ln, k2);
        *len += k2;
        (*b)[(*len)++] = ')';
    }
    return 0;
}

int evp_view_folded(struct evp_trace *t, FILE *out,
                    const struct evp_folded_opts *o)
{
    struct folded f;
    memset(&f, 0, sizeof f);
    f.t = t;
    f.o = o;
    f.multi = o->stream < 0 && evp_trace_nstreams(t) > 1;
    f.cap = 4096;
    f.tcap = 8192;
    f.nodes = malloc(f.cap * sizeof *f.nodes);
    f.tab = calloc(f.tcap, sizeof *f.tab);
    struct evp_stacks *acc = evp_stacks_new();
    char *key = NULL;
    uint32_t *chain = NULL;
    int rc = -ENOMEM;
    if (!f.nodes || !f.tab || !acc)
        goto done;
    f.nodes[0] = (struct fnode){UINT32_MAX, 0, 0}; /* the root */
    f.n = 1;
    struct evp_replay_opts ro = {.compensate = o->compensate,
                                 .stream = o->stream};
    struct evp_replay_ops ops = {begin_stream, on_events, NULL};
    rc = evp_replay(t, &ro, &ops, &f);
    if (rc == -ENOMEM) {
        fprintf(stderr, "evalprof: folded: out of memory\n");
        goto done;
    }
    if (rc < 0) {
        fprintf(stderr, "evalprof: %s: trace could not be replayed\n",
                evp_trace_info(t)->path);
        goto done;
    }
    /* One line per node with time: its path from the root. */
    size_t kcap = 0, ccap = 0;
    for (size_t i = 1; i < f.n; i++) {
        if (!f.nodes[i].ns)
            continue;
        size_t depth = 0;
        for (uint32_t p = (uint32_t)i; p && p != UINT32_MAX;
             p = f.nodes[p].parent) {
            if (depth == ccap) {
                ccap = ccap ? ccap * 2 : 256;
                uint32_t *nc = realloc(chain, ccap * sizeof *nc);
                if (!nc) {
                    rc = -ENOMEM;
                    goto done;
                }
                chain = nc;
            }
            chain[depth++] = p;
        }
        size_t len = 0;
        for (size_t d = depth; d-- > 0;) {
            if (len) {
                if (len + 1 > kcap) {
                    kcap = kcap ? kcap * 2 : 1024;
                    char *nk = realloc(key, kcap);
                    if (!nk) {
                        rc = -ENOMEM;
                        goto done;
                    }
                    key = nk;
                }
                key[len++] = ';';
            }
            rc = put_name(&f, f.nodes[chain[d]].key, &key, &kcap, &len);
            if (rc)
                goto done;
        }
        rc = evp_stacks_add(acc, key, len, f.nodes[i].ns);
        if (rc)
            goto done;
    }
    rc = evp_stacks_write(acc, out);
    if (rc == -EIO)
        fprintf(stderr, "evalprof: folded: write error\n");
done:
    if (rc == -ENOMEM)
        fprintf(stderr, "evalprof: folded: out of memory\n");
    free(f.nodes);
    free(f.tab);
    free(f.stack);
    free(key);
    free(chain);
    evp_stacks_free(acc);
    return rc < 0 ? rc : 0;
}
