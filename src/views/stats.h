/*
 * Aggregate figures of a trace (stats.c): counts and elapsed totals per
 * event kind and per opcode, per-function times, functions entered.
 * Computed by one replay; printed by the summary and diff views.
 */
#ifndef EVP_VIEWS_STATS_H
#define EVP_VIEWS_STATS_H

#include <stdint.h>

#include "evalprof/replay.h"
#include "evalprof/trace.h"

#define EVP_STATS_KEYS 65536 /* kinds and opcodes are 16-bit */

struct evp_stats {
    /* indexed by kind / opcode; one allocation behind kind_count */
    uint64_t *kind_count, *kind_total, *kind_first;
    uint64_t *op_count, *op_total, *op_first;
    uint64_t kind_seq, op_seq;    /* next first-appearance number */
    uint8_t *entered;             /* per function id: entered at least once */
    struct evp_func_stats *funcs; /* per function id, when asked for */
    uint32_t nfuncs;
    struct evp_replay_stats replay;
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
    char name[1100];
    char key[1100];
    uint64_t calls[2], incl[2];
    uint64_t first;
};

/* The key two runs' functions are matched on: "<stdlib>/json/encoder.py:
 * _iterencode_list" for a file under an interpreter's lib/pythonX.Y,
 * "<site-packages>/pkg/mod.py:f" under a site-packages directory, the
 * file as recorded otherwise; no line, which moves between versions. */
void evp_stats_func_rel_key(const struct evp_trace *t, uint32_t id, char *buf,
                            size_t len);

int evp_stats_match_funcs(struct evp_trace *t[2], const struct evp_stats s[2],
                          struct evp_func_match **rows, size_t *nrows);

#endif
