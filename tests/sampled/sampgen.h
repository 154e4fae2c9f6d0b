/*
 * A sampled trace with known shares (docs/FORMAT.md "Samples"), written
 * chunk by chunk with the codec, for the tests of the sampled views
 * (tests/sampled/, tests/golden/sampled-*, the damage suites).
 *
 * Variant A, 1000 timer periods of 1 ms (rate 1000 Hz, CPU clock):
 *
 *   stream 1 "MainThread": main -> work -> hot          600 periods
 *       hot:  BINARY_OP_ADD_INT 200, BINARY_OP 100 (line 11),
 *             LOAD_FAST 200 (line 12), CALL in C 100 (line 13)
 *       runtime other (work, not in the eval loop) 50
 *   stream 2 "worker":     main -> work -> cold         300 periods
 *       cold: BINARY_OP 100 (line 21), STORE_FAST 100 (line 21),
 *             CALL in C without the GIL 100 (line 22)
 *       no Python frame at all 50
 *
 * so hot 60 %, cold 30 %, runtime other 10 % (self); work and main 95 %
 * inclusive; opcodes BINARY_OP 40 % (20 % specialized), LOAD_FAST 20 %,
 * CALL 20 %, STORE_FAST 10 %, none 10 %; phases: op for every sample in
 * the eval loop but LOAD_FAST's, which are in dispatch.  Every category
 * has a sample of weight 5 and one of weight 2 (the rest weigh 1).
 *
 * Variant B moves 200 periods from hot's BINARY_OP_ADD_INT to cold's
 * BINARY_OP: hot 40 %, cold 50 %.
 *
 * Either variant can be sampled at 4000 Hz of wall-clock time instead
 * (the same periods, of 250 us: a quarter of the estimated time), and
 * have its functions' file under a directory recorded as the script's
 * root (root.script), as two runs of one program from two checkouts.
 */
#ifndef EVP_TEST_SAMPGEN_H
#define EVP_TEST_SAMPGEN_H

#include <stddef.h>
#include <stdint.h>

struct sampgen_opts {
    char variant;     /* 'a' (default) or 'b' */
    int zstd;         /* compress chunks (level 3) */
    size_t per_chunk; /* samples per SAMPLES chunk; 0: 64 */
    int counts;       /* exact counts (counts.op.NAME), as mode A's
                         EVALPROF_COUNTS=1 writes them: BINARY_OP_ADD_INT
                         200,000, BINARY_OP 100,000, LOAD_FAST 2,000,000,
                         STORE_FAST 5 */
    int wall;         /* 4000 Hz of wall-clock time, not 1000 Hz of CPU */
    const char *root; /* the functions' directory (root.script); NULL:
                         "gen.py", no root */
    int no_eval;      /* sample.eval_ranges 0: the eval function was not
                         found (its samples keep their flags) */
    int jit;          /* a run with the JIT (sample.jit): hot's 200
                         BINARY_OP_ADD_INT periods in JIT-compiled code
                         (bits 22-23), its 100 BINARY_OP ones in runtime
                         code a JIT trace called (bit 23) */
};

/* Write the trace to PATH.  Returns 0 or -1 (errno set). */
int sampgen_write(const char *path, const struct sampgen_opts *o);

#endif
