/*
 * evalprof views: each turns a trace (through the replay engine) into one
 * kind of output.  The command-line subcommands are thin wrappers around
 * these functions, so tests and other tools can call them directly.
 *
 * Every view returns 0, or a negative errno-style value after printing a
 * one-line error; output goes to OUT.
 */
#ifndef EVP_VIEWS_H
#define EVP_VIEWS_H

#include <stdio.h>

#include "evalprof/replay.h"
#include "evalprof/trace.h"

/* ---- tree ---------------------------------------------------------- */
enum evp_tree_format {
    EVP_TREE_SIMPLE_INDENT, /* the discussion's default listing */
    EVP_TREE_SIMPLE,        /* same columns, no indentation */
    EVP_TREE_RAW,           /* one line per event, every field */
};

struct evp_tree_opts {
    enum evp_tree_format format;
    int compensate;
    long stream; /* -1: all */
};

int evp_view_tree(struct evp_trace *t, FILE *out,
                  const struct evp_tree_opts *o);

/* ---- summary ------------------------------------------------------- */
enum evp_sort { EVP_SORT_COUNT, EVP_SORT_NAME, EVP_SORT_ELAPSED, EVP_SORT_TOTAL };

struct evp_summary_opts {
    enum evp_sort sort;
    int funcs;             /* add the per-function table */
    int group_specialized; /* fold specialized opcodes into their base */
    int compensate;
    long stream;
};

int evp_view_summary(struct evp_trace *t, FILE *out,
                     const struct evp_summary_opts *o);

/* ---- info ---------------------------------------------------------- */
int evp_view_info(struct evp_trace *t, FILE *out);

/* ---- report header (header.c) ---------------------------------------- */

/* The python/argv/start/end/elapsed block; PREFIX "# " and WIDTH 18 for
 * the tree, "" and 11 for the summary. */
void evp_view_header(FILE *out, const struct evp_trace *t, const char *prefix,
                     int width, int compensate);
/* One line describing the producer ("" for text traces). */
const char *evp_view_producer_note(const struct evp_trace *t, char *buf,
                                   size_t len);

/* ---- shared formatting helpers (format.c) ------------------------- */

/* "1,234,567" */
char *evp_fmt_count(char *buf, size_t len, uint64_t v);
/* ns as "1,782.7" (µs with one decimal, thousands separated) */
char *evp_fmt_us(char *buf, size_t len, uint64_t ns);
/* a mean in µs, as evp_fmt_us */
char *evp_fmt_us_double(char *buf, size_t len, double us);
/* epoch ns as "2021-03-31 20:27:25.663947 UTC" */
char *evp_fmt_wall(char *buf, size_t len, int64_t epoch_ns);

#endif
