/*
 * The folded view: a trace as collapsed stacks, "a;b;c <ns>" per line,
 * for flamegraph.pl, inferno, speedscope and `evalprof flamegraph`.
 *
 * The lines are the paths of the call tree (calltree.h), which holds
 * every event's elapsed time on the node it falls in, or on a leaf under
 * it:
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
 * the caller, as in the tree view.  A sampled trace's lines are its
 * samples' stacks, each sample's weight in timer periods written as its
 * estimated ns (weight x sample.period_ns).
 *
 * The lines are written by walking the tree
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

#include "calltree.h"
#include "itab.h"
#include "views.h"

#define K_TAG EVP_KEY_TAG
#define K_VAL EVP_KEY_VAL

struct folded {
    struct evp_trace *t;
    struct evp_ctree ct;
    struct evp_ctree_node *nodes; /* ct.node: after naming, KEY is the id
                                     of the node's name */
    /* a sampled trace: nodes count timer periods, SCALE ns each */
    double scale;
    int family; /* opcode leaves as families (evp_folded_opts.ops 2) */
};

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
    case EVP_KEY_PHASE:
        n = evp_view_leaf_name(f->t, k, tmp, sizeof tmp);
        break;
    case EVP_KEY_OP:
        if (f->family) {
            evp_view_op_name(f->t, evp_trace_opbase(f->t, k & K_VAL), tmp + 3,
                             sizeof tmp - 3);
            evp_view_op_family(tmp + 3, sizeof tmp - 3, 1);
            memcpy(tmp, "op:", 3);
            n = strlen(tmp);
        } else {
            n = evp_view_leaf_name(f->t, k, tmp, sizeof tmp);
        }
        break;
    case EVP_KEY_STREAM: {
        const struct evp_stream *st = evp_trace_stream(f->t, k & K_VAL);
        s = st && st->name && *st->name ? st->name : "thread";
        n = strlen(s);
        break;
    }
    case EVP_KEY_DEEP:
        n = (size_t)snprintf(tmp, sizeof tmp, "[%u deeper frame%s]", k & K_VAL,
                             (k & K_VAL) == 1 ? "" : "s");
        break;
    case EVP_KEY_UNKNOWN:
        s = EVP_STACK_UNKNOWN_NAME;
        n = strlen(s);
        break;
    case EVP_KEY_SCAT:
        s = evp_sample_cat_leaf((int)(k & K_VAL));
        n = strlen(s);
        break;
    case EVP_KEY_LINE: {
        const struct evp_ctree_line *l = &f->ct.line[k & K_VAL];
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
    if ((k & K_TAG) == EVP_KEY_STREAM) {
        const struct evp_stream *st = evp_trace_stream(f->t, k & K_VAL);
        if (st && st->name)
            n += strlen(st->name);
    } else if ((k & K_TAG) == 0u || (k & K_TAG) == EVP_KEY_LINE) {
        const struct evp_func *fn = evp_trace_func(
            f->t, (k & K_TAG) == EVP_KEY_LINE ? f->ct.line[k & K_VAL].func : k);
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
            ns += w->f->nodes[id].value;
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
                ns += w->f->nodes[w->ids[g]].value;
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
    struct evp_ctree *ct = &f->ct;
    struct names nm = {
        EVP_STRSET_INIT, NULL, EVP_ITAB_INIT, NULL, 0, 0, NULL, 0};
    struct walk w = {.f = f, .nm = &nm, .fn = fn, .ctx = ctx};
    int rc = -ENOMEM;
    for (size_t i = 0; i < ct->ndeep; i++)
        f->nodes[ct->deep[i].node].key = EVP_KEY_DEEP | ct->deep[i].frames;
    for (size_t i = 1; i < ct->n; i++) {
        uint32_t id = name_of(f, &nm, f->nodes[i].key);
        if (id == UINT32_MAX)
            goto done;
        f->nodes[i].key = id;
    }
    f->nodes[0].key = 0; /* never looked at */
    if (rank_names(&nm) || evp_ctree_index(ct))
        goto done;
    /* Children by parent (a parent is always made before its child). */
    w.kid_start = ct->kid_start;
    w.kids = ct->kid;
    rc = walk_tree(&w);
done:
    names_free(&nm);
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
    struct folded f = {.t = t, .family = o->ops == 2};
    struct evp_ctree_opts co = {.ops = o->ops,
                                .phases = o->phases,
                                .lines = o->lines,
                                .compensate = o->compensate,
                                .stream = o->stream,
                                .max_depth = o->max_depth,
                                .diag = o->diag,
                                .view = "folded"};
    int rc = evp_ctree_build(t, &co, &f.ct);
    if (rc < 0)
        return rc;
    f.nodes = f.ct.node;
    if (f.ct.sampled) {
        f.scale = evp_trace_info(t)->sample_period_ns;
        if (!(f.scale > 0))
            f.scale = 1; /* no period recorded: the periods themselves */
    }
    evp_ctree_note_cut(&f.ct, o->max_depth, "leaf", o->diag);
    rc = write_lines(&f, fn, ctx);
    if (rc == -ENOMEM)
        evp_diag_fail(o->diag, "folded: out of memory");
    evp_ctree_free(&f.ct);
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
