/*
 * Aggregate figures of a trace (stats.c): of a trace of events, counts
 * and elapsed totals per event kind and per opcode, per-function times,
 * functions entered; of a sampled trace, the timer periods per state,
 * phase, opcode and function.  Each computed by one replay; printed by
 * the summary, diff and report views.  Rows of several runs matched by
 * name, and the median and range of a figure across runs.  Then the
 * statistics of samples the sampled tables share (sampled.c), and the
 * sampled summary the summary of runs prints too (summary.c).
 */
#ifndef EVP_VIEWS_STATS_H
#define EVP_VIEWS_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "evalprof/replay.h"
#include "evalprof/trace.h"
#include "views.h"

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
 * TOTAL are run i's figures (0 when run i has none of it); FAMILY (1:
 * renames, 2: specialized forms folded into their base as well,
 * evp_view_op_family) names the opcodes as across versions; FIRST orders
 * rows that tie: BASE's opcodes, then NEW's.  *ROWS is malloc'ed.
 * Returns 0 or -ENOMEM. */
struct evp_op_match {
    char name[64];
    uint64_t count[2], total[2];
    uint64_t first;
};

int evp_stats_match_ops(struct evp_trace *t[2], const struct evp_stats s[2],
                        int family, struct evp_op_match **rows, size_t *nrows);

/* The median (the lower middle's and upper middle's mean, rounded down,
 * of an even number), minimum and maximum of the N values V (N > 0);
 * SCRATCH has N slots. */
void evp_runs_reduce(const uint64_t *v, size_t n, uint64_t *scratch,
                     uint64_t *med, uint64_t *min, uint64_t *max);

/* ---- a sampled trace's figures ---------------------------------------- */

/* What the samples of one trace add up to, in timer periods: by state
 * (enum evp_sample_cat), phase (kind + 1; [0] none), opcode ([MASK]:
 * none; folded into the base instruction with GROUP) and function (SELF:
 * the leaf frame, INCL: anywhere on the stack, once a stack; index
 * UNKNOWN, past the last function id, is "<unknown stack>"; samples in
 * JIT code name no opcode: OP_JIT). */
struct evp_sample_stats {
    struct evp_trace *t;
    int group;  /* specialized opcodes folded into their base */
    int family; /* opcodes named as across versions (evp_view_op_family) */
    uint32_t nfuncs, unknown; /* UNKNOWN: the "<unknown stack>" row */
    uint64_t *self, *incl;    /* by function id, UNKNOWN last */
    uint32_t *seen;           /* by function id: the last sample counted */
    uint32_t stamp;
    uint64_t op[EVP_SAMPLE_OP_MASK + 1]; /* by opcode; [MASK]: none */
    uint64_t op_jit; /* in JIT code: the instruction pointer may lag */
    uint64_t cat[EVP_SCAT__COUNT];
    uint64_t phase[33]; /* by kind + 1; [0]: none */
    uint64_t total, samples;
    uint64_t nopc; /* the weight of the samples with no program counter */
    double w2;     /* the weights squared, summed (evp_sample_trials) */
};

/* Replay T's samples (stream index STREAM, -1 all) into A.  0 or a
 * negative errno; A is freed on failure. */
int evp_stats_samples(struct evp_trace *t, struct evp_sample_stats *a,
                      long stream, int group);
void evp_stats_samples_free(struct evp_sample_stats *a);

/* ---- rows of several runs, matched by key ----------------------------- */

/* A function or opcode of one run or several, matched by KEY, with its
 * weights in each run: self (or the opcode's) and inclusive.  A summary
 * of one trace keys functions by id, so that none merge; several runs
 * (and diff) match them as summary of exact runs and diff --funcs do. */
struct evp_match_row {
    char *key;
    char name[288];
    int cols;
    uint64_t *w;    /* run i: self w[2 * i], inclusive w[2 * i + 1] */
    uint64_t order; /* the first run's index << 32 | its function id */
    uint32_t line;  /* summary --lines: the row's line */
};

struct evp_match {
    struct evp_match_row *r;
    size_t n, cap, runs;
};

/* A new row keyed KEY, its weights zero; NULL when out of memory. */
struct evp_match_row *evp_match_add(struct evp_match *k, const char *key);
/* Merge rows of equal keys: weights summed, the first row's name and
 * order kept; sorted by key. */
void evp_match_merge(struct evp_match *k);
void evp_match_free(struct evp_match *k);
/* The sampled opcodes of K->runs runs (A[i] of T[i]), matched by name
 * (numbers change between versions).  0 or -ENOMEM. */
int evp_match_sample_ops(struct evp_match *k, struct evp_trace *const *t,
                         const struct evp_sample_stats *a);
/* The functions seen on the stacks of K->runs runs: of one, by id; of
 * several, by name and file relative to each run's recorded roots, no
 * line (evp_stats_func_rel_key, as diff --funcs matches them); names cut
 * to 70 columns unless WIDE.  0 or -ENOMEM. */
int evp_match_sample_funcs(struct evp_match *k, struct evp_trace *const *t,
                           const struct evp_sample_stats *a, int wide);

/* The rows of summary's where table of K->runs runs, in its order: each
 * state of a sampled thread (enum evp_sample_cat), the JIT's rows where a
 * producer could tell JIT code, the "no program counter" row where a
 * sample had none, and one "no GIL" row for every sample without the GIL
 * unless every run told the blocked ones apart.  0 or -ENOMEM. */
int evp_match_sample_where(struct evp_match *k, struct evp_trace *const *t,
                           const struct evp_sample_stats *a);

/* ---- statistics of samples (sampled.c) -------------------------------- */

/* A row's periods summed over the runs, and the estimated time, one
 * run's or the median and range of the runs' (evp_sample_est). */
struct evp_sample_est {
    uint64_t w, est, min, max;
};

/* *E from the weights W[0], W[STRIDE], ... of the RUNS runs T; SCRATCH
 * has 2 * RUNS slots. */
void evp_sample_est(struct evp_sample_est *e, struct evp_trace *const *t,
                    size_t runs, const uint64_t *w, size_t stride,
                    uint64_t *scratch);
/* "[650.0 - 750.0]": the range of E's estimates in unit U; its length. */
size_t evp_sample_range_cell(char *buf, size_t len,
                             const struct evp_sample_est *e, int u);
/* "CPU time", "wall clock", ...: what IN's timer counted. */
const char *evp_sample_clock_name(const struct evp_trace_info *in);
/* Whether the RUNS runs T were sampled at one period of one clock. */
int evp_sample_one_rate(struct evp_trace *const *t, size_t runs);
/* ", over the samples' effective count, N: ..." when TOTAL periods count
 * as fewer TRIALS (evp_sample_trials), else "" (BUF or a constant). */
const char *evp_sample_trials_words(char *buf, size_t len, uint64_t total,
                                    double trials);
/* Whether TOTAL periods whose samples count as TRIALS are sparse: the
 * count under half the periods (summary's sparse: line, diff's mark). */
int evp_sample_sparse(uint64_t total, double trials);
/* Of several runs, the estimate: line (the shares pooled over the runs'
 * TOTAL periods, WHAT, of SAMPLES samples when known; the intervals over
 * TRIALS) and a note: when the runs were sampled at different rates or
 * clocks. */
void evp_sample_pooled_lines(FILE *out, struct evp_trace *const *t, size_t runs,
                             uint64_t total, double trials, const char *what,
                             uint64_t samples);

/* ---- the sampled summary (summary.c) ---------------------------------- */

/* `summary` of the RUNS sampled traces T (one, or several runs pooled),
 * o->lines aside.  0 or a negative errno. */
/* Its head's lines on the samples (sampled:, est. time:, missed:,
 * estimate: and the notes on what the figures cover) of the RUNS traces
 * T, their figures A; TOTAL periods and SAMPLES samples summed over the
 * runs, counting as TRIALS (evp_sample_trials); SCRATCH has 3 * RUNS
 * slots; durations in UNIT. */
void evp_summary_sampled_header(FILE *out, struct evp_trace *const *t,
                                const struct evp_sample_stats *a, size_t runs,
                                uint64_t total, double trials, uint64_t samples,
                                uint64_t *scratch, int unit);
int evp_summary_sampled(struct evp_trace *const *t, size_t runs, FILE *out,
                        const struct evp_summary_opts *o);

#endif
