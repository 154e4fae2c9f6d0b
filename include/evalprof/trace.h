/*
 * evalprof trace reader: one in-memory model for both trace formats.
 *
 * evp_trace_open() reads a binary `.evp` file (mapped, chunks indexed and
 * checked, events left encoded until replay) or a text trace in the
 * discussion's format (parsed line by line, its events encoded as a
 * binary trace's are).  Damage never stops a read
 * that can go on: each problem becomes a warning naming the byte offset or
 * line, and the trace holds everything before (and, for binary files,
 * after) it.  Only a file with nothing readable fails to open.
 *
 * Views do not decode events themselves: they ask the replay engine
 * (replay.h) to walk the trace.
 */
#ifndef EVALPROF_TRACE_H
#define EVALPROF_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "evalprof/events.h"
#include "evalprof/format.h"

struct evp_trace;

/* A function of the trace's function table; ids start at 1. */
struct evp_func {
    const char *name; /* qualified name; never NULL */
    const char *file; /* "" when unknown */
    uint32_t line;    /* first line, 0 when unknown */
};

/* One thread's event stream. */
struct evp_stream {
    uint32_t id;      /* stream number in the trace */
    uint64_t tid;     /* OS thread id, 0 when unknown */
    const char *name; /* "thread <tid>", "main", ... */
    uint64_t events;  /* events in the readable chunks */
    uint64_t dropped; /* events the recorder reported lost */
    uint32_t chunks;  /* readable chunks (segments) */
    /* a sampled trace's (docs/FORMAT.md "Samples"): */
    uint64_t samples;       /* samples in the readable SAMPLES chunks */
    uint64_t sample_weight; /* their weights' sum (timer periods) */
    uint64_t samples_lost;  /* samples the recorder reported lost */
    uint32_t sample_chunks; /* readable SAMPLES chunks */
};

/* Metadata every view may print; strings are "" when unknown. */
struct evp_trace_info {
    const char *path;
    int text;               /* read from a text trace */
    const char *producer;   /* EVP_PRODUCER_* */
    const char *executable; /* "python:" line of the reports */
    const char *argv;
    const char *python_version; /* "3.13.5", "" when unknown */
    long pid;                   /* -1 when unknown */
    long parent_pid;            /* a forked child's own trace's, else -1 */
    int64_t start_wall_ns;      /* epoch ns, -1 when unknown */
    uint64_t start_ns;          /* trace clock (CLOCK_MONOTONIC) ns */
    uint64_t end_ns;            /* 0 when unknown (no end record) */
    int has_end;                /* an END chunk / "# end clock:" was read */
    const char *clock;          /* "tsc", "monotonic", "text" */
    double clock_hz;            /* ticks per second */
    double event_cost_ns;       /* measured per-event cost, 0 if unknown */
    /* what one event of each kind costs the traced program in all, where
     * the producer measured it (its own work around the recorder's:
     * mode B's callbacks); 0: event_cost_ns */
    double kind_cost_ns[EVP_EV__COUNT];
    int has_kind_cost;         /* some kind_cost_ns is set */
    uint64_t can_emit;         /* kinds this producer can emit */
    int has_oparg;             /* op events carry an oparg */
    uint64_t dropped;          /* events lost, per the recorder */
    uint64_t events;           /* events readable */
    const char *opcode_source; /* "trace", "builtin 3.10", ... */
    /* sampled traces (docs/FORMAT.md "Samples"); zero when not sampled */
    int sampled;              /* the trace holds samples */
    const char *sample_clock; /* "cpu", "wall", "" when unknown */
    int sample_blocked;       /* sample.blocked: blocked samples told apart */
    double sample_rate_hz;    /* sample.rate_hz, 0 when unknown */
    double sample_period_ns;  /* sample.period_ns (else 1e9 / rate), 0 */
    uint64_t samples;         /* samples readable, all streams */
    uint64_t sample_weight;   /* their weights' sum */
    uint64_t samples_lost;    /* lost in full rings, per the chunks */
    uint64_t sample_missed;   /* sample.missed: periods not delivered */
    uint32_t stack_nodes;     /* nodes the stack table defines */
};

/* Options for evp_trace_open; zero-initialise for defaults. */
struct evp_open_opts {
    /* Python version whose opcode names label a text trace without
     * "# opcode:" lines ("3.10" when NULL). */
    const char *python;
    /* Called for each warning (the library prints nothing: NULL keeps
     * them for evp_trace_warning only).  MSG has no trailing newline. */
    void (*warn)(void *ctx, const char *path, const char *msg);
    void *warn_ctx;
    /* Force a format instead of sniffing: 0 auto, 1 binary, 2 text. */
    int format;
};

/*
 * Open PATH ("-" is standard input; pipes are read as streams, devices
 * refused, docs/FORMAT.md "Reading").  On success returns 0 and
 * *out; on failure returns a negative errno-style code and writes a
 * one-line reason to ERR (ERRLEN bytes), e.g. "not an evalprof trace (bad
 * magic at byte 0)" or "no readable chunk".
 */
int evp_trace_open(const char *path, const struct evp_open_opts *opts,
                   struct evp_trace **out, char *err, size_t errlen);

void evp_trace_close(struct evp_trace *t);

const struct evp_trace_info *evp_trace_info(const struct evp_trace *t);

/* Metadata value for KEY (as recorded), or NULL. */
const char *evp_trace_meta(const struct evp_trace *t, const char *key);

/* Iterate metadata: returns 0 and sets *key, *value for I < count. */
size_t evp_trace_meta_count(const struct evp_trace *t);
int evp_trace_meta_at(const struct evp_trace *t, size_t i, const char **key,
                      const char **value);

/* Function table: ids 1..evp_trace_nfuncs(). NULL for an unknown id. */
uint32_t evp_trace_nfuncs(const struct evp_trace *t);
const struct evp_func *evp_trace_func(const struct evp_trace *t, uint32_t id);

/* Streams in id order. */
size_t evp_trace_nstreams(const struct evp_trace *t);
const struct evp_stream *evp_trace_stream(const struct evp_trace *t, size_t i);

/*
 * Opcode names.  evp_trace_opname returns NULL for a number the table does
 * not name; evp_trace_opbase maps a specialized opcode to its base
 * instruction (itself when not specialized or unknown);
 * evp_trace_nopcodes counts the named base instructions (the "M" of the
 * summary's "total: N/M").
 */
const char *evp_trace_opname(const struct evp_trace *t, unsigned opcode);
unsigned evp_trace_opbase(const struct evp_trace *t, unsigned opcode);
unsigned evp_trace_nopcodes(const struct evp_trace *t);

/*
 * evalprof's built-in opcode table of CPython VERSION ("3.13"), the one a
 * trace without an opcode table of its own is read with: entry I's
 * opcode, base instruction and name.  1, or 0 past the last entry or for
 * a version without a table.
 */
int evp_builtin_opcode(const char *version, size_t i, unsigned *opcode,
                       unsigned *base, const char **name);

/* Warnings met while reading (also passed to opts->warn). */
size_t evp_trace_nwarnings(const struct evp_trace *t);
const char *evp_trace_warning(const struct evp_trace *t, size_t i);

/* Trace-clock ns of the end: the end record, else the last event. */
uint64_t evp_trace_end_ns(const struct evp_trace *t);

/* What compensation takes off each event of KIND, in ns: the kind's
 * measured cost, else the recorder's own cost per event (0: none). */
double evp_trace_kind_cost_ns(const struct evp_trace *t, unsigned kind);

/* Convert trace clock ticks to trace-clock nanoseconds. */
uint64_t evp_trace_ticks_to_ns(const struct evp_trace *t, uint64_t ticks);

/* ---- samples --------------------------------------------------------- */

/* Samples readable in all streams (a trace without SAMPLES chunks: 0). */
uint64_t evp_trace_nsamples(const struct evp_trace *t);

/*
 * The stack table of a sampled trace: node ids 1..evp_trace_nstacks(),
 * each a frame (its function) and the node of its caller (0: the
 * outermost frame).  A node whose entry was damaged or missing is NULL;
 * a node whose caller's entry is missing (or whose callers loop, which
 * only damage makes) has parent EVP_STACK_UNKNOWN, and views show the
 * frames above it under "<unknown stack>".  depth counts the frames from
 * the outermost one (1) to the node.
 */
#define EVP_STACK_UNKNOWN UINT32_MAX
#define EVP_STACK_UNKNOWN_NAME "<unknown stack>"
struct evp_stack_node {
    uint32_t parent; /* caller's node, 0 outermost, EVP_STACK_UNKNOWN */
    uint32_t func;   /* function id (evp_trace_func; may name none) */
    uint32_t depth;  /* frames from the outermost known one, from 1 */
};
uint32_t evp_trace_nstacks(const struct evp_trace *t);
const struct evp_stack_node *evp_trace_stack(const struct evp_trace *t,
                                             uint32_t id);

/* The kinds of record a trace holds and a view reads (replay.h,
 * evp_replay_reads). */
#define EVP_RECORDS_EVENTS 0x1u
#define EVP_RECORDS_SAMPLES 0x2u

/* The records T holds: EVP_RECORDS_EVENTS when it has events,
 * EVP_RECORDS_SAMPLES when it was recorded in sampled mode (info.sampled:
 * it has samples, or says it sampled; docs/FORMAT.md "Samples").  A
 * sampled recording holds samples and no events; 0: an empty trace of
 * events. */
unsigned evp_trace_records(const struct evp_trace *t);

/* ---- writers ---------------------------------------------------------- */

/* Write T as a text trace (the discussion's format plus evalprof's
 * extension lines, docs/FORMAT.md) to PATH ("-": stdout).  Returns 0 or a
 * negative errno; ERR gets a one-line reason. */
int evp_trace_write_text(struct evp_trace *t, const char *path, char *err,
                         size_t errlen);

/* Write T as a binary trace.  ZSTD_LEVEL 0 leaves chunks uncompressed. */
int evp_trace_write_evp(struct evp_trace *t, const char *path, int zstd_level,
                        char *err, size_t errlen);

/* The same into F, an open stream the caller closes (the command line's
 * whole-or-nothing output files), named NAME in ERR.  F is flushed; a
 * write error is returned as a negative errno. */
int evp_trace_write_text_to(struct evp_trace *t, FILE *f, const char *name,
                            char *err, size_t errlen);
int evp_trace_write_evp_to(struct evp_trace *t, FILE *f, const char *name,
                           int zstd_level, char *err, size_t errlen);

#endif /* EVALPROF_TRACE_H */
