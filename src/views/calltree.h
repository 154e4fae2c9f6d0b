/*
 * The call tree of a trace (calltree.c), shared by the profile exports
 * (pprof, pstats, callgrind): one node per distinct call path, holding
 * what the events on that path added up to.
 *
 * Built by one replay, with the summary's compensation: a node's time is
 * the compensated elapsed time of the events drawn on it, accounted as
 * the replay engine accounts a function's inclusive and self time
 * (func_stats): recorder time (buffer hand-offs) is an "[evalprof]" leaf
 * (EVP_KEY_RECORDER) under the frame it interrupted, and the interval
 * after an event whose successors were lost (a gap) or that holds
 * "# log written" time counts in full.  So the time of the nodes of a
 * function is its self time in `summary --funcs`, and the time below the
 * outermost nodes of a function its inclusive time.
 *
 * Node 0 is the root; each stream has a root node under it (EVP_CTREE_STREAM);
 * time outside any frame goes to a phase leaf under the stream's root
 * ("[init]", "[runtime other]", ...).  With OPS and PHASES, time inside a
 * frame goes to leaves under it as in folded stacks; with MAX_DEPTH the
 * frames below the cap are one EVP_CTREE_DEEP node.  A node's parent is always
 * made before it: ids grow along every path.
 */
#ifndef EVP_VIEWS_CALLTREE_H
#define EVP_VIEWS_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/replay.h"
#include "evalprof/trace.h"
#include "itab.h"

/* Node keys: a function id, a leaf tagged as in views.h (EVP_KEY_PHASE,
 * EVP_KEY_OP), or one of these. */
#define EVP_CTREE_STREAM 0x30000000u /* | stream index */
#define EVP_CTREE_DEEP 0x40000000u   /* frames below the depth cap */

struct evp_ctree_node {
    uint32_t parent; /* UINT32_MAX for the root */
    uint32_t key;
    uint64_t ns;     /* compensated time of the events on this node */
    uint64_t calls;  /* pushes (enter, resume, c call) onto it */
    uint64_t events; /* events drawn on it */
    uint64_t ops;    /* of which op events */
    uint32_t deep;   /* EVP_CTREE_DEEP: the most frames it stood for */
    uint32_t c_call; /* made by a c call (a C function) */
};

struct evp_ctree {
    struct evp_ctree_node *node;
    size_t n;
    /* children of node i: kid[kid_start[i] .. kid_start[i + 1]),
     * after evp_ctree_index */
    uint32_t *kid_start, *kid;
    size_t cut; /* places where stacks were cut at max_depth */
    size_t deepest;
};

struct evp_ctree_opts {
    int ops, phases, compensate;
    size_t max_depth; /* 0: every frame */
    /* When not NULL: the replay engine's per-function figures, as
     * evp_replay_opts.func_stats (evp_trace_nfuncs()+1 entries, zeroed) */
    struct evp_func_stats *func_stats;
};

/* Replay T into CT (zeroed here).  Returns 0 or a negative errno after
 * printing one line; CT is freed on failure. */
int evp_ctree_build(struct evp_trace *t, const struct evp_ctree_opts *o,
                    struct evp_ctree *ct);

/* Index the children of every node (0 or -ENOMEM). */
int evp_ctree_index(struct evp_ctree *ct);

/* Inclusive time (OPS: op events) of every node, its own and its
 * descendants': a malloc'ed array of CT->n, NULL when out of memory. */
uint64_t *evp_ctree_inclusive(const struct evp_ctree *ct, int ops);

/* Visit the nodes below the root depth first (evp_ctree_index first): FN(CTX,
 * NODE, 1) on the way down, FN(CTX, NODE, 0) on the way back up.  A
 * non-zero return stops the walk and is returned. */
int evp_ctree_walk(const struct evp_ctree *ct,
                   int (*fn)(void *ctx, uint32_t node, int down), void *ctx);

void evp_ctree_free(struct evp_ctree *ct);

/* The stream's index of the stream root above NODE (-1 for the root). */
long evp_ctree_stream_of(const struct evp_ctree *ct, uint32_t node);

/* The calls from one function to another, as the pstats and callgrind
 * views sum them over the walk (CALLER and CALLEE are the view's ids). */
struct evp_ctree_pair {
    uint32_t caller, callee;
    uint64_t calls, prim_calls; /* primitive: by the view's rule */
    uint64_t self_ns;           /* the callee's self time in them */
    uint64_t ns, ops;           /* their inclusive time, op events */
    uint32_t active;            /* open on the walk's path */
};

struct evp_ctree_pairs {
    struct evp_itab index;
    struct evp_ctree_pair *p;
    size_t n, cap;
};

/* clang-format off */
#define EVP_CTREE_PAIRS_INIT {EVP_ITAB_INIT, NULL, 0, 0}
/* clang-format on */

/* The pair (CALLER, CALLEE), made zeroed on first use; NULL when out of
 * memory.  Valid until the next call. */
struct evp_ctree_pair *evp_ctree_pair(struct evp_ctree_pairs *ps,
                                      uint32_t caller, uint32_t callee);
void evp_ctree_pairs_free(struct evp_ctree_pairs *ps);

/* S (N bytes) as the exports write names: escaped as for a terminal
 * (esc.h: control characters and bytes that are not UTF-8 as "\xNN", so
 * that every string is UTF-8 and on one line); malloc'ed, *LEN its
 * length; NULL when out of memory. */
char *evp_ctree_name(const char *s, size_t n, size_t *len);

#endif
