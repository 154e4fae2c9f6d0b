/*
 * The in-memory trace model shared by the readers (binary reader.c, text
 * text.c), the writers and the replay engine.  Not part of the public API:
 * views see struct evp_trace only through trace.h and replay.h.
 *
 * The files of src/trace call one another one way, each only files above
 * it in this list (tools/check-rules.py holds them to it):
 *
 *   optables.c  the built-in opcode tables
 *   trace.c     the model, its helpers and accessors
 *   samples.c   the stack table and the samples index (trace.c)
 *   reader.c    the binary index pass (samples.c, trace.c)
 *   replay.c    the replay engine (trace.c)
 *   text.c      the text reader and writer (replay.c, trace.c)
 *   evpwrite.c  the binary writer (replay.c, samples.c, trace.c)
 *   open.c      evp_trace_open: the reader of the file's kind (reader.c,
 *               text.c, samples.c, trace.c, optables.c)
 *
 * A stream is a list of segments, each an EVENTS payload still encoded
 * (decoded lazily by the replay engine, so opening a large trace costs
 * only an index pass): a binary trace's chunks, or the runs a text trace's
 * records were encoded into as they were read (text.c).
 */
#ifndef EVP_TRACE_INTERNAL_H
#define EVP_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/format.h"
#include "evalprof/trace.h"
#include "itab.h"
#include "kv.h"

struct segment {
    /* an EVENTS payload (into the mapping or an owned buffer), or NULL
     * for a compressed chunk: its zstd frame ZDATA (ZLEN bytes, in the
     * file's bytes), decompressed into the replay's one buffer when the
     * replay reaches it (evp_segment_payload), so that a compressed trace
     * costs one chunk, not its decompressed size */
    const uint8_t *payload;
    size_t len; /* decompressed */
    const uint8_t *zdata;
    size_t zlen;
    struct evp_events_prefix pf;
    uint64_t offset; /* file offset of the chunk, for messages */
    uint32_t chunk;  /* chunk number in the file, for messages */
    int reported;    /* its damage has been reported */
};

struct stream {
    struct evp_stream pub;
    char *name;
    struct segment *segs;
    size_t nsegs, cap;
    /* SAMPLES payloads, as segs (pf.count: the samples that decode) */
    struct segment *ssegs;
    size_t nssegs, scap;
};

/* A STACKS entry as read, resolved into the stack table once every
 * chunk is read (samples.c). */
struct stack_entry {
    uint32_t id, parent, func;
};

struct opcode_entry {
    const char *name; /* NULL: not named */
    uint16_t base;
};

/* Where compressed chunks are decompressed, one at a time: one per replay
 * (replays may run in several threads at once) and one for the index
 * pass.  Zeroed to start; evp_inflater_free gives it back. */
struct evp_inflater {
    uint8_t *buf;
    size_t cap;
    void *dctx; /* ZSTD_DCtx, made on first use */
};

struct evp_trace {
    char *path;
    struct evp_trace_info info;

    /* a binary file: mapped (evp_file_map), or read into memory */
    uint8_t *data;
    size_t size;
    int mapped;
    /* the index pass's inflater: here, not on the pass's stack, so that a
     * file cut under the pass (SIGBUS, evp_file_guard) loses nothing */
    struct evp_inflater open_z;
    /* the text reader's state while a text trace is read, for the same
     * reason (text.c); NULL after */
    struct text_reader *open_text;

    /* metadata as recorded, later pairs replacing earlier ones */
    struct evp_kv meta;

    /* function table; funcs[0] is the "no function" placeholder */
    struct evp_func *funcs;
    size_t nfuncs, funcs_cap; /* nfuncs counts entries incl. [0] */
    size_t funcs_named;       /* ids given a name so far */

    struct stream *streams; /* sorted by id once the trace is open */
    size_t nstreams, streams_cap;
    struct evp_itab stream_index; /* stream id -> index in streams */

    /* stack table of a sampled trace: entries as read, then nodes
     * 1..nstacks (stacks[0] unused; func 0 and depth 0: no entry) */
    struct stack_entry *sraw;
    size_t nsraw, sraw_cap;
    struct evp_stack_node *stacks;
    uint32_t nstacks;

    /* opcode table */
    struct opcode_entry *ops;
    unsigned nops;   /* entries (max opcode + 1) */
    unsigned nbases; /* named base instructions */
    int ops_from_trace;

    char **warnings;
    size_t nwarnings, warnings_cap;
    uint64_t warnings_lost; /* past MAX_WARNINGS_KEPT: counted only */
    void (*warn)(void *ctx, const char *path, const char *msg);
    void *warn_ctx;
    int opened; /* warnings are held back until the open succeeds, so
                   that a file with nothing readable gives one line */

    /* clock: ns = anchor_ns + ((ticks - anchor_ticks) * mult) >> 32 */
    uint64_t anchor_ticks, anchor_ns;
    uint64_t mult;

    /* allocations to free with the trace */
    void **owned;
    size_t nowned, owned_cap;
};

/* Function ids are dense in practice; absurd ones from bad input are
 * refused by both readers. */
#define MAX_FUNC_ID (1u << 26)

/* Hidden helpers shared by the trace sources (trace.c). */
EVP_HIDDEN void evp_trace_warnf(struct evp_trace *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
EVP_HIDDEN void *evp_trace_own(struct evp_trace *t, void *p);
EVP_HIDDEN char *evp_trace_strdup(struct evp_trace *t, const char *s, size_t n);
EVP_HIDDEN int evp_trace_set_meta(struct evp_trace *t, const char *key,
                                  const char *value);
/* Set function ID (growing the table); name/file copied. */
EVP_HIDDEN int evp_trace_set_func(struct evp_trace *t, uint32_t id,
                                  const char *name, size_t nlen,
                                  const char *file, size_t flen, uint32_t line);
/* The stream with id ID, added (empty) when new; NULL when out of
 * memory.  O(1): traces may have tens of thousands of threads.  The
 * pointer is valid until the next stream is added. */
EVP_HIDDEN struct stream *evp_trace_get_stream(struct evp_trace *t,
                                               uint32_t id);
/* Give the pages the mapped bytes at P lie on back to the system once
 * read, the pages they share with their neighbours included (else one
 * page a chunk would stay): a page is read again from the file if touched
 * later, so the resident set stays bounded by what is in use. */
EVP_HIDDEN void evp_trace_release(struct evp_trace *t, const void *p,
                                  size_t len);
EVP_HIDDEN int evp_stream_add_segment(struct stream *s,
                                      const struct segment *seg);

/* Decompress the zstd frame at SRC (N bytes) that declares RAW bytes into
 * Z's buffer: the bytes, valid until Z's next use, or NULL when the frame
 * does not hold RAW bytes (or memory runs out). */
EVP_HIDDEN const uint8_t *evp_inflate(struct evp_inflater *z,
                                      const uint8_t *src, size_t n, size_t raw);
EVP_HIDDEN void evp_inflater_free(struct evp_inflater *z);
/* SEG's EVENTS payload (seg->len bytes): in place, or decompressed into
 * Z.  NULL when a compressed chunk no longer decompresses (the file
 * changed since it was opened) or memory runs out. */
EVP_HIDDEN const uint8_t *evp_segment_payload(const struct segment *seg,
                                              struct evp_inflater *z);
/* Give back the mapped pages SEG's bytes in the file are on, once the
 * replay has passed them (evp_trace_release). */
EVP_HIDDEN void evp_segment_release(struct evp_trace *t,
                                    const struct segment *seg);
/* Sort a stream's N segments SEGS by sequence number and warn of gaps
 * and repeats ("stream S: WHATchunks 3-5 missing (RECORDS between them are
 * lost)"). */
EVP_HIDDEN void evp_segments_order(struct evp_trace *t, uint32_t stream,
                                   struct segment *segs, size_t n,
                                   const char *what, const char *records);
/* Stack ids are dense too: one beyond every entry read plus this is
 * damage. */
#define MAX_STACK_AHEAD 65536u
/* One STACKS entry (samples.c): 0, -EINVAL when refused (an id far
 * beyond the entries read, a caller or function out of range), -ENOMEM. */
EVP_HIDDEN int evp_stack_add(struct evp_trace *t, uint64_t id, uint64_t parent,
                             uint64_t func);
/* A STACKS payload (samples.c): its entries kept for the table, a
 * damaged entry warned about (chunk CHUNK at byte OFF) and refused.
 * Returns 0, or -1 when the payload does not parse at all. */
EVP_HIDDEN int evp_stacks_parse(struct evp_trace *t, const uint8_t *p,
                                size_t len, uint32_t chunk, uint64_t off);
/* Check SEG's samples (PAYLOAD, decompressed) in the index pass: the
 * count cut to the ones that decode (a warning names the damage), the
 * stream's totals counted.  Returns 0 (damage included). */
EVP_HIDDEN int evp_samples_index(struct evp_trace *t, struct stream *s,
                                 struct segment *seg, const uint8_t *payload);
/* After every chunk: the stack table resolved, the samples' chunks in
 * order (gaps warned), the sampled-trace info filled in. */
EVP_HIDDEN void evp_samples_finish(struct evp_trace *t);
EVP_HIDDEN int evp_trace_set_opcode(struct evp_trace *t, unsigned opcode,
                                    const char *name, unsigned base);
/* Load a built-in opcode table ("3.10" ...); -1 when unknown. */
EVP_HIDDEN int evp_trace_builtin_opcodes(struct evp_trace *t,
                                         const char *version);
/* Fill the public info from metadata and the clock. */
EVP_HIDDEN void evp_trace_finish(struct evp_trace *t);
/* The trace is open: the warnings held back are handed to the callback,
 * later ones as they come. */
EVP_HIDDEN void evp_trace_opened(struct evp_trace *t);
/* Trace-clock ns of the latest stream's last event (0: none), for a
 * trace without an end record (evp_trace_end_ns, samples.c). */
EVP_HIDDEN uint64_t evp_events_last_ns(const struct evp_trace *t);

/* The binary reader (reader.c): the index pass over t->data, FIRST 0 for
 * a file whose header is intact, else the offset of its first whole
 * chunk (the header is damaged: warned, and the chunks read from there);
 * 0, or a negative errno with a one-line reason in ERR. */
EVP_HIDDEN int evp_binary_read(struct evp_trace *t, size_t first, char *err,
                               size_t errlen);
/* The next offset after OFF of the SIZE bytes at D holding a whole,
 * checksummed chunk, or SIZE. */
EVP_HIDDEN size_t evp_binary_resync(const uint8_t *d, size_t size, size_t off);

/* The text reader (text.c): the N bytes at DATA, then, when FD is not -1,
 * the rest of the stream FD, parsed as it comes (memory for the records,
 * not for the text). */
EVP_HIDDEN void evp_text_reader_free(struct evp_trace *t);
EVP_HIDDEN int evp_text_read(struct evp_trace *t, const char *data, size_t n,
                             int fd, char *err, size_t errlen);
/* Metadata describing the clock of the trace being read, which a writer
 * (whose timestamps are nanoseconds) replaces. */
EVP_HIDDEN int evp_meta_is_clock(const char *key);
/* X as the shortest decimal that reads back exactly (metadata that a
 * round trip must keep to the last bit); returns BUF. */
EVP_HIDDEN char *evp_fmt_exact(char *buf, size_t len, double x);

/* Built-in opcode tables (optables.c). */
struct evp_optable_entry {
    uint16_t opcode, base;
    const char *name;
};
struct evp_optable {
    const char *version;
    const struct evp_optable_entry *entries;
    size_t n;
};
EVP_HIDDEN const struct evp_optable *evp_optable_find(const char *version);
EVP_HIDDEN const char *evp_optable_versions(void);

#endif
