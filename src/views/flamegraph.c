/*
 * Flame graphs: folded stacks merged into a tree and drawn as a
 * self-contained interactive SVG, in the tradition of flamegraph.pl.
 *
 * Input: "frame;frame;...;frame COUNT" lines (a second count makes a
 * differential line; the second is drawn).  A line without a count is
 * skipped and counted; a count above 2^53, which the tree's doubles could
 * not add exactly, refuses the whole input (a wrong picture is worse than
 * none).  Frames with the same path are
 * merged; children are ordered by name (byte order), so the picture does
 * not depend on the order of the input lines and the same stacks always
 * give the same bytes.
 *
 * Speed: consecutive lines usually share a prefix (collapsed output is
 * sorted), so the frames of the longest common prefix with the previous
 * line are reused without hashing; the rest are found through one hash
 * table keyed by (parent, name).  Values are added at the leaf only and
 * summed up the tree once at the end (a child is always created after its
 * parent, so one backward pass suffices).
 *
 * Output: one <g> per frame wider than the minimum width, holding a
 * <title> (name, value, share), a <rect> and a <text> label, with the
 * frame's start, value and depth in data-* attributes so that the embedded
 * script can zoom exactly.  The script gives hover details, click to zoom,
 * search (regular expression, highlight and matched share), reset, and
 * the ?s=TERM URL parameter.  Names never appear inside the script: it
 * reads them from the <title> elements, so only XML escaping is needed for
 * them; the only strings written into the script (units, title) go
 * through JavaScript escaping.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "itab.h"
#include "views.h"

struct node {
    const char *name; /* in the caller's buffer (borrowed) or an arena block */
    uint32_t nlen;
    uint32_t parent;
    uint32_t first_child;
    uint32_t next_sibling;
    uint32_t nkids;
    uint32_t nhash; /* hash of the name alone */
    double self;
    double value; /* inclusive, after finish() */
};

/* A parent with more children than this finds them through the hash
 * table; smaller families are scanned (their nodes were made together, so
 * the scan stays in cache, where a big table would miss on every probe). */
#define FANOUT 12

struct evp_flame {
    struct node *nodes;
    size_t n, cap;
    struct evp_itab index; /* (parent, name) -> node, big families only */
    char **blocks;         /* name arena: blocks never move once made */
    size_t nblocks, blocks_cap;
    size_t bused, bcap; /* in the current block */
    int borrow;         /* names may point into the caller's buffer */
    int summed;         /* finish() has added children into parents */
    double total;
    int finished;
    /* previous line, for prefix reuse: PREV points at it, either inside
     * the caller's buffer (during evp_flame_add_folded) or at OWN */
    const char *prev;
    char *own;
    size_t prev_len, own_cap;
    size_t *ends; /* end offset of each frame of the previous line */
    uint32_t *path;
    size_t depth, ecap, pcap;
    /* differential graphs: the BASE profile's values per node, beside the
     * nodes' own (NEW); BN entries are valid, the rest count as zero */
    int to_base;
    double *bself, *bvalue;
    size_t bn, bncap;
    double btotal;
};

#define NONE UINT32_MAX

static uint64_t hash_name(const char *s, size_t n, uint32_t parent)
{
    uint64_t h =
        1469598103934665603ull ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ull);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 31;
    }
    for (; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h ? h : 1;
}

struct evp_flame *evp_flame_new(void)
{
    struct evp_flame *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->cap = 1024;
    f->nodes = malloc(f->cap * sizeof *f->nodes);
    if (!f->nodes || evp_itab_reserve(&f->index, 1024) < 0) {
        evp_flame_free(f);
        return NULL;
    }
    /* node 0: the root, "all" */
    f->nodes[0] = (struct node){"all", 3, NONE, NONE, NONE, 0, 0, 0, 0};
    f->n = 1;
    return f;
}

void evp_flame_free(struct evp_flame *f)
{
    if (!f)
        return;
    free(f->nodes);
    evp_itab_free(&f->index);
    for (size_t i = 0; i < f->nblocks; i++)
        free(f->blocks[i]);
    free(f->blocks);
    free(f->own);
    free(f->ends);
    free(f->path);
    free(f->bself);
    free(f->bvalue);
    free(f);
}

static uint32_t hash32(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

struct child_probe {
    const struct evp_flame *f;
    uint32_t parent;
    const char *s;
    size_t n;
};

static int same_child(const void *ctx, uint32_t id)
{
    const struct child_probe *p = ctx;
    const struct node *cn = &p->f->nodes[id];
    return cn->parent == p->parent && cn->nlen == p->n &&
           memcmp(cn->name, p->s, p->n) == 0;
}

static int table_put(struct evp_flame *f, uint32_t id)
{
    const struct node *c = &f->nodes[id];
    return evp_itab_put(&f->index, hash_name(c->name, c->nlen, c->parent), id);
}

/* The child of PARENT named S (N bytes), created when missing. */
static uint32_t child(struct evp_flame *f, uint32_t parent, const char *s,
                      size_t n)
{
    uint32_t nh = hash32(s, n);
    const struct node *p = &f->nodes[parent];
    if (p->nkids <= FANOUT) {
        for (uint32_t c = p->first_child; c != NONE;
             c = f->nodes[c].next_sibling) {
            const struct node *cn = &f->nodes[c];
            if (cn->nhash == nh && cn->nlen == n && memcmp(cn->name, s, n) == 0)
                return c;
        }
    } else {
        struct child_probe cp = {f, parent, s, n};
        uint32_t c =
            evp_itab_find(&f->index, hash_name(s, n, parent), same_child, &cp);
        if (c != EVP_ITAB_NONE)
            return c;
    }
    if (evp_grow((void **)&f->nodes, &f->cap, f->n + 1, sizeof *f->nodes, 1024))
        return NONE;
    if (n > UINT32_MAX || f->n >= NONE - 1)
        return NONE;
    const char *name = s;
    if (!f->borrow) {
        if (f->bused + n > f->bcap || !f->nblocks) {
            size_t bc = n > (1u << 20) ? n : (1u << 20);
            if (evp_grow((void **)&f->blocks, &f->blocks_cap, f->nblocks + 1,
                         sizeof *f->blocks, 16) ||
                !(f->blocks[f->nblocks] = malloc(bc)))
                return NONE;
            f->nblocks++;
            f->bused = 0;
            f->bcap = bc;
        }
        char *dst = f->blocks[f->nblocks - 1] + f->bused;
        memcpy(dst, s, n);
        f->bused += n;
        name = dst;
    }
    uint32_t id = (uint32_t)f->n++;
    struct node *pp = &f->nodes[parent];
    f->nodes[id] = (struct node){
        name, (uint32_t)n, parent, NONE, pp->first_child, 0, nh, 0, 0};
    pp->first_child = id;
    pp->nkids++;
    if (pp->nkids == FANOUT + 1) {
        /* the family outgrows scanning: index every child */
        for (uint32_t c = pp->first_child; c != NONE;
             c = f->nodes[c].next_sibling)
            if (table_put(f, c))
                return NONE;
    } else if (pp->nkids > FANOUT + 1 && table_put(f, id)) {
        return NONE;
    }
    return id;
}

/* Keep the previous stack as a pointer when the caller's buffer stays
 * valid until the next call (STABLE), else copy it. */
static int remember(struct evp_flame *f, const char *s, size_t len, int stable)
{
    f->prev_len = len;
    if (stable) {
        f->prev = s;
        return 0;
    }
    if (evp_grow((void **)&f->own, &f->own_cap, len, 1, 256))
        return -ENOMEM;
    memcpy(f->own, s, len);
    f->prev = f->own;
    return 0;
}

/* BASE values for the first N nodes, zero where nothing was added. */
static int base_cover(struct evp_flame *f, size_t n)
{
    if (n <= f->bn)
        return 0;
    if (n > f->bncap) {
        size_t cap = f->bncap ? f->bncap : 1024;
        while (cap < n)
            cap *= 2;
        double *s = realloc(f->bself, cap * sizeof *s);
        if (!s)
            return -ENOMEM;
        f->bself = s;
        double *v = realloc(f->bvalue, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        f->bvalue = v;
        f->bncap = cap;
    }
    memset(f->bself + f->bn, 0, (n - f->bn) * sizeof *f->bself);
    f->bn = n;
    return 0;
}

static int add_stack(struct evp_flame *f, const char *s, size_t len,
                     double value, int stable)
{
    f->finished = 0;
    /* Frames of the previous stack that this one repeats. */
    size_t m = len < f->prev_len ? len : f->prev_len;
    size_t common = 0;
    while (common + 32 <= m && memcmp(s + common, f->prev + common, 32) == 0)
        common += 32;
    while (common + 8 <= m) {
        uint64_t a, b;
        memcpy(&a, s + common, 8);
        memcpy(&b, f->prev + common, 8);
        if (a != b)
            break;
        common += 8;
    }
    while (common < m && s[common] == f->prev[common])
        common++;
    size_t k = 0;
    while (k < f->depth && f->ends[k] <= common &&
           (f->ends[k] == len || s[f->ends[k]] == ';'))
        k++;
    uint32_t cur = k ? f->path[k - 1] : 0;
    size_t pos = k ? f->ends[k - 1] + 1 : 0;
    if (len && !(k && f->ends[k - 1] == len)) {
        for (;;) {
            const char *semi = memchr(s + pos, ';', len - pos);
            size_t end = semi ? (size_t)(semi - s) : len;
            cur = child(f, cur, s + pos, end - pos);
            if (cur == NONE)
                return -ENOMEM;
            if (evp_grow((void **)&f->ends, &f->ecap, k + 1, sizeof *f->ends,
                         256) ||
                evp_grow((void **)&f->path, &f->pcap, k + 1, sizeof *f->path,
                         256))
                return -ENOMEM;
            f->ends[k] = end;
            f->path[k] = cur;
            k++;
            if (!semi)
                break;
            pos = end + 1;
        }
    }
    f->depth = k;
    if (f->to_base) {
        if (base_cover(f, f->n))
            return -ENOMEM;
        f->bself[cur] += value;
        f->btotal += value;
    } else {
        f->nodes[cur].self += value;
        f->nodes[cur].value += value;
        f->total += value;
    }
    return remember(f, s, len, stable);
}

int evp_flame_add(struct evp_flame *f, const char *s, size_t len, double value)
{
    return add_stack(f, s, len, value, 0);
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Parse a trailing count "123" or "1.5" ending at E; returns its start or
 * NULL. */
static const char *trailing_count(const char *b, const char *e, double *v)
{
    const char *p = e;
    while (p > b && p[-1] >= '0' && p[-1] <= '9')
        p--;
    const char *frac = NULL;
    if (p > b && p[-1] == '.') {
        frac = p;
        p--;
        while (p > b && p[-1] >= '0' && p[-1] <= '9')
            p--;
        if (p + 1 == frac)
            return NULL; /* ".5" */
    }
    if (p == e)
        return NULL;
    double x = 0;
    const char *q = p;
    for (; q < e && *q != '.'; q++)
        x = x * 10 + (*q - '0');
    if (frac) {
        double scale = 0.1;
        for (q = frac; q < e; q++, scale /= 10)
            x += (*q - '0') * scale;
    }
    *v = x;
    return p;
}

/* Is the whole part of the count C..E above EVP_FLAME_MAX_COUNT?  Read
 * exactly: the double trailing_count made of it may have rounded. */
static int count_too_big(const char *c, const char *e)
{
    uint64_t x = 0;
    for (; c < e && *c != '.'; c++) {
        x = x * 10 + (uint64_t)(*c - '0'); /* x <= 2^53 before: no wrap */
        if (x > (uint64_t)EVP_FLAME_MAX_COUNT)
            return 1;
    }
    return 0;
}

int evp_flame_add_folded(struct evp_flame *f, const char *buf, size_t len,
                         struct evp_flame_stats *st)
{
    /* Room for as many nodes as the input could make (a frame takes at
     * least a few bytes), reserved once: the pages are only touched as
     * nodes are made, and the array is never copied while growing. */
    size_t want = f->n + len / 24 + 1024;
    if (want > f->cap && want < (size_t)NONE) {
        struct node *nn = realloc(f->nodes, want * sizeof *nn);
        if (nn) {
            f->nodes = nn;
            f->cap = want;
        }
    }
    size_t pos = 0;
    while (pos < len) {
        const char *l = buf + pos;
        const char *nl = memchr(l, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - l) : len - pos;
        pos += n + (nl ? 1 : 0);
        st->lines++;
        const char *e = l + n;
        while (e > l && is_blank(e[-1]))
            e--;
        if (e == l)
            continue; /* blank lines are not stacks */
        double v;
        const char *c = trailing_count(l, e, &v);
        if (!c || c == l || !is_blank(c[-1])) {
            if (!st->malformed)
                st->first_malformed = st->lines;
            st->malformed++;
            continue;
        }
        if (count_too_big(c, e)) {
            size_t k = (size_t)(e - c);
            if (k > sizeof st->bad_count - 1)
                k = sizeof st->bad_count - 1;
            memcpy(st->bad_count, c, k);
            st->bad_count[k] = 0;
            st->bad_line = st->lines;
            return -ERANGE;
        }
        const char *se = c;
        while (se > l && is_blank(se[-1]))
            se--;
        double v1;
        const char *c2 = trailing_count(l, se, &v1);
        if (c2 && c2 > l && is_blank(c2[-1])) {
            st->differential = 1;
            se = c2;
            while (se > l && is_blank(se[-1]))
                se--;
        }
        int rc = add_stack(f, l, (size_t)(se - l), v, 1);
        if (rc)
            return rc;
        st->stacks++;
    }
    /* The buffer is the caller's: keep a copy of the last stack. */
    return f->prev_len ? remember(f, f->prev, f->prev_len, 0) : 0;
}

static void finish(struct evp_flame *f)
{
    if (f->finished)
        return;
    /* value holds each node's own adds until the first finish; children
     * come after their parents in the array, so one backward pass sums
     * them up.  Stacks added after a finish need a fresh start. */
    if (f->summed)
        for (size_t i = 0; i < f->n; i++)
            f->nodes[i].value = f->nodes[i].self;
    f->summed = 1;
    for (size_t i = f->n; i-- > 1;)
        f->nodes[f->nodes[i].parent].value += f->nodes[i].value;
    if (f->bself) {
        memcpy(f->bvalue, f->bself, f->n * sizeof *f->bvalue);
        for (size_t i = f->n; i-- > 1;)
            f->bvalue[f->nodes[i].parent] += f->bvalue[i];
    }
    f->finished = 1;
}

int evp_flame_to_base(struct evp_flame *f, int on)
{
    f->to_base = on;
    return on ? base_cover(f, f->n) : 0;
}

int evp_flame_differential(const struct evp_flame *f)
{
    return f->bself != NULL;
}

double evp_flame_base_total(const struct evp_flame *f)
{
    return f->btotal;
}

void evp_flame_borrow(struct evp_flame *f)
{
    f->borrow = 1;
}

double evp_flame_total(const struct evp_flame *f)
{
    return f->total;
}

/* ---- drawing -------------------------------------------------------- */

struct draw {
    struct evp_flame *f;
    FILE *out;
    const struct evp_flame_opts *o;
    double total;
    double xscale; /* pixels per value unit */
    double minv;   /* smallest value drawn */
    int width, fh, height;
    double ypad1, ypad2;
    int maxdepth;
    uint64_t frames;
    /* differential: widths from BASE when NEG; colours by the change in
     * self value, full saturation at MAXD */
    int diff, neg;
    double maxd;
};

/* The value a frame is drawn with. */
static double width_of(const struct draw *d, uint32_t id)
{
    return d->neg ? d->f->bvalue[id] : d->f->nodes[id].value;
}

/* Children in name order (byte order, then length); NODES: the array. */
static int cmp_children(const void *a, const void *b, void *nodes)
{
    const struct node *x = (const struct node *)nodes + *(const uint32_t *)a;
    const struct node *y = (const struct node *)nodes + *(const uint32_t *)b;
    size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
    int c = memcmp(x->name, y->name, n);
    if (c)
        return c;
    return x->nlen < y->nlen ? -1 : x->nlen > y->nlen;
}

/* Visible characters of a name once escaped (invalid bytes and control
 * characters count four: "\xNN"). */
static size_t display_len(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        int k =
            c >= 0x80 ? evp_utf8_len((const unsigned char *)s + i, n - i) : 1;
        if (k == 0 || c < 0x20 || c == 0x7f) {
            w += 4;
            i++;
        } else {
            w += 1;
            i += (size_t)k;
        }
    }
    return w;
}

/* The label: the whole name when it fits, else a prefix and "..", else
 * nothing (fewer than 3 characters fit). */
static void put_label(FILE *out, const char *s, size_t n, double w)
{
    const double cw = 12 * 0.59;
    double fit = (w - 3) / cw;
    if (fit < 3)
        return;
    size_t chars = (size_t)fit;
    if (display_len(s, n) <= chars) {
        evp_esc_xml(out, s, n);
        return;
    }
    size_t keep = chars - 2, used = 0, i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        int k =
            c >= 0x80 ? evp_utf8_len((const unsigned char *)s + i, n - i) : 1;
        size_t cw1 = (k == 0 || c < 0x20 || c == 0x7f) ? 4 : 1;
        size_t step = k ? (size_t)k : 1;
        if (used + cw1 > keep)
            break;
        used += cw1;
        i += step;
    }
    evp_esc_xml(out, s, i);
    fputs("..", out);
}

static int has_suffix(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && memcmp(s + n - k, suf, k) == 0;
}

static int has_text(const char *s, size_t n, const char *t)
{
    size_t k = strlen(t);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, t, k) == 0)
            return 1;
    return 0;
}

/* A colour from the name alone (so the same function has the same colour
 * in every graph), in a palette chosen by what the frame is. */
static void colour(const char *s, size_t n, int *r, int *g, int *b)
{
    uint64_t h = hash_name(s, n, 0);
    double v1 = (double)(h & 0xffff) / 65535.0;
    double v2 = (double)((h >> 16) & 0xffff) / 65535.0;
    double v3 = (double)((h >> 32) & 0xffff) / 65535.0;
    if (n >= 3 && memcmp(s, "op:", 3) == 0) { /* opcode leaves: aqua */
        *r = 50 + (int)(60 * v3);
        *g = 165 + (int)(55 * v3);
        *b = 165 + (int)(55 * v3);
    } else if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
        /* phases, runtime, unresolved: grey-blue */
        *r = 170 + (int)(40 * v1);
        *g = 175 + (int)(40 * v1);
        *b = 205 + (int)(40 * v1);
    } else if (has_suffix(s, n, "_[k]")) { /* kernel: orange */
        *r = 200 + (int)(55 * v2);
        *g = 110 + (int)(50 * v2);
        *b = 20 + (int)(40 * v2);
    } else if ((n >= 4 && memcmp(s, "py::", 4) == 0) ||
               has_suffix(s, n, "_[j]") || has_text(s, n, ".py:")) {
        /* Python functions: green */
        *r = 50 + (int)(110 * v3);
        *g = 180 + (int)(60 * v3);
        *b = 50 + (int)(60 * v3);
    } else if (has_suffix(s, n, "_[i]")) { /* inlined: aqua-green */
        *r = 80 + (int)(60 * v1);
        *g = 200 + (int)(55 * v1);
        *b = 140 + (int)(55 * v1);
    } else { /* native code: the classic hot palette */
        *r = 205 + (int)(50 * v3);
        *g = (int)(230 * v1);
        *b = (int)(55 * v2);
    }
}

/* "12,345" for whole values, else two decimals. */
static void put_value(FILE *out, double v)
{
    if (v == floor(v) && v < 1.8e19) {
        char buf[32];
        fputs(evp_num_group(buf, sizeof buf, (uint64_t)v), out);
    } else {
        fprintf(out, "%.2f", v);
    }
}

/* Plain number for data attributes: exact for whole values. */
static void put_num(FILE *out, double v)
{
    if (v == floor(v) && v < 1.8e19)
        fprintf(out, "%" PRIu64, (uint64_t)v);
    else
        fprintf(out, "%.17g", v);
}

/* A signed value: "+12,345" / "-0.50". */
static void put_signed(FILE *out, double v)
{
    fputc(v < 0 ? '-' : '+', out);
    put_value(out, fabs(v));
}

/* A differential frame's colour: white when its own (self) value did not
 * change, towards full red as it grew and full blue as it shrank, the
 * largest change of any frame (MAXD) saturating. */
static void diff_colour(double delta, double maxd, int *r, int *g, int *b)
{
    if (delta == 0 || maxd <= 0) {
        *r = *g = *b = 250;
        return;
    }
    int c = (int)lround(220.0 * (1.0 - fabs(delta) / maxd));
    if (delta > 0) {
        *r = 255;
        *g = *b = c;
    } else {
        *r = *g = c;
        *b = 255;
    }
}

/* After the drawn value and share: both profiles' values, the change
 * (absolute, and relative to BASE) and the change in self value, which
 * the colour shows.  No " (" in it: the script finds the name by the
 * last one. */
static void diff_title(struct draw *d, uint32_t id)
{
    FILE *out = d->out;
    double b = d->f->bvalue[id], n = d->f->nodes[id].value;
    double ds = d->f->nodes[id].self - d->f->bself[id];
    const char *unit = d->o->countname;
    fputs("; base ", out);
    put_value(out, b);
    fputc(' ', out);
    evp_esc_xml(out, unit, strlen(unit));
    fputs(", new ", out);
    put_value(out, n);
    fputc(' ', out);
    evp_esc_xml(out, unit, strlen(unit));
    fputs(", change ", out);
    put_signed(out, n - b);
    fputc(' ', out);
    evp_esc_xml(out, unit, strlen(unit));
    if (b > 0)
        fprintf(out, ", %+.2f%%", 100.0 * (n - b) / b);
    else
        fputs(", new frame", out);
    fputs(", self ", out);
    put_signed(out, ds);
}

static void draw_frame(struct draw *d, uint32_t id, double start, int depth)
{
    const struct node *nd = &d->f->nodes[id];
    const char *name = nd->name;
    size_t nlen = nd->nlen;
    double v = width_of(d, id);
    double x = 10 + start * d->xscale;
    double w = v * d->xscale;
    double y = d->o->icicle ? d->ypad1 + depth * d->fh
                            : d->height - d->ypad2 - (depth + 1) * d->fh;
    int r, g, b;
    if (d->diff)
        diff_colour(d->f->nodes[id].self - d->f->bself[id], d->maxd, &r, &g,
                    &b);
    else
        colour(name, nlen, &r, &g, &b);
    FILE *out = d->out;
    fputs("<g data-s=\"", out);
    put_num(out, start);
    fputs("\" data-v=\"", out);
    put_num(out, v);
    fprintf(out, "\" data-d=\"%d\"><title>", depth);
    evp_esc_xml(out, name, nlen);
    fputs(" (", out);
    put_value(out, v);
    fputc(' ', out);
    evp_esc_xml(out, d->o->countname, strlen(d->o->countname));
    fprintf(out, ", %.2f%%", d->total > 0 ? 100.0 * v / d->total : 0.0);
    if (d->diff)
        diff_title(d, id);
    fputs(")</title>", out);
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
            "fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/>",
            x, y, w, d->fh - 1, r, g, b);
    fprintf(out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + d->fh - 5.5);
    put_label(out, name, nlen, w);
    fputs("</text></g>\n", out);
    d->frames++;
}

/* Depth-first over the frames wide enough to draw, children in name
 * order.  PASS 0 only measures the depth; pass 1 writes. */
static int walk(struct draw *d, int pass)
{
    struct evp_flame *f = d->f;
    struct item {
        uint32_t id;
        int depth;
        double start;
    };
    struct item *st = NULL;
    uint32_t *kids = NULL;
    double *starts = NULL;
    size_t cap = 0, kcap = 0, scap = 0, n = 0;
    int rc = -ENOMEM;
    if (evp_grow((void **)&st, &cap, 1, sizeof *st, 1024))
        goto out;
    st[n++] = (struct item){0, 0, 0};
    while (n) {
        struct item it = st[--n];
        const struct node *nd = &f->nodes[it.id];
        if (pass == 0) {
            if (it.depth > d->maxdepth)
                d->maxdepth = it.depth;
        } else {
            draw_frame(d, it.id, it.start, it.depth);
        }
        size_t nk = 0;
        for (uint32_t c = nd->first_child; c != NONE;
             c = f->nodes[c].next_sibling) {
            double cv = width_of(d, c);
            if (cv < d->minv || cv <= 0)
                continue;
            if (evp_grow((void **)&kids, &kcap, nk + 1, sizeof *kids, 64))
                goto out;
            kids[nk++] = c;
        }
        if (!nk)
            continue;
        qsort_r(kids, nk, sizeof *kids, cmp_children, f->nodes);
        if (evp_grow((void **)&st, &cap, n + nk, sizeof *st, 1024) ||
            evp_grow((void **)&starts, &scap, nk, sizeof *starts, 64))
            goto out;
        /* Children sit left to right in name order from the parent's
         * left edge (as in flamegraph.pl); the parent's self time is the
         * gap left on the right.  Pushed in reverse so that the first
         * child is drawn first. */
        double pos = it.start;
        for (size_t i = 0; i < nk; i++) {
            starts[i] = pos;
            pos += width_of(d, kids[i]);
        }
        for (size_t i = nk; i-- > 0;)
            st[n++] = (struct item){kids[i], it.depth + 1, starts[i]};
    }
    rc = 0;
out:
    free(st);
    free(kids);
    free(starts);
    return rc;
}

static const char script[] =
#include "flamegraph_js.h"
    ;

int evp_flame_write_svg(struct evp_flame *f, FILE *out,
                        const struct evp_flame_opts *o,
                        struct evp_flame_stats *st)
{
    int diff = f->bself != NULL;
    if (diff && base_cover(f, f->n))
        return -ENOMEM;
    finish(f);
    struct evp_flame_opts def = *o;
    if (!def.width)
        def.width = 1200;
    if (def.width < 200)
        def.width = 200;
    if (!def.frame_height)
        def.frame_height = 16;
    if (def.min_width < 0)
        def.min_width = 0.1;
    if (!def.countname)
        def.countname = "samples";
    if (!def.title)
        def.title = diff         ? "Differential Flame Graph"
                    : def.icicle ? "Icicle Graph"
                                 : "Flame Graph";
    struct draw d = {0};
    d.f = f;
    d.out = out;
    d.o = &def;
    d.diff = diff;
    d.neg = diff && def.negate;
    if (diff)
        for (size_t i = 0; i < f->n; i++) {
            double c = fabs(f->nodes[i].self - f->bself[i]);
            if (c > d.maxd)
                d.maxd = c;
        }
    d.total = width_of(&d, 0);
    d.width = def.width;
    d.fh = def.frame_height;
    d.xscale = d.total > 0 ? (def.width - 20) / d.total : 0;
    d.minv = d.xscale > 0 ? def.min_width / d.xscale : 0;
    d.ypad1 = 12 * 3 + (def.subtitle ? 12 * 2 : 0);
    d.ypad2 = 12 * 2 + 10;
    int rc = walk(&d, 0);
    if (rc)
        return rc;
    d.height = (int)(d.ypad1 + d.ypad2 + (d.maxdepth + 1) * d.fh);
    int W = d.width, H = d.height;

    fprintf(out,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
            "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
            "<svg version=\"1.1\" width=\"%d\" height=\"%d\" "
            "onload=\"init(evt)\" viewBox=\"0 0 %d %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\" "
            "xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n"
            "<!-- Flame graph drawn by evalprof: frame width is the share "
            "of the total, children are ordered by name. Click a frame to "
            "zoom, Ctrl-F or Search to highlight, Escape to reset. -->\n",
            W, H, W, H);
    if (diff)
        fprintf(out,
                "<!-- Differential: widths are the %s profile's; a frame "
                "is redder the more its own value grew from BASE to NEW "
                "and bluer the more it shrank, the largest change "
                "saturating. -->\n",
                d.neg ? "BASE" : "NEW");
    fputs("<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" "
          "x1=\"0\" x2=\"0\"><stop stop-color=\"#eeeeee\" offset=\"5%\"/>"
          "<stop stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient>"
          "</defs>\n",
          out);
    fputs("<style type=\"text/css\">\n"
          "text { font-family: Verdana, sans-serif; font-size: 12px; "
          "fill: rgb(0,0,0); }\n"
          "#title { text-anchor: middle; font-size: 17px; }\n"
          "#subtitle { text-anchor: middle; fill: rgb(160,160,160); }\n"
          "#frames > g { cursor: pointer; }\n"
          "#frames > g:hover > rect { stroke: black; stroke-width: 0.5; }\n"
          "#frames > g.m > rect { fill: rgb(230,0,230); }\n"
          "#frames > g.anc > rect { opacity: 0.5; }\n"
          "#frames > g.hide { display: none; }\n"
          ".button { cursor: pointer; }\n"
          ".button:hover { text-decoration: underline; }\n"
          ".hidden { display: none; }\n"
          "#search, #matched { text-anchor: end; }\n"
          "</style>\n",
          out);
    /* Configuration for the script: numbers, and two strings escaped for
     * a JavaScript string literal. */
    fprintf(out,
            "<script type=\"text/ecmascript\"><![CDATA[\n"
            "var evpConfig = {width: %d, xpad: 10, frameHeight: %d, "
            "fontSize: 12, fontWidth: 0.59, icicle: %s, %stotal: ",
            W, d.fh, def.icicle ? "true" : "false",
            diff ? "differential: true, " : "");
    put_num(out, d.total);
    fputs(", units: \"", out);
    evp_esc_js(out, def.countname, strlen(def.countname));
    fputs("\", title: \"", out);
    evp_esc_js(out, def.title, strlen(def.title));
    fputs("\"};\n", out);
    fputs(script, out);
    fputs("]]></script>\n", out);
    fprintf(out,
            "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
            "fill=\"url(#background)\"/>\n",
            W, H);
    fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\">", W / 2);
    evp_esc_xml(out, def.title, strlen(def.title));
    fputs("</text>\n", out);
    if (def.subtitle) {
        fprintf(out, "<text id=\"subtitle\" x=\"%d\" y=\"48\">", W / 2);
        evp_esc_xml(out, def.subtitle, strlen(def.subtitle));
        fputs("</text>\n", out);
    }
    fprintf(out, "<text id=\"details\" x=\"10\" y=\"%d\"> </text>\n", H - 17);
    fputs("<text id=\"unzoom\" class=\"button hidden\" x=\"10\" y=\"24\">"
          "Reset Zoom</text>\n",
          out);
    fprintf(out,
            "<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\">Search"
            "</text>\n",
            W - 10);
    fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n", W - 10,
            H - 17);
    fputs("<g id=\"frames\">\n", out);
    if (d.total > 0) {
        rc = walk(&d, 1);
        if (rc)
            return rc;
    }
    fputs("</g>\n</svg>\n", out);
    if (st) {
        st->frames = d.frames;
        st->nodes = f->n;
    }
    return ferror(out) ? -EIO : 0;
}

int evp_flame_map(const char *path, const char **buf, size_t *len, int *mapped)
{
    char *b;
    *mapped = 0;
    int rc = evp_flame_slurp(path, &b, len);
    *buf = rc ? NULL : b;
    return rc;
}

void evp_flame_unmap(const char *buf, size_t len, int mapped)
{
    if (mapped)
        munmap((void *)buf, len);
    else
        free((void *)buf);
}

int evp_flame_slurp(const char *path, char **buf, size_t *len)
{
    char err[160];
    return evp_file_load(path, 0, buf, len, err, sizeof err);
}
