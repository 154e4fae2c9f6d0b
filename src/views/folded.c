/*
 * The folded view: a trace as collapsed stacks, "a;b;c <ns>" per line,
 * for flamegraph.pl, inferno, speedscope and `evalprof flamegraph`.
 *
 * One consumer of the replay engine.  The replay's depth moves a cursor
 * in the tree: a push goes down to the child of the pushed function, a
 * pop back up to the parent (nodes know theirs), so no stack is kept
 * here; every event's elapsed time is added to the node it falls in, or
 * to a leaf under it:
 *   - outside any frame: a root-level leaf named after the event
 *     ("[init]", "[runtime other]", "[fini]"), so the lines add up to the
 *     time the trace covers;
 *   - inside a frame: the frame itself, or with --phases a leaf named
 *     after the event ("[loop enter]", "[dispatch]", "[op]" ...), and with
 *     --ops an "op:NAME" leaf for instructions;
 *   - the recorder's own time (buffer hand-overs): an "[evalprof]" leaf
 *     under the frame it interrupted, with or without --phases, never in
 *     the frame's self time (the replay engine's policy, replay.h);
 *   - below the depth cap (max_depth frames): one "[N deeper frames]" leaf
 *     under the frame at the cap, holding all the time spent deeper, so
 *     the lines still add up and no line is longer than the cap.
 * The time after a push belongs to the callee, the time after a pop to
 * the caller, as in the tree view.
 *
 * Nodes are keyed by (parent, key) in one hash table, so the replay costs
 * one lookup per event.  The lines are then written by walking the tree
 * depth first with siblings in the byte order of their lines, so they come
 * out sorted (as stackcollapse-perf.pl sorts them) while only the current
 * path is held: memory stays O(nodes + depth), never O(sum of the path
 * lengths), which for a 100,000-deep recursion is 5 * 10^9 frames.
 *
 * Ordering siblings without building their lines: names never contain
 * ';' (evp_esc_folded makes it ':'), so every line below a node named N
 * is "N" (its own line) or starts with "N;" (its descendants).  Two
 * siblings' lines then compare as their keys "N" or "N;" compare: the
 * first difference falls inside the keys.  Each distinct name gets both
 * keys ranked once, and a level of the walk sorts integers.  Siblings
 * with the same name (two functions with one qualified name, two streams
 * called "thread") are merged with their subtrees, as adding up equal
 * lines would merge them.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "views.h"

/* Keys: a function id, or a tagged leaf: a phase or an op (views.h), or
 * one of folded stacks' own. */
#define K_FUNC 0x00000000u
#define K_PHASE EVP_KEY_PHASE
#define K_OP EVP_KEY_OP
#define K_STREAM 0x30000000u      /* | stream index: stream root */
#define K_DEEP 0x40000000u        /* | frames: "[N deeper frames]" */
#define K_LINE 0x50000000u        /* | index in lk: "file:line" */
#define K_UNKNOWN EVP_KEY_UNKNOWN /* a sampled stack cut by damage */
#define K_SCAT EVP_KEY_SCAT       /* | enum evp_sample_cat: "[C call]" */
#define K_TAG EVP_KEY_TAG
#define K_VAL EVP_KEY_VAL

struct fnode {
    uint32_t parent;
    uint32_t key; /* after the replay: the id of the node's name */
    uint64_t ns;
};

/* A "[N deeper frames]" leaf and the most frames it has stood for. */
struct deep_leaf {
    uint32_t node;
    uint32_t frames;
};

struct folded {
    struct evp_trace *t;
    const struct evp_folded_opts *o;
    struct fnode *nodes;
    size_t n, cap;
    struct evp_itab index; /* (parent, key) -> node */
    uint32_t cur;          /* node of the innermost open frame, or base */
    uint32_t base;         /* root of the current stream */
    int multi;
    size_t next_stream; /* index of the stream expected next */
    /* depth cap (0: none) and what it folded */
    size_t max_depth;
    struct deep_leaf *deep; /* in node order (leaves are made in order) */
    size_t ndeep, dcap;
    size_t cur_deep; /* leaf of the current stack below the cap */
    size_t deepest;  /* most frames on a stack that was cut */
    /* --lines: the (function, line) leaves, K_LINE's values */
    struct evp_lines *lines;
    struct lkey {
        uint32_t func, line;
    } * lk;
    size_t nlk, lkcap;
    struct evp_itab lkindex;
    /* a sampled trace: nodes count timer periods, SCALE ns each */
    double scale;
};

struct node_probe {
    const struct folded *f;
    uint32_t parent, key;
};

static int same_node(const void *ctx, uint32_t id)
{
    const struct node_probe *p = ctx;
    const struct fnode *nd = &p->f->nodes[id];
    return nd->parent == p->parent && nd->key == p->key;
}

static uint32_t node_of(struct folded *f, uint32_t parent, uint32_t key)
{
    struct node_probe p = {f, parent, key};
    uint64_t h = evp_itab_hash_u64((uint64_t)parent << 32 | key);
    uint32_t id = evp_itab_find(&f->index, h, same_node, &p);
    if (id != EVP_ITAB_NONE)
        return id;
    if (f->n >= UINT32_MAX - 1)
        return UINT32_MAX; /* ids are 32-bit */
    if (evp_grow((void **)&f->nodes, &f->cap, f->n + 1, sizeof *f->nodes, 4096))
        return UINT32_MAX;
    id = (uint32_t)f->n;
    if (evp_itab_put(&f->index, h, id) < 0)
        return UINT32_MAX;
    f->nodes[f->n++] = (struct fnode){parent, key, 0};
    return id;
}

/* A push with D >= max_depth frames open: every frame from here down is
 * the one "[N deeper frames]" leaf under the frame at the cap. */
static int push_deep(struct folded *f, size_t d)
{
    uint32_t leaf;
    if (d == f->max_depth) {
        size_t before = f->n;
        leaf = node_of(f, f->cur, K_DEEP);
        if (leaf == UINT32_MAX)
            return -ENOMEM;
        if (f->n > before) {
            if (evp_grow((void **)&f->deep, &f->dcap, f->ndeep + 1,
                         sizeof *f->deep, 16))
                return -ENOMEM;
            f->deep[f->ndeep] = (struct deep_leaf){leaf, 0};
            f->cur_deep = f->ndeep++;
        } else {
            size_t lo = 0, hi = f->ndeep;
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (f->deep[mid].node <= leaf)
                    lo = mid;
                else
                    hi = mid;
            }
            f->cur_deep = lo;
        }
    } else {
        leaf = f->cur; /* already the leaf */
    }
    size_t below = d + 1 - f->max_depth;
    if (below > K_VAL)
        below = K_VAL;
    if (below > f->deep[f->cur_deep].frames)
        f->deep[f->cur_deep].frames = (uint32_t)below;
    if (d + 1 > f->deepest)
        f->deepest = d + 1;
    f->cur = leaf;
    return 0;
}

struct lk_probe {
    const struct folded *f;
    uint32_t func, line;
};

static int same_lk(const void *ctx, uint32_t id)
{
    const struct lk_probe *p = ctx;
    return p->f->lk[id].func == p->func && p->f->lk[id].line == p->line;
}

/* The K_LINE key of FUNC's LINE, or UINT32_MAX out of memory. */
static uint32_t line_key(struct folded *f, uint32_t func, uint32_t line)
{
    struct lk_probe p = {f, func, line};
    uint64_t h = evp_itab_hash_u64((uint64_t)func << 32 | line);
    uint32_t id = evp_itab_find(&f->lkindex, h, same_lk, &p);
    if (id == EVP_ITAB_NONE) {
        if (f->nlk >= K_VAL ||
            evp_grow((void **)&f->lk, &f->lkcap, f->nlk + 1, sizeof *f->lk,
                     64) < 0 ||
            evp_itab_put(&f->lkindex, h, (uint32_t)f->nlk) < 0)
            return UINT32_MAX;
        id = (uint32_t)f->nlk++;
        f->lk[id] = (struct lkey){func, line};
    }
    return K_LINE | id;
}

/* Follow a push from D frames to D + 1. */
static int enter_frame(struct folded *f, size_t d, uint32_t func)
{
    if (f->max_depth && d >= f->max_depth)
        return push_deep(f, d);
    f->cur = node_of(f, f->cur, K_FUNC | (func & K_VAL));
    return f->cur == UINT32_MAX ? -ENOMEM : 0;
}

/* Follow a pop to D frames (below the cap, the deep leaf stays). */
static void leave_frame(struct folded *f, size_t d)
{
    if (!f->max_depth || d <= f->max_depth)
        f->cur = f->nodes[f->cur].parent;
}

static int begin_stream(void *ctx, const struct evp_stream *s)
{
    struct folded *f = ctx;
    f->base = 0;
    if (f->multi) {
        /* Streams come in index order; the root is keyed by the index,
         * which names it (ids need not be dense). */
        size_t n = evp_trace_nstreams(f->t), i = f->next_stream;
        for (size_t k = 0; k < n && evp_trace_stream(f->t, i) != s; k++)
            i = i + 1 < n ? i + 1 : 0;
        f->next_stream = i + 1;
        f->base = node_of(f, 0, K_STREAM | ((uint32_t)i & K_VAL));
        if (f->base == UINT32_MAX)
            return -ENOMEM;
    }
    f->cur = f->base;
    return 0;
}

static int on_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct folded *f = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        size_t depth = (size_t)e->depth; /* frames open after the event */
        if (evp_kind_pushes(e->kind)) {
            if (enter_frame(f, depth++, e->func))
                return -ENOMEM;
        } else if (evp_kind_pops(e->kind) && !(e->flags & EVP_EVF_UNMATCHED)) {
            leave_frame(f, depth);
        }
        if (!e->elapsed)
            continue;
        uint32_t at = f->cur;
        uint32_t kind = e->kind < K_VAL ? e->kind : K_VAL;
        if (!depth || (e->kind == EVP_EV_RECORDER &&
                       (!f->max_depth || depth <= f->max_depth))) {
            at = node_of(f, at, K_PHASE | kind); /* "[evalprof]" a frame */
        } else if (!f->max_depth || depth <= f->max_depth) {
            /* (below the cap, everything is the deep leaf's) */
            int is_op = e->kind == EVP_EV_OP;
            if (f->o->phases)
                at = node_of(f, at, K_PHASE | kind);
            uint32_t line = is_op && f->lines && at != UINT32_MAX
                                ? evp_lines_line(f->lines, e->func, e->unit)
                                : 0;
            if (line) {
                uint32_t k = line_key(f, e->func, line);
                at = k == UINT32_MAX ? k : node_of(f, at, k);
            }
            if (is_op && f->o->ops && at != UINT32_MAX)
                at = node_of(f, at, K_OP | (evp_event_opcode(e) & 0xffffu));
        }
        if (at == UINT32_MAX)
            return -ENOMEM;
        f->nodes[at].ns += e->elapsed;
    }
    return 0;
}

/* Samples of a sampled trace: each its stack from the stream's root,
 * then the leaves --phases, --lines and --ops ask for, as on_events does
 * for an event's time; the node counts its weight. */
static int fold_samples(void *ctx, const struct evp_sample *smp, size_t ns)
{
    struct folded *f = ctx;
    for (size_t k = 0; k < ns; k++) {
        const struct evp_sample *s = &smp[k];
        size_t n = (size_t)s->depth;
        size_t d = 0;
        f->cur = f->base;
        if (s->flags & EVP_SMPF_CUT) {
            f->cur = node_of(f, f->cur, K_UNKNOWN);
            if (f->cur == UINT32_MAX)
                return -ENOMEM;
            d++;
        }
        for (size_t i = 0; i < n; i++)
            if (enter_frame(f, d++, s->func[i]))
                return -ENOMEM;
        uint32_t at = f->cur;
        if (!d) {
            at = node_of(f, at, K_PHASE | EVP_EV_RUNTIME_OTHER);
        } else if (!f->max_depth || d <= f->max_depth) {
            int ph = evp_sample_phase(s->state),
                op = evp_sample_opcode(s->state);
            /* in JIT code the frame's instruction pointer may lag: the
             * sample is its function's, at no line or opcode */
            int current = evp_sample_ip_current(f->t, s->state);
            if (f->o->phases)
                at = node_of(f, at,
                             ph >= 0 ? K_PHASE | (uint32_t)ph
                                     : K_SCAT | (uint32_t)evp_sample_cat(
                                                    s->state, s->stack));
            uint32_t line =
                n && f->lines && at != UINT32_MAX && current
                    ? evp_lines_line(f->lines, s->func[n - 1], s->unit)
                    : 0;
            if (line) {
                uint32_t key = line_key(f, s->func[n - 1], line);
                at = key == UINT32_MAX ? key : node_of(f, at, key);
            }
            if (op >= 0 && current && f->o->ops && at != UINT32_MAX)
                at = node_of(f, at, K_OP | (uint32_t)op);
        }
        if (at == UINT32_MAX)
            return -ENOMEM;
        f->nodes[at].ns += s->weight;
    }
    return 0;
}

/* ---- names -------------------------------------------------------------- */

/*
 * The distinct names of the tree: each key is named once (KEYS maps a key
 * to its name), equal names are one entry of STR, and every name has the
 * rank of its own line ("N") and of its block of descendants ("N;") in
 * byte order.
 */
struct rank {
    uint32_t own, block;
};

struct key_name {
    uint32_t key, name;
};

struct names {
    struct evp_strset str;
    struct rank *rank;    /* by name id, once ranked */
    struct evp_itab keys; /* key -> index in kv */
    struct key_name *kv;
    size_t kn, kcap;
    char *buf; /* a name being formatted */
    size_t bufcap;
};

/* Longest leaf or placeholder name: "op:" and an opcode name (a reader
 * keeps 255 bytes of it). */
#define LEAF_MAX 272

/* The folded name of key K into BUF (room for 4 * (LEAF_MAX - 1 + file)
 * + 40 bytes, see name_room); returns its length. */
static size_t key_name(const struct folded *f, uint32_t k, char *buf)
{
    char tmp[LEAF_MAX];
    const char *s = tmp;
    size_t n;
    const char *file = "";
    uint32_t line = 0;
    switch (k & K_TAG) {
    case K_PHASE:
    case K_OP:
        n = evp_view_leaf_name(f->t, k, tmp, sizeof tmp);
        break;
    case K_STREAM: {
        const struct evp_stream *st = evp_trace_stream(f->t, k & K_VAL);
        s = st && st->name && *st->name ? st->name : "thread";
        n = strlen(s);
        break;
    }
    case K_DEEP:
        n = (size_t)snprintf(tmp, sizeof tmp, "[%u deeper frame%s]", k & K_VAL,
                             (k & K_VAL) == 1 ? "" : "s");
        break;
    case K_UNKNOWN:
        s = EVP_STACK_UNKNOWN_NAME;
        n = strlen(s);
        break;
    case K_SCAT:
        s = evp_sample_cat_leaf((int)(k & K_VAL));
        n = strlen(s);
        break;
    case K_LINE: {
        const struct lkey *l = &f->lk[k & K_VAL];
        const struct evp_func *fn = evp_trace_func(f->t, l->func);
        size_t len =
            evp_esc_folded(buf, fn && fn->file && *fn->file ? fn->file : "?",
                           fn && fn->file && *fn->file ? strlen(fn->file) : 1);
        return len + (size_t)sprintf(buf + len, ":%" PRIu32, l->line);
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
    size_t len = evp_esc_folded(buf, s, n);
    if (*file) {
        buf[len++] = ' ';
        buf[len++] = '(';
        len += evp_esc_folded(buf + len, file, strlen(file));
        len += (size_t)sprintf(buf + len, ":%" PRIu32 ")", line);
    }
    return len;
}

/* Bytes key_name may write for K. */
static size_t name_room(const struct folded *f, uint32_t k)
{
    size_t n = LEAF_MAX;
    if ((k & K_TAG) == K_STREAM) {
        const struct evp_stream *st = evp_trace_stream(f->t, k & K_VAL);
        if (st && st->name)
            n += strlen(st->name);
    } else if ((k & K_TAG) == K_FUNC || (k & K_TAG) == K_LINE) {
        const struct evp_func *fn = evp_trace_func(
            f->t, (k & K_TAG) == K_LINE ? f->lk[k & K_VAL].func : k);
        if (fn)
            n += strlen(fn->name) + (fn->file ? strlen(fn->file) : 0);
    }
    return 4 * n + 40;
}

struct key_probe {
    const struct names *nm;
    uint32_t key;
};

static int same_key(const void *ctx, uint32_t i)
{
    const struct key_probe *p = ctx;
    return p->nm->kv[i].key == p->key;
}

/* The name id of key K, made (and interned) on first use; UINT32_MAX
 * when out of memory. */
static uint32_t name_of(struct folded *f, struct names *nm, uint32_t k)
{
    struct key_probe p = {nm, k};
    uint64_t h = evp_itab_hash_u64(k);
    uint32_t i = evp_itab_find(&nm->keys, h, same_key, &p);
    if (i != EVP_ITAB_NONE)
        return nm->kv[i].name;
    size_t room = name_room(f, k);
    if (evp_grow((void **)&nm->buf, &nm->bufcap, room, 1, 256) ||
        evp_grow((void **)&nm->kv, &nm->kcap, nm->kn + 1, sizeof *nm->kv, 256))
        return UINT32_MAX;
    size_t len = key_name(f, k, nm->buf);
    uint32_t id = evp_strset_add(&nm->str, nm->buf, len, NULL);
    if (id == EVP_ITAB_NONE || evp_itab_put(&nm->keys, h, (uint32_t)nm->kn) < 0)
        return UINT32_MAX;
    nm->kv[nm->kn++] = (struct key_name){k, id};
    return id;
}

/* Sort keys "N" (own line) and "N;" (block): entry = name id * 2 + block;
 * NAMES (the strset) is qsort_r's argument. */
static int cmp_sortkey(const void *a, const void *b, void *names)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    size_t nx, ny;
    const char *sx = evp_strset_get(names, x >> 1, &nx);
    const char *sy = evp_strset_get(names, y >> 1, &ny);
    size_t lx = nx + (x & 1), ly = ny + (y & 1);
    size_t m = lx < ly ? lx : ly;
    for (size_t i = 0; i < m; i++) {
        unsigned char cx = i < nx ? (unsigned char)sx[i] : ';';
        unsigned char cy = i < ny ? (unsigned char)sy[i] : ';';
        if (cx != cy)
            return cx < cy ? -1 : 1;
    }
    return lx < ly ? -1 : lx > ly;
}

static int rank_names(struct names *nm)
{
    size_t n = nm->str.n;
    uint32_t *v = malloc((n ? n : 1) * 2 * sizeof *v);
    nm->rank = malloc((n ? n : 1) * sizeof *nm->rank);
    if (!v || !nm->rank) {
        free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n * 2; i++)
        v[i] = (uint32_t)i;
    qsort_r(v, n * 2, sizeof *v, cmp_sortkey, &nm->str);
    for (size_t r = 0; r < n * 2; r++) {
        if (v[r] & 1)
            nm->rank[v[r] >> 1].block = (uint32_t)r;
        else
            nm->rank[v[r] >> 1].own = (uint32_t)r;
    }
    free(v);
    return 0;
}

static void names_free(struct names *nm)
{
    evp_strset_free(&nm->str);
    evp_itab_free(&nm->keys);
    free(nm->rank);
    free(nm->kv);
    free(nm->buf);
}

/* ---- the walk ----------------------------------------------------------- */

/*
 * One level of the depth-first walk: the children of the node group
 * above it (all nodes of one name under one path), sorted by name, as a
 * range of IDS; and its line items in output order, as a range of ITEMS.
 * Both arrays are stacks shared by all levels, so the walk holds at most
 * every node once plus the current path.
 */
struct item {
    uint32_t rank;
    uint32_t first, end; /* the group: IDS[first, end) */
    int block;           /* 0: the group's own line; 1: its descendants */
};

struct level {
    size_t ids, nids;     /* in W->ids */
    size_t items, nitems; /* in W->items */
    size_t next;          /* next item */
    size_t path_len;      /* path length before this level's names */
};

struct walk {
    struct folded *f;
    struct names *nm;
    uint32_t *kid_start; /* children of node i: kids[kid_start[i] ..
                            kid_start[i + 1]) */
    uint32_t *kids;
    uint32_t *ids;
    size_t nids, ids_cap;
    struct item *items;
    size_t nitems, items_cap;
    struct level *lv;
    size_t depth, lv_cap;
    char *path;
    size_t path_len, path_cap;
    int (*fn)(void *ctx, const char *stack, size_t len, uint64_t ns);
    void *ctx;
};

/* Node ids by their name's rank; W (the walk) is qsort_r's argument. */
static int cmp_id(const void *a, const void *b, void *walk)
{
    const struct walk *w = walk;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t rx = w->nm->rank[w->f->nodes[x].key].own;
    uint32_t ry = w->nm->rank[w->f->nodes[y].key].own;
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return (x > y) - (x < y);
}

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Push a level holding the children of the group IDS[FIRST, END) (taken
 * by index: the arrays may move as they grow). */
static int push_level(struct walk *w, size_t first, size_t end)
{
    size_t total = 0;
    for (size_t g = first; g < end; g++) {
        uint32_t id = w->ids[g];
        total += w->kid_start[id + 1] - w->kid_start[id];
    }
    if (evp_grow((void **)&w->ids, &w->ids_cap, w->nids + total, sizeof *w->ids,
                 256) ||
        evp_grow((void **)&w->lv, &w->lv_cap, w->depth + 1, sizeof *w->lv, 256))
        return -ENOMEM;
    size_t base = w->nids;
    for (size_t g = first; g < end; g++) {
        uint32_t id = w->ids[g];
        for (uint32_t k = w->kid_start[id]; k < w->kid_start[id + 1]; k++)
            w->ids[w->nids++] = w->kids[k];
    }
    qsort_r(w->ids + base, total, sizeof *w->ids, cmp_id, w);
    /* Groups of one name: an item for its line (when it has time) and
     * one for its descendants (when it has any). */
    size_t ibase = w->nitems;
    for (size_t i = base; i < base + total;) {
        uint32_t name = w->f->nodes[w->ids[i]].key;
        size_t j = i;
        uint64_t ns = 0;
        int kids = 0;
        for (; j < base + total && w->f->nodes[w->ids[j]].key == name; j++) {
            uint32_t id = w->ids[j];
            ns += w->f->nodes[id].ns;
            kids |= w->kid_start[id + 1] > w->kid_start[id];
        }
        if (evp_grow((void **)&w->items, &w->items_cap, w->nitems + 2,
                     sizeof *w->items, 256))
            return -ENOMEM;
        const struct rank *rk = &w->nm->rank[name];
        if (ns)
            w->items[w->nitems++] =
                (struct item){rk->own, (uint32_t)i, (uint32_t)j, 0};
        if (kids)
            w->items[w->nitems++] =
                (struct item){rk->block, (uint32_t)i, (uint32_t)j, 1};
        i = j;
    }
    if (w->nitems > ibase) /* (ITEMS is still NULL before the first) */
        qsort(w->items + ibase, w->nitems - ibase, sizeof *w->items, cmp_item);
    w->lv[w->depth++] =
        (struct level){base, total, ibase, w->nitems - ibase, 0, w->path_len};
    return 0;
}

/* Append name NAME to the path (after a ';' below the top level). */
static int path_add(struct walk *w, uint32_t name, int sep)
{
    size_t len;
    const char *s = evp_strset_get(&w->nm->str, name, &len);
    if (evp_grow((void **)&w->path, &w->path_cap, w->path_len + len + 1, 1,
                 256))
        return -ENOMEM;
    if (sep)
        w->path[w->path_len++] = ';';
    memcpy(w->path + w->path_len, s, len);
    w->path_len += len;
    return 0;
}

static int walk_tree(struct walk *w)
{
    /* The root's level: its children. */
    if (evp_grow((void **)&w->ids, &w->ids_cap, 1, sizeof *w->ids, 256))
        return -ENOMEM;
    w->ids[0] = 0;
    w->nids = 1;
    int rc = push_level(w, 0, 1);
    while (!rc && w->depth) {
        struct level *l = &w->lv[w->depth - 1];
        if (l->next == l->nitems) {
            w->nids = l->ids;
            w->nitems = l->items;
            w->path_len = l->path_len;
            w->depth--;
            continue;
        }
        struct item it = w->items[l->items + l->next++];
        uint32_t name = w->f->nodes[w->ids[it.first]].key;
        w->path_len = l->path_len;
        rc = path_add(w, name, w->depth > 1);
        if (rc)
            break;
        if (it.block) {
            rc = push_level(w, it.first, it.end);
        } else {
            uint64_t ns = 0;
            for (size_t g = it.first; g < it.end; g++)
                ns += w->f->nodes[w->ids[g]].ns;
            if (w->f->scale > 0) /* timer periods: their est. time */
                ns = (uint64_t)((double)ns * w->f->scale + 0.5);
            rc = w->fn(w->ctx, w->path, w->path_len, ns);
        }
    }
    return rc;
}

/* Name every node (its key becomes its name id), rank the names, index
 * the children, and walk. */
static int write_lines(struct folded *f,
                       int (*fn)(void *ctx, const char *stack, size_t len,
                                 uint64_t ns),
                       void *ctx)
{
    struct names nm = {
        EVP_STRSET_INIT, NULL, EVP_ITAB_INIT, NULL, 0, 0, NULL, 0};
    struct walk w = {.f = f, .nm = &nm, .fn = fn, .ctx = ctx};
    int rc = -ENOMEM;
    for (size_t i = 0; i < f->ndeep; i++)
        f->nodes[f->deep[i].node].key = K_DEEP | f->deep[i].frames;
    for (size_t i = 1; i < f->n; i++) {
        uint32_t id = name_of(f, &nm, f->nodes[i].key);
        if (id == UINT32_MAX)
            goto done;
        f->nodes[i].key = id;
    }
    f->nodes[0].key = 0; /* never looked at */
    if (rank_names(&nm))
        goto done;
    /* Children by parent (a parent is always made before its child). */
    w.kid_start = calloc(f->n + 1, sizeof *w.kid_start);
    w.kids = malloc((f->n ? f->n : 1) * sizeof *w.kids);
    if (!w.kid_start || !w.kids)
        goto done;
    for (size_t i = 1; i < f->n; i++)
        w.kid_start[f->nodes[i].parent + 1]++;
    for (size_t i = 0; i < f->n; i++)
        w.kid_start[i + 1] += w.kid_start[i];
    uint32_t *fill = w.kids; /* kid_start[p] advanced, then restored */
    for (size_t i = 1; i < f->n; i++)
        fill[w.kid_start[f->nodes[i].parent]++] = (uint32_t)i;
    for (size_t i = f->n; i > 0; i--)
        w.kid_start[i] = w.kid_start[i - 1];
    w.kid_start[0] = 0;
    rc = walk_tree(&w);
done:
    names_free(&nm);
    free(w.kid_start);
    free(w.kids);
    free(w.ids);
    free(w.items);
    free(w.lv);
    free(w.path);
    return rc;
}

int evp_view_folded_each(struct evp_trace *t, const struct evp_folded_opts *o,
                         int (*fn)(void *ctx, const char *stack, size_t len,
                                   uint64_t ns),
                         void *ctx)
{
    struct folded f;
    memset(&f, 0, sizeof f);
    f.t = t;
    f.o = o;
    f.multi = o->stream < 0 && evp_trace_nstreams(t) > 1;
    f.max_depth = o->max_depth;
    int rc = -ENOMEM;
    if (o->lines && !(f.lines = evp_lines_open(t)))
        goto done;
    if (evp_grow((void **)&f.nodes, &f.cap, 1, sizeof *f.nodes, 4096) ||
        evp_itab_reserve(&f.index, f.cap) < 0)
        goto done;
    f.nodes[0] = (struct fnode){UINT32_MAX, 0, 0}; /* the root */
    f.n = 1;
    struct evp_replay_opts ro = {.compensate = o->compensate,
                                 .stream = o->stream};
    struct evp_replay_ops ops = {begin_stream, on_events, NULL, NULL};
    if (evp_sampled_only(t)) {
        f.scale = evp_trace_info(t)->sample_period_ns;
        if (!(f.scale > 0))
            f.scale = 1; /* no period recorded: the periods themselves */
        ops = (struct evp_replay_ops){begin_stream, NULL, NULL, fold_samples};
    }
    rc = evp_replay(t, &ro, &ops, &f);
    if (rc < 0 && rc != -ENOMEM) {
        fprintf(stderr, "evalprof: %s: trace could not be replayed\n",
                evp_trace_info(t)->path);
        goto done;
    }
    if (rc < 0)
        goto done;
    /* The replay's index is not needed for the walk: give it back. */
    evp_itab_free(&f.index);
    if (f.ndeep)
        fprintf(stderr,
                "evalprof: note: stacks deeper than %zu frames (the deepest "
                "%zu) are cut at frame %zu in %zu place%s; the time below "
                "is in a \"[N deeper frames]\" leaf (--max-depth 0 keeps "
                "every frame)\n",
                f.max_depth, f.deepest, f.max_depth, f.ndeep,
                f.ndeep == 1 ? "" : "s");
    rc = write_lines(&f, fn, ctx);
done:
    if (rc == -ENOMEM)
        fprintf(stderr, "evalprof: folded: out of memory\n");
    free(f.nodes);
    evp_itab_free(&f.index);
    free(f.deep);
    free(f.lk);
    evp_itab_free(&f.lkindex);
    evp_lines_close(f.lines);
    return rc;
}

static int write_line(void *ctx, const char *stack, size_t len, uint64_t ns)
{
    FILE *out = ctx;
    fwrite(stack, 1, len, out);
    fprintf(out, " %" PRIu64 "\n", ns);
    return ferror(out) ? -EIO : 0;
}

int evp_view_folded(struct evp_trace *t, FILE *out,
                    const struct evp_folded_opts *o)
{
    return evp_view_folded_each(t, o, write_line, out);
}
