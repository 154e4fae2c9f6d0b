/*
 * Shared pieces of the damage tests (tests/damage/): recording a small
 * real trace with the recorder, reading files and writing damaged copies,
 * opening a trace with its warnings captured, replaying it into per-stream
 * event lists that can be compared with the intact trace's, and a map of
 * a binary file's chunks (where each starts, what it holds).
 *
 * The tests compare what survives damage with what the intact file holds,
 * so every helper keeps the fields that do not depend on the clock
 * calibration (kind, argument, opcode, depth, function): losing the end
 * record or the metadata changes the nanoseconds, never those.
 */
#ifndef EVP_TEST_DMG_H
#define EVP_TEST_DMG_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/replay.h"
#include "evalprof/trace.h"

/* One replayed event, the clock-independent part. */
struct dmg_ev {
    uint32_t kind, arg;
    uint16_t aux, flags;
    int32_t depth;
    uint32_t func;
    uint64_t ts, elapsed; /* clock-dependent: compare only within a file */
};

struct dmg_stream {
    uint32_t id;
    struct dmg_ev *ev;
    size_t n, cap;
};

#define DMG_MAX_STREAMS 64

/* What a replay produced, stream by stream. */
struct dmg_replay {
    struct dmg_stream s[DMG_MAX_STREAMS];
    size_t nstreams;
    int rc; /* evp_replay's result */
};

/* Warnings captured while opening (and replaying). */
struct dmg_warn {
    char **msg;
    size_t n, cap;
};

/* A chunk of a binary file, from walking the intact file's headers. */
struct dmg_chunk {
    size_t off, size; /* header included */
    unsigned type;
    uint32_t stream, seq, count; /* EVENTS chunks (uncompressed) */
    size_t first;                /* index of its first event in the stream */
};

struct dmg_map {
    struct dmg_chunk c[256];
    size_t n;
};

/* Make a temporary directory for the test; returns its path (static). */
const char *dmg_tmpdir(void);

/* A message formatted into a static buffer (for cmocka's fail_msg). */
const char *dmg_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* "<tmpdir>/<name>" in a static rotating buffer. */
const char *dmg_path(const char *name);

/*
 * Record a small trace at PATH through the recorder API: THREADS threads,
 * about EVENTS events each (nested calls, ops with opcodes and opargs, the
 * loop phases), small buffers so each stream spans several chunks.
 * Returns 0 or a negative errno.
 */
int dmg_record(const char *path, int threads, int events);

/* Read a whole file (malloc'ed); returns its size or -1. */
long dmg_read(const char *path, uint8_t **data);

/* Write LEN bytes to PATH; 0 or -1. */
int dmg_write(const char *path, const void *data, size_t len);

/*
 * Open PATH (FORMAT as evp_open_opts.format), capturing warnings in W
 * (reset first) instead of printing them.  Returns evp_trace_open's code.
 */
int dmg_open(const char *path, int format, struct evp_trace **t, char *err,
             size_t errlen, struct dmg_warn *w);

void dmg_warn_free(struct dmg_warn *w);

/* Does some warning contain NEEDLE? */
int dmg_warned(const struct dmg_warn *w, const char *needle);

/* Replay T (all streams, keeping "log written" records) into R. */
void dmg_replay_all(struct evp_trace *t, struct dmg_replay *r);
void dmg_replay_free(struct dmg_replay *r);

/*
 * Run every view over T with output thrown away: the tree in its three
 * formats, the summary (sorts in turn, --funcs, specialized opcodes
 * folded or not, one stream alone), info, and both writers.  Returns the number
 * of views that failed for a reason other than the trace's damage (never
 * expected).
 */
int dmg_views(struct evp_trace *t);

/* Is /dev/null the null device?  (Not a given on a shared machine where
 * something may have replaced it by a file.) */
int dmg_have_dev_null(void);

/* The stream with id ID, or NULL. */
const struct dmg_stream *dmg_stream(const struct dmg_replay *r, uint32_t id);

/* Total events over the streams. */
size_t dmg_total(const struct dmg_replay *r);

/* Same kind, argument and opcode (the recorded facts). */
int dmg_same_fact(const struct dmg_ev *a, const struct dmg_ev *b);

/* Walk the chunk headers of an intact binary file.  0 or -1. */
int dmg_map_chunks(const uint8_t *d, size_t size, struct dmg_map *m);

/* Index of the chunk holding byte OFF, or -1 (file header). */
int dmg_chunk_at(const struct dmg_map *m, size_t off);

/* A small deterministic generator for the random damage. */
uint64_t dmg_rand(uint64_t *state);

#endif
