/*
 * Aggregate figures of a trace (stats.c): counts and elapsed totals per
 * event kind and per opcode, per-function times, functions entered.
 * Computed by one replay; printed by the summary and diff views.
 */
#ifndef EVP_VIEWS_STATS_H
#define EVP_VIEWS_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/replay.h"
#include "evalprof/trace.h"

#define EVP_STATS_KEYS 65536 /* kinds and opcodes are 16-bit */

/* The directories a producer recorded as its roots (FORMAT.md's root.*
 * metadata: stdlib, site-packages, the script's directory), each with the
 * label that stands for it in a key; DIR points into the trace's
 * metadata, without a trailing '/'. */
struct evp_stats_roots {
    struct {
        const char *dir, *label;
        size_t len;
    } root[8];
    size_t n;
};

struct evp_stats {
    /* indexed by kind / opcode; one allocation behind kind_count */
    uint64_t *kind_count, *kind_total, *kind_first;
    uint64_t *op_count, *op_total, *op_first;
    uint64_t kind_seq, op_seq;    /* next first-appearance number */
    uint8_t *entered;             /* per function id: entered at least once */
    struct evp_func_stats *funcs; /* per function id, when asked for */
    uint32_t nfuncs;
    struct evp_replay_stats replay;
    struct evp_stats_roots roots; /* the trace's, for the keys */
};

/* Replay T into A (zeroed here).  FUNCS: also per-function times.
 * Returns 0 or a negative errno; A is freed on failure. */
int evp_stats_compute(struct evp_trace *t, struct evp_stats *a, int compensate,
                      long stream, int funcs);

void evp_stats_free(struct evp_stats *a);

/* Number of distinct function names entered. */
uint64_t evp_stats_names_called(const struct evp_trace *t,
                                const struct evp_stats *a);

/* Functions of two runs matched by name and module-relative file
 * (evp_stats_func_rel_key): one row per key called in either, with the
 * calls and inclusive time in each (ids and interpreter paths differ
 * between runs).  NAME is shown: NEW's absolute name and file where NEW
 * has the function, BASE's otherwise.  FIRST orders rows that tie: BASE's
 * ids, then NEW's.  *ROWS is malloc'ed.  Returns 0 or -ENOMEM. */
struct evp_func_match {
    char *name; /* as shown (evp_view_func_key) */
    char *key;  /* matched on (evp_stats_func_rel_key) */
    uint64_t calls[2], incl[2];
    uint64_t first;
};

/* T's recorded roots into R (none for a trace that has no root.* keys). */
void evp_stats_roots_load(const struct evp_trace *t, struct evp_stats_roots *r);

/* The key two runs' functions are matched on, with no line (it moves
 * between versions): the file relative to the longest of T's recorded
 * ROOTS it is under, "<stdlib>/json/encoder.py:_iterencode_list",
 * "<site-packages>/pkg/mod.py:f", "<script>/lib/util.py:g"; under none,
 * the path's shape decides (a file under an interpreter's lib/pythonX.Y
 * or a site-packages directory, for traces without roots); the file as
 * recorded otherwise. */
void evp_stats_func_rel_key(const struct evp_trace *t,
                            const struct evp_stats_roots *roots, uint32_t id,
                            char *buf, size_t len);

int evp_stats_match_funcs(struct evp_trace *t[2], const struct evp_stats s[2],
                          struct evp_func_match **rows, size_t *nrows);
/* Free the N rows evp_stats_match_funcs gave, their strings with them. */
void evp_stats_match_funcs_free(struct evp_func_match *rows, size_t n);

/* The opcodes of two runs matched by name: numbers change between
 * interpreter versions (LOAD_ATTR is 106 in 3.12, 82 in 3.13), names do
 * not.  An opcode its trace cannot name is matched as "<N>".  COUNT and
 * TOTAL are run i's figures (0 when run i has none of it); FIRST orders
 * rows that tie: BASE's opcodes, then NEW's.  *ROWS is malloc'ed.
 * Returns 0 or -ENOMEM. */
struct evp_op_match {
    char name[64];
    uint64_t count[2], total[2];
    uint64_t first;
};

int evp_stats_match_ops(struct evp_trace *t[2], const struct evp_stats s[2],
                        struct evp_op_match **rows, size_t *nrows);

#endif
