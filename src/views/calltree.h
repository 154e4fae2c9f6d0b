/*
 * The call tree of a trace (calltree.c): one node per distinct call path,
 * holding what the records on that path add up to.  One builder serves
 * every view of stacks: the folded stacks (and so the flame graphs and the
 * report's), pprof, pstats and callgrind, fed by a trace's events or, for
 * a sampled trace, by its samples.
 *
 * Events: a node's value is the elapsed time (ns, compensated as asked)
 * of the events drawn on it.  Recorder time (buffer hand-offs) is an
 * "[evalprof]" leaf (EVP_KEY_RECORDER) under the frame it interrupted;
 * time outside any frame goes to a phase leaf under the stream's root
 * ("[init]", "[runtime other]", ...); with OPS and PHASES, time inside a
 * frame goes to leaves under it ("op:NAME", "[dispatch]"), with LINES to
 * a "file:line" leaf above the op's.  With FULL_INTERVALS (the profile
 * exports) the interval after an event whose successors were lost (a
 * gap) or that holds "# log written" time counts in full, as the replay
 * engine accounts a function's times (func_stats): so the value of the
 * nodes of a function is its self time in `summary --funcs`, and the
 * value below the outermost nodes of a function its inclusive time.
 *
 * Samples: a node's value is the timer periods of the samples whose
 * stack ends on it (SAMPLED is set; evp_sample_ns gives the estimated
 * time), each sample's stack from the stream's root, a stack that damage
 * cut under an EVP_KEY_UNKNOWN node, a sample with no Python frame on a
 * "[runtime other]" leaf at the root; with PHASES its phase (or its
 * state, EVP_KEY_SCAT) as a leaf, with LINES its line, with OPS its
 * opcode.
 *
 * Node 0 is the root; each stream has a root node under it (EVP_KEY_STREAM
 * | stream index), always with STREAM_ROOTS, else only when the tree holds
 * several streams.  With MAX_DEPTH the frames below the cap are one
 * EVP_KEY_DEEP node under the frame at the cap (evp_ctree_deep: the most
 * frames it stood for).  A node's parent is always made before it: ids
 * grow along every path.  The builder keeps no stack: the replay's depth
 * moves it along the tree's parent links.
 */
#ifndef EVP_VIEWS_CALLTREE_H
#define EVP_VIEWS_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/replay.h"
#include "evalprof/trace.h"
#include "itab.h"
#include "views.h"

struct evp_ctree_node {
    uint32_t parent; /* UINT32_MAX for the root */
    uint32_t key;    /* a function id, or a leaf tagged as in views.h */
    uint64_t value;  /* ns of the events on this node, or timer periods */
};

/* What the profile exports count beside the values (opts COUNTS). */
struct evp_ctree_count {
    uint64_t calls;  /* pushes (enter, resume, c call) onto it */
    uint64_t events; /* events (or samples) drawn on it */
    uint64_t ops;    /* of which op events */
    uint32_t c_call; /* made by a c call (a C function) */
};

/* A "[N deeper frames]" node and the most frames it stood for. */
struct evp_ctree_deep {
    uint32_t node, frames;
};

/* A "file:line" leaf's key (EVP_KEY_LINE | index into evp_ctree.line). */
struct evp_ctree_line {
    uint32_t func, line;
};

struct evp_ctree {
    struct evp_ctree_node *node;
    size_t n;
    struct evp_ctree_count *count; /* by node, with opts COUNTS; else NULL */
    int sampled;                   /* values are timer periods */
    /* children of node i: kid[kid_start[i] .. kid_start[i + 1]),
     * after evp_ctree_index */
    uint32_t *kid_start, *kid;
    struct evp_ctree_deep *deep; /* in node order */
    size_t ndeep;
    size_t deepest; /* most frames on a stack that was cut */
    struct evp_ctree_line *line;
    size_t nline;
};

struct evp_ctree_opts {
    int ops, phases, lines, compensate;
    long stream;      /* only this stream (by index), -1: all */
    size_t max_depth; /* 0: every frame */
    int stream_roots; /* a root node per stream however many there are */
    int full_intervals;
    int counts; /* fill evp_ctree.count */
    /* When not NULL: the replay engine's per-function figures, as
     * evp_replay_opts.func_stats (evp_trace_nfuncs()+1 entries, zeroed) */
    struct evp_func_stats *func_stats;
    /* a failure's reason ("VIEW: out of memory", VIEW NULL: "call
     * tree"); NULL: none */
    struct evp_diag *diag;
    const char *view;
};

/* Replay T into CT (zeroed here): its events, or a sampled trace's
 * samples.  Returns 0 or a negative errno (-ENOMEM, or the replay's),
 * its reason in O->diag; CT is freed on failure. */
int evp_ctree_build(struct evp_trace *t, const struct evp_ctree_opts *o,
                    struct evp_ctree *ct);

/* The note on CT's stacks cut at MAX_DEPTH, into D: their time is in a
 * "[N deeper frames]" WHAT ("leaf", "frame"). */
void evp_ctree_note_cut(const struct evp_ctree *ct, size_t max_depth,
                        const char *what, struct evp_diag *d);

/* The frames deep node NODE stood for (0: not a deep node). */
uint32_t evp_ctree_deep(const struct evp_ctree *ct, uint32_t node);

/* Index the children of every node (0 or -ENOMEM). */
int evp_ctree_index(struct evp_ctree *ct);

/* Inclusive value (OPS: op events) of every node, its own and its
 * descendants': a malloc'ed array of CT->n, NULL when out of memory. */
uint64_t *evp_ctree_inclusive(const struct evp_ctree *ct, int ops);

/* Visit the nodes below the root depth first (evp_ctree_index first): FN(CTX,
 * NODE, 1) on the way down, FN(CTX, NODE, 0) on the way back up.  A
 * non-zero return stops the walk and is returned. */
int evp_ctree_walk(const struct evp_ctree *ct,
                   int (*fn)(void *ctx, uint32_t node, int down), void *ctx);

void evp_ctree_free(struct evp_ctree *ct);

/* The stream's index of the stream root above NODE (-1: none). */
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
