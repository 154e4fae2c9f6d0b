/*
 * What the tests may ask of the sampler (sample.c; recorder-internal,
 * hidden).  The session knows the sampler only as a chunk source
 * (session.h).
 */
#ifndef EVP_RECORDER_SAMPLER_H
#define EVP_RECORDER_SAMPLER_H

#include "evalprof/recorder.h"

/* The longest the writer may wait between two rounds while sampling (50
 * ms, 10 ms while a ring fills fast, 200 ms once nothing asks for more),
 * 0 when no sampler runs: the source's poll_ms. */
EVP_HIDDEN unsigned evp_rec_sample_poll_ms_(void);

#endif /* EVP_RECORDER_SAMPLER_H */
