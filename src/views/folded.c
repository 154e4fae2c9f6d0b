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
 *     --ops an "op:NAME" leaf for instructions;
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
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

/* Keys: a function id, or a tagged leaf. */
#define K_FUNC 0x00000000u
#define K_PHASE 0x10000000u  /* | kind: "[name]" */
#define K_OP 0x20000000u     /* | opcode: "op:NAME" */
#define K_STREAM 0x30000000u /* | stream index: stream root */
#define K_DEEP 0x40000000u   /* | frames: "[N deeper frames]" */
#define K_TAG 0xf0000000u
#define K_VAL 0x0fffffffu

struct fnode {
    uint32_t parent;
    uint32_t key; /* after the replay: the id of the node's name */
    uint64_t ns;
};

struct fslot {
    uint64_t h;
    uint32_t node;
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
    struct fslot *tab;
    size_t tcap;
    uint32_t *stack;
    size_t depth, scap;
    uint32_t base; /* root of the current stream */
    int multi;
    size_t next_stream; /* index of the stream expected next */
    /* depth cap (0: none) and what it folded */
    size_t max_depth;
    struct deep_leaf *deep; /* in node order (leaves are made in order) */
    size_t ndeep, dcap;
    size_t cur_deep; /* leaf of the current stack below the cap */
    size_t deepest;  /* most frames on a stack that was cut */
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
    if (f->n >= UINT32_MAX - 1)
        return UINT32_MAX; /* ids are 32-bit */
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

/* A push with max_depth frames or more on the stack: every frame from
 * here down is the one "[N deeper frames]" leaf under the frame at the
 * cap (pushed once per frame, so that the pops still match). */
static int push_deep(struct folded *f)
{
    size_t d = f->depth;
    uint32_t leaf;
    if (d == f->max_depth) {
        size_t before = f->n;
        leaf = node_of(f, f->stack[d - 1], K_DEEP);
        if (leaf == UINT32_MAX)
            return -ENOMEM;
        if (f->n > before) {
            if (f->ndeep == f->dcap) {
                size_t nc = f->dcap ? f->dcap * 2 : 16;
                struct deep_leaf *nd = realloc(f->deep, nc * sizeof *nd);
                if (!nd)
                    return -ENOMEM;
                f->deep = nd;
                f->dcap = nc;
            }
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
        leaf = f->stack[d - 1];
    }
    size_t below = d + 1 - f->max_depth;
    if (below > K_VAL)
        below = K_VAL;
    if (below > f->deep[f->cur_deep].frames)
        f->deep[f->cur_deep].frames = (uint32_t)below;
    if (d + 1 > f->deepest)
        f->deepest = d + 1;
    return fpush(f, leaf);
}

static int begin_stream(void *ctx, const struct evp_stream *s)
{
    struct folded *f = ctx;
    f->depth = 0;
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
    return 0;
}

static int on_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct folded *f = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        uint32_t top = f->depth ? f->stack[f->depth - 1] : f->base;
        if (evp_kind_pushes(e->kind)) {
            if (f->max_depth && f->depth >= f->max_depth) {
                if (push_deep(f))
                    return -ENOMEM;
                top = f->stack[f->depth - 1];
            } else {
                top = node_of(f, top, K_FUNC | (e->func & K_VAL));
                if (top == UINT32_MAX || fpush(f, top))
                    return -ENOMEM;
            }
        } else if (evp_kind_pops(e->kind)) {
            if (f->depth)
                f->depth--;
            top = f->depth ? f->stack[f->depth - 1] : f->base;
        }
        if (!e->elapsed)
            continue;
        uint32_t at = top;
        uint32_t kind = e->kind < K_VAL ? e->kind : K_VAL;
        if (!f->depth) {
            at = node_of(f, top, K_PHASE | kind);
        } else if (!f->max_depth || f->depth <= f->max_depth) {
            /* (below the cap, everything is the deep leaf's) */
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

/* ---- names -------------------------------------------------------------- */

/*
 * The distinct names of the tree: each key is named once (KEYS maps a key
 * to its name), equal names are one entry (interned through HTAB), and
 * every name has the rank of its own line ("N") and of its block of
 * descendants ("N;") in byte order.
 */
struct name {
    size_t off; /* in the arena */
    size_t len;
    uint32_t rank_own, rank_block;
};

struct kslot {
    uint32_t key;
    uint32_t name; /* UINT32_MAX: empty */
};

struct names {
    struct name *v;
    size_t n, cap;
    char *arena;
    size_t alen, acap;
    uint32_t *htab; /* name ids + 1 by hash of the bytes; 0: empty */
    size_t hcap;
    struct kslot *keys;
    size_t kn, kcap;
};

/* The folded name of key K into BUF (room for 4 * (159 + file) + 40
 * bytes, see name_room); returns its length. */
static size_t key_name(const struct folded *f, uint32_t k, char *buf)
{
    char tmp[160];
    const char *s = tmp;
    size_t n;
    const char *file = "";
    uint32_t line = 0;
    switch (k & K_TAG) {
    case K_PHASE:
        n = (size_t)snprintf(tmp, sizeof tmp, "[%s]", evp_kind_name(k & K_VAL));
        break;
    case K_OP: {
        const char *op = evp_trace_opname(f->t, k & K_VAL);
        if (op)
            n = (size_t)snprintf(tmp, sizeof tmp, "op:%s", op);
        else
            n = (size_t)snprintf(tmp, sizeof tmp, "op:%u", k & K_VAL);
        break;
    }
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
    size_t n = 160;
    if ((k & K_TAG) == K_STREAM) {
        const struct evp_stream *st = evp_trace_stream(f->t, k & K_VAL);
        if (st && st->name)
            n += strlen(st->name);
    } else if ((k & K_TAG) == K_FUNC) {
        const struct evp_func *fn = evp_trace_func(f->t, k);
        if (fn)
            n += strlen(fn->name) + (fn->file ? strlen(fn->file) : 0);
    }
    return 4 * n + 40;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int names_rehash(struct names *nm)
{
    size_t nc = nm->hcap ? nm->hcap * 2 : 1024;
    uint32_t *nt = calloc(nc, sizeof *nt);
    if (!nt)
        return -ENOMEM;
    for (size_t i = 0; i < nm->n; i++) {
        size_t j =
            hash_bytes(nm->arena + nm->v[i].off, nm->v[i].len) & (nc - 1);
        while (nt[j])
            j = (j + 1) & (nc - 1);
        nt[j] = (uint32_t)i + 1;
    }
    free(nm->htab);
    nm->htab = nt;
    nm->hcap = nc;
    return 0;
}

static int keys_rehash(struct names *nm)
{
    size_t nc = nm->kcap ? nm->kcap * 2 : 1024;
    struct kslot *nt = malloc(nc * sizeof *nt);
    if (!nt)
        return -ENOMEM;
    for (size_t i = 0; i < nc; i++)
        nt[i].name = UINT32_MAX;
    for (size_t i = 0; i < nm->kcap; i++) {
        if (nm->keys[i].name == UINT32_MAX)
            continue;
        size_t j = hkey(0, nm->keys[i].key) & (nc - 1);
        while (nt[j].name != UINT32_MAX)
            j = (j + 1) & (nc - 1);
        nt[j] = nm->keys[i];
    }
    free(nm->keys);
    nm->keys = nt;
    nm->kcap = nc;
    return 0;
}

/* The name id of key K, made (and interned) on first use; UINT32_MAX
 * when out of memory. */
static uint32_t name_of(struct folded *f, struct names *nm, uint32_t k)
{
    size_t j = hkey(0, k) & (nm->kcap - 1);
    for (; nm->keys[j].name != UINT32_MAX; j = (j + 1) & (nm->kcap - 1))
        if (nm->keys[j].key == k)
            return nm->keys[j].name;
    /* Format it at the end of the arena, then keep it only if new. */
    size_t room = name_room(f, k);
    if (nm->alen + room > nm->acap) {
        size_t nc = nm->acap ? nm->acap * 2 : 65536;
        while (nc < nm->alen + room)
            nc *= 2;
        char *na = realloc(nm->arena, nc);
        if (!na)
            return UINT32_MAX;
        nm->arena = na;
        nm->acap = nc;
    }
    char *s = nm->arena + nm->alen;
    size_t len = key_name(f, k, s);
    uint64_t h = hash_bytes(s, len);
    size_t i = h & (nm->hcap - 1);
    uint32_t id = UINT32_MAX;
    for (; nm->htab[i]; i = (i + 1) & (nm->hcap - 1)) {
        const struct name *x = &nm->v[nm->htab[i] - 1];
        if (x->len == len && memcmp(nm->arena + x->off, s, len) == 0) {
            id = nm->htab[i] - 1;
            break;
        }
    }
    if (id == UINT32_MAX) {
        if (nm->n == nm->cap) {
            size_t nc = nm->cap ? nm->cap * 2 : 256;
            struct name *nv = realloc(nm->v, nc * sizeof *nv);
            if (!nv)
                return UINT32_MAX;
            nm->v = nv;
            nm->cap = nc;
        }
        id = (uint32_t)nm->n++;
        nm->v[id] = (struct name){nm->alen, len, 0, 0};
        nm->alen += len;
        nm->htab[i] = id + 1;
        if (nm->n * 2 > nm->hcap && names_rehash(nm))
            return UINT32_MAX;
    }
    nm->keys[j] = (struct kslot){k, id};
    if (++nm->kn * 2 > nm->kcap && keys_rehash(nm))
        return UINT32_MAX;
    return id;
}

/* Sort keys "N" (own line) and "N;" (block): entry = name id * 2 + block. */
static const struct names *sort_names;

static int cmp_sortkey(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    const struct name *nx = &sort_names->v[x >> 1],
                      *ny = &sort_names->v[y >> 1];
    const char *sx = sort_names->arena + nx->off;
    const char *sy = sort_names->arena + ny->off;
    size_t lx = nx->len + (x & 1), ly = ny->len + (y & 1);
    size_t m = lx < ly ? lx : ly;
    for (size_t i = 0; i < m; i++) {
        unsigned char cx = i < nx->len ? (unsigned char)sx[i] : ';';
        unsigned char cy = i < ny->len ? (unsigned char)sy[i] : ';';
        if (cx != cy)
            return cx < cy ? -1 : 1;
    }
    return lx < ly ? -1 : lx > ly;
}

static int rank_names(struct names *nm)
{
    uint32_t *v = malloc((nm->n ? nm->n : 1) * 2 * sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < nm->n * 2; i++)
        v[i] = (uint32_t)i;
    sort_names = nm;
    qsort(v, nm->n * 2, sizeof *v, cmp_sortkey);
    for (size_t r = 0; r < nm->n * 2; r++) {
        if (v[r] & 1)
            nm->v[v[r] >> 1].rank_block = (uint32_t)r;
        else
            nm->v[v[r] >> 1].rank_own = (uint32_t)r;
    }
    free(v);
    return 0;
}

static void names_free(struct names *nm)
{
    free(nm->v);
    free(nm->arena);
    free(nm->htab);
    free(nm->keys);
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

static int reserve(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 256;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, nc * size);
    if (!np)
        return -ENOMEM;
    *p = np;
    *cap = nc;
    return 0;
}

static const struct walk *sort_walk;

static int cmp_id(const void *a, const void *b)
{
    const struct walk *w = sort_walk;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t rx = w->nm->v[w->f->nodes[x].key].rank_own;
    uint32_t ry = w->nm->v[w->f->nodes[y].key].rank_own;
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
    if (reserve((void **)&w->ids, &w->ids_cap, w->nids + total,
                sizeof *w->ids) ||
        reserve((void **)&w->lv, &w->lv_cap, w->depth + 1, sizeof *w->lv))
        return -ENOMEM;
    size_t base = w->nids;
    for (size_t g = first; g < end; g++) {
        uint32_t id = w->ids[g];
        for (uint32_t k = w->kid_start[id]; k < w->kid_start[id + 1]; k++)
            w->ids[w->nids++] = w->kids[k];
    }
    sort_walk = w;
    qsort(w->ids + base, total, sizeof *w->ids, cmp_id);
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
        if (reserve((void **)&w->items, &w->items_cap, w->nitems + 2,
                    sizeof *w->items))
            return -ENOMEM;
        const struct name *nmv = &w->nm->v[name];
        if (ns)
            w->items[w->nitems++] =
                (struct item){nmv->rank_own, (uint32_t)i, (uint32_t)j, 0};
        if (kids)
            w->items[w->nitems++] =
                (struct item){nmv->rank_block, (uint32_t)i, (uint32_t)j, 1};
        i = j;
    }
    if (w->nitems > ibase) /* (ITEMS is still NULL before the first) */
        qsort(w->items + ibase, w->nitems - ibase, sizeof *w->items,
              cmp_item);
    w->lv[w->depth++] =
        (struct level){base, total, ibase, w->nitems - ibase, 0, w->path_len};
    return 0;
}

/* Append name NAME to the path (after a ';' below the top level). */
static int path_add(struct walk *w, uint32_t name, int sep)
{
    const struct name *n = &w->nm->v[name];
    if (reserve((void **)&w->path, &w->path_cap, w->path_len + n->len + 1, 1))
        return -ENOMEM;
    if (sep)
        w->path[w->path_len++] = ';';
    memcpy(w->path + w->path_len, w->nm->arena + n->off, n->len);
    w->path_len += n->len;
    return 0;
}

static int walk_tree(struct walk *w)
{
    /* The root's level: its children. */
    if (reserve((void **)&w->ids, &w->ids_cap, 1, sizeof *w->ids))
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
    struct names nm = {0};
    struct walk w = {.f = f, .nm = &nm, .fn = fn, .ctx = ctx};
    int rc = -ENOMEM;
    for (size_t i = 0; i < f->ndeep; i++)
        f->nodes[f->deep[i].node].key = K_DEEP | f->deep[i].frames;
    if (names_rehash(&nm) || keys_rehash(&nm))
        goto done;
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
    f.cap = 4096;
    f.tcap = 8192;
    f.nodes = malloc(f.cap * sizeof *f.nodes);
    f.tab = calloc(f.tcap, sizeof *f.tab);
    int rc = -ENOMEM;
    if (!f.nodes || !f.tab)
        goto done;
    f.nodes[0] = (struct fnode){UINT32_MAX, 0, 0}; /* the root */
    f.n = 1;
    struct evp_replay_opts ro = {.compensate = o->compensate,
                                 .stream = o->stream};
    struct evp_replay_ops ops = {begin_stream, on_events, NULL};
    rc = evp_replay(t, &ro, &ops, &f);
    if (rc < 0 && rc != -ENOMEM) {
        fprintf(stderr, "evalprof: %s: trace could not be replayed\n",
                evp_trace_info(t)->path);
        goto done;
    }
    if (rc < 0)
        goto done;
    /* The replay's table is not needed for the walk: give it back. */
    free(f.tab);
    f.tab = NULL;
    free(f.stack);
    f.stack = NULL;
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
    free(f.tab);
    free(f.stack);
    free(f.deep);
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
    int rc = evp_view_folded_each(t, o, write_line, out);
    if (rc == -EIO)
        fprintf(stderr, "evalprof: folded: write error\n");
    return rc;
}
