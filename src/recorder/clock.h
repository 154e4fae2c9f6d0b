/*
 * Recorder-internal clock helpers (clock.c).  The hot-path read itself is
 * evp_rec_now() in evalprof/recorder.h.
 */
#ifndef EVP_RECORDER_CLOCK_H
#define EVP_RECORDER_CLOCK_H

#include <stdint.h>

#include "evalprof/recorder.h"

/* CLOCK_REALTIME in ns since the epoch. */
EVP_HIDDEN uint64_t evp_clock_wall_ns(void);

/* Non-zero when the CPU reports an invariant TSC. */
EVP_HIDDEN int evp_clock_tsc_invariant(void);

/* A simultaneous (ticks, CLOCK_MONOTONIC ns) pair. */
EVP_HIDDEN void evp_clock_pair(int use_tsc, uint64_t *ticks, uint64_t *ns);

/* Ticks per second, measured over SPIN_US microseconds. */
EVP_HIDDEN double evp_clock_calibrate(int use_tsc, unsigned spin_us);

#endif
