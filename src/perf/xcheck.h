/*
 * The cross-check's data (crosscheck.c): the trace reduced to shares and a
 * per-thread timeline of categories, and the perf samples counted against
 * it.  Kept apart from perf.h because it needs the trace reader.
 */
#ifndef EVP_XCHECK_H
#define EVP_XCHECK_H

#include <stdint.h>
#include <stdio.h>

#include "evalprof/trace.h"
#include "perf.h"

/* One stream's category changes: from ts[i] on, the thread is in cat[i]. */
struct evp_xc_timeline {
    uint64_t tid;
    uint64_t *ts;
    uint8_t *cat;
    size_t n, cap;
};

struct evp_xc_trace {
    uint64_t ns[EVP_XC__COUNT]; /* time per category */
    uint64_t total;
    uint64_t start_ns, end_ns; /* window (CLOCK_MONOTONIC ns) */
    uint64_t first_ns, last_ns;
    long pid; /* -1 when unknown */
    const char *producer;
    struct evp_xc_timeline *tl;
    size_t ntl;
    int sampled; /* from a sampled trace's samples */
    /* A sampled trace's leaf: time whose sample was taken in the eval
     * function's own code (EVP_SAMPLE_IN_EVAL), of leaf_total; leaf_known
     * when the producer could tell (it found the function's code). */
    uint64_t leaf_ns, leaf_total;
    uint64_t leaf_nopc; /* samples with no program counter (EVP_SAMPLE_NO_PC) */
    int leaf_known;
};

struct evp_xc_perf {
    uint64_t n[EVP_XC__COUNT];
    uint64_t total;                /* samples counted */
    uint64_t before, after, other; /* left out */
    uint64_t other_threads;        /* of threads the trace has not */
    uint64_t unrooted; /* no eval frame, and not unwound to a thread root */
    uint64_t leaf_eval, leaf_n; /* user leaf in the eval function's code */
    uint64_t sampler;           /* in evalprof's sampling signal handler */
    uint64_t sampler_noleaf;    /* ... in its return, nothing unwound */
    uint64_t located;           /* samples found in a timeline */
    uint64_t match[EVP_XC__COUNT][EVP_XC__COUNT]; /* [perf][trace] */
};

/* Replay T into X.  Returns 0 or a negative errno. */
int evp_xc_from_trace(struct evp_trace *t, struct evp_xc_trace *x);
void evp_xc_trace_free(struct evp_xc_trace *x);

/* Count one perf sample (P zero-initialised by the caller). */
void evp_xc_add(struct evp_xc_perf *p, const struct evp_xc_trace *x,
                const struct evp_perf_sample *s);

/* Print the side-by-side table; returns the number of flagged shares. */
int evp_xc_print(FILE *out, const struct evp_xc_trace *x,
                 const struct evp_xc_perf *p, double threshold,
                 const char *trace_path);

#endif
