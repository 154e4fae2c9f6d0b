/*
 * The session's interface to a chunk source (recorder-internal, hidden).
 *
 * The session (recorder.c) owns the file, the writer thread, the
 * metadata and the function table.  A chunk source is a part of the
 * recorder that writes chunks of its own into the session's file beside
 * the threads' event buffers: the sampler (sample.c), whose rings become
 * FUNCS, META, STACKS and SAMPLES chunks.  It registers once
 * (evp_rec_source_add) and from then on the session drives it through
 * its table; the session calls no source by name, and a source calls
 * only the functions below (and the public recorder.h API).
 *
 * Locks.  The session's lock comes first: a source's own lock may be
 * taken inside the session's (collect, fork_prepare run with it held),
 * never the other way round.  A source that needs the session while it
 * holds its own lock lets go of its lock first.
 *
 * A writer round.  collect() is handed the round in progress; what it
 * queues through the evp_rec_round_* calls is written in that round, in
 * the order queued, after the chunks queued before it and before the
 * threads' event buffers: FUNCS and META before the STACKS that name the
 * functions, STACKS before the SAMPLES that use the nodes.  Those calls
 * are valid only inside collect() (the round holds the session's lock).
 */
#ifndef EVP_RECORDER_SESSION_H
#define EVP_RECORDER_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/recorder.h"

/* A writer round in progress (opaque). */
struct evp_rec_round;

struct evp_rec_source {
    /* Every writer round, and once more at evp_rec_close (FINAL: the last
     * round of the file; the source records its closing figures then and
     * forgets what it knew of the file). */
    void (*collect)(struct evp_rec_round *round, int final);
    /* The longest the writer may wait between two rounds for this
     * source's sake, in ms; 0: no wish. */
    unsigned (*poll_ms)(void);
    /* evp_rec_close, before its last round (no lock held): stop
     * producing, so that the last round drains everything. */
    void (*stop)(void);
    /* How many threads of its own the source runs now. */
    int (*threads)(void);
    /* evp_rec_writer_pause and evp_rec_writer_resume (a fork the
     * program makes): stop its threads, and start them again (0 or
     * -errno).  The session's lock is not held. */
    void (*pause)(void);
    int (*resume)(void);
    /* Around fork(): fork_prepare takes the source's lock after the
     * session's (so that the child finds its state whole), fork_parent
     * releases it.  fork_child runs in the child first of all, before
     * the session is reset (no sampling there: the child has one
     * thread and none of the parent's timers).  fork_follow runs in a
     * child that follows the fork (EVP_REC_FOLLOW_FORK) once its own
     * trace is started: 0, or a negative errno (the session records
     * sample.fork). */
    void (*fork_prepare)(void);
    void (*fork_parent)(void);
    void (*fork_child)(void);
    int (*fork_follow)(void);
};

/* Register SRC (a static table) with the session of this process, once:
 * 0, or -ENOSPC (too many sources).  Registering again is a no-op. */
EVP_HIDDEN int evp_rec_source_add(const struct evp_rec_source *src);

/* ---- inside collect() ---------------------------------------------------- */

/* Register a function (as evp_rec_func): its id, or 0 (no memory). */
EVP_HIDDEN uint32_t evp_rec_round_func(struct evp_rec_round *round,
                                       const char *qualname, const char *file,
                                       uint32_t line);

/* Record KEY=VALUE (as evp_rec_meta): 0 or -ENOMEM. */
EVP_HIDDEN int evp_rec_round_meta(struct evp_rec_round *round, const char *key,
                                  const char *value);

/* A decimal metadata value: evp_rec_round_meta(KEY, "%llu" of V). */
EVP_HIDDEN int evp_rec_round_meta_u64(struct evp_rec_round *round,
                                      const char *key, uint64_t v);

/* evp_rec_lines_end inside the round. */
EVP_HIDDEN void evp_rec_round_lines(struct evp_rec_round *round,
                                    struct evp_rec_lines *l, uint32_t func);

/* Queue a FUNCS chunk of the functions registered since the last one,
 * so that chunks queued after it may name them. */
EVP_HIDDEN void evp_rec_round_funcs(struct evp_rec_round *round);

/* Queue a chunk (PAYLOAD copied); COMPRESS: as EVENTS chunks are (zstd
 * when the session compresses).  0 or -ENOMEM. */
EVP_HIDDEN int evp_rec_round_chunk(struct evp_rec_round *round, unsigned type,
                                   const uint8_t *payload, size_t len,
                                   int compress);

/* ---- any time ------------------------------------------------------------ */

/*
 * Give the calling thread a stream without an event buffer (takes the
 * session's lock): the stream it records events in if it is attached
 * already, else a new one, named NAME (NULL: "thread <tid>"), that its
 * first event goes on using.  Returns 0 and *STREAM, -ENOTCONN or
 * -ENOMEM.
 */
EVP_HIDDEN int evp_rec_stream_attach_(const char *name, uint32_t *stream);

/* The kernel's id of the calling thread. */
EVP_HIDDEN int evp_rec_gettid_(void);

/* The recorder clock's ticks per second (evp_rec_now(); clock.hz) of the
 * open session. */
EVP_HIDDEN double evp_rec_hz_(void);

/* The writer's longest wait between two rounds, as it last set it (0
 * before its first round): short enough that a quarter of the ring fills
 * between two, flush_ms at the most, and no longer than a source asks.
 * (For the tests.) */
EVP_HIDDEN unsigned evp_rec_writer_poll_ms_(void);

#endif /* EVP_RECORDER_SESSION_H */
