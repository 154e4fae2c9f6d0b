/*
 * Decoder of CPython's code-object location table (co_linetable of
 * CPython 3.11-3.15, PEP 626 and 657): the sampler's writer turns a
 * sampled function's table into its lines.ID metadata with it, and the
 * attach layer (src/attach) the tables it reads from another process.
 * linetable.c describes the format.
 */
#ifndef EVP_RECORDER_LINETABLE_H
#define EVP_RECORDER_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/record.h"

/*
 * Decode the N bytes of TABLE, a code object's co_linetable whose
 * co_firstlineno is FIRSTLINE: RANGE(CTX, UNIT, LINE) for each entry, in
 * order, UNIT the entry's first code unit and LINE its start line (0: the
 * entry has no location).  Returns 0, or -1 for a malformed table (an
 * entry cut short, a byte out of place, a line or code unit out of
 * range): the ranges given before it are then not to be trusted.
 */
EVP_HIDDEN int
evp_rec_lt311_decode(const uint8_t *table, size_t n, long firstline,
                     void (*range)(void *ctx, long unit, long line), void *ctx);

#endif /* EVP_RECORDER_LINETABLE_H */
