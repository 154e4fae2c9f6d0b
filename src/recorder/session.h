/*
 * What the sampler (sample.c) and the session (recorder.c) ask of each
 * other: recorder-internal, hidden.
 *
 * The sampler's writer half runs inside the session's writer round
 * (evp_rec_sample_collect_), under the session lock, so that the
 * functions, line tables, stack nodes and samples it turns a round's
 * rings into are queued as chunks in the order a reader wants them:
 * FUNCS and META before the STACKS that name the functions, STACKS
 * before the SAMPLES that use the nodes.  The "_locked_" functions below
 * expect that lock held.
 */
#ifndef EVP_RECORDER_SESSION_H
#define EVP_RECORDER_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/recorder.h"

/* ---- provided by recorder.c ------------------------------------------- */

/* Register a function (evp_rec_func without taking the lock; any state
 * but CLOSED).  Returns its id or 0. */
EVP_HIDDEN uint32_t evp_rec_func_locked_(const char *qualname, const char *file,
                                         uint32_t line);

/* Record KEY=VALUE (evp_rec_meta without the lock): 0 or -ENOMEM. */
EVP_HIDDEN int evp_rec_meta_locked_(const char *key, const char *value);

/* evp_rec_lines_end without the lock. */
EVP_HIDDEN void evp_rec_lines_end_locked_(struct evp_rec_lines *l,
                                          uint32_t func);

/* Queue a FUNCS chunk for the functions registered since the last one,
 * so that chunks queued after it may name them. */
EVP_HIDDEN void evp_rec_funcs_queue_locked_(void);

/* Queue a chunk (PAYLOAD copied) for this round's writing; COMPRESS: as
 * EVENTS chunks are (zstd when the session asks for it).  0 or -ENOMEM. */
EVP_HIDDEN int evp_rec_chunk_queue_locked_(unsigned type,
                                           const uint8_t *payload, size_t len,
                                           int compress);

/*
 * Give the calling thread a stream without an event buffer (takes the
 * lock): the stream it records events in if it is attached already, else
 * a new one, named NAME (NULL: "thread <tid>"), that its first event
 * goes on using.  Returns 0 and *STREAM, -ENOTCONN or -ENOMEM.
 */
EVP_HIDDEN int evp_rec_stream_attach_(const char *name, uint32_t *stream);

/* The kernel's id of the calling thread. */
EVP_HIDDEN int evp_rec_gettid_(void);
/* The wall clock's sampler thread stopped before a fork (it is waited
 * for until the kernel no longer counts it) and started after it. */
EVP_HIDDEN void evp_rec_sample_ticker_pause_(void);
EVP_HIDDEN int evp_rec_sample_ticker_resume_(void);
/* Whether that thread runs now (evp_rec_threads). */
EVP_HIDDEN int evp_rec_sample_ticker_running_(void);

/* The writer's longest wait between two rounds, as it last set it (0
 * before its first round): short enough that a quarter of the ring fills
 * between two, flush_ms at the most. */
EVP_HIDDEN unsigned evp_rec_writer_poll_ms_(void);

/* The recorder clock's ticks per second (evp_rec_now(); clock.hz). */
EVP_HIDDEN double evp_rec_hz_(void);

/* ---- provided by sample.c --------------------------------------------- */

/*
 * The writer round's sampling part (lock held): drain every ring, register
 * new functions and their line tables, queue the STACKS chunk of new
 * nodes and each thread's SAMPLES chunk, free the rings of stopped
 * threads.  FINAL (the close's last round): also record sample.missed and
 * forget the session's functions and stacks.
 */
EVP_HIDDEN void evp_rec_sample_collect_(int final);

/* The longest the writer may wait between two rounds while sampling (50
 * ms, 10 ms while a ring fills fast), 0 when no sampler runs. */
EVP_HIDDEN unsigned evp_rec_sample_poll_ms_(void);

/* Around fork(): the sampler's lock is held across it (after the
 * session lock, its order everywhere), so that the child finds the
 * sampler's state whole; the parent releases it, and the child in
 * evp_rec_sample_fork_child_. */
EVP_HIDDEN void evp_rec_sample_fork_prepare_(void);
EVP_HIDDEN void evp_rec_sample_fork_parent_(void);

/* In a forked child (fork_child, before anything else): no sampling. */
EVP_HIDDEN void evp_rec_sample_fork_child_(void);

/* In a child that follows the fork, once its trace is started: the
 * parent's sampler again, and the forking thread sampled if it was.
 * 0, or a negative errno (the child then records no samples). */
EVP_HIDDEN int evp_rec_sample_fork_resume_(void);

#endif /* EVP_RECORDER_SESSION_H */
