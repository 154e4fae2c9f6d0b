/*
 * Fuzz target: the binary `.evp` reader, the replay engine, every view and
 * both writers, fed any bytes as a trace file.
 *
 * Random bytes almost never carry a valid XXH3 checksum, so the chunk
 * parsers behind the checksum would hardly be reached.  The target
 * therefore repairs the checksum of every well-framed chunk whose
 * reserved header byte 7 is zero before reading; a chunk with byte 7 set
 * keeps whatever checksum the input has, so the mismatch and
 * resynchronisation paths are fuzzed too.  (The recorder always writes
 * byte 7 as zero, so real traces in the corpus are unchanged.)
 *
 * Properties checked (fuzz_common.c): a failed open is one line; an
 * opened trace keeps its invariants; the views succeed; and the binary
 * copy written by `evalprof export --format evp` reads back warning-free
 * with exactly the same events, functions, opcodes and streams.
 */
#include <stdlib.h>
#include <string.h>

#include "evalprof/format.h"
#include "fuzz.h"

static void repair_checksums(uint8_t *d, size_t size)
{
    size_t off = EVP_FILE_HEADER_SIZE;
    while (off + EVP_CHUNK_HEADER_SIZE <= size) {
        uint32_t len = evp_get_u32(d + off + 8);
        if (evp_get_u32(d + off) != EVP_CHUNK_MAGIC ||
            len > size - off - EVP_CHUNK_HEADER_SIZE) {
            off++;
            continue;
        }
        if (d[off + 7] == 0)
            evp_put_u32(d + off + 12,
                        evp_chunk_checksum(
                            d + off, d + off + EVP_CHUNK_HEADER_SIZE, len));
        off += EVP_CHUNK_HEADER_SIZE + len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    uint8_t *d = malloc(size ? size : 1);
    if (!d)
        return 0;
    memcpy(d, data, size);
    repair_checksums(d, size);
    /* What to pick among the views' options: a hash of the input. */
    unsigned pick = 2166136261u;
    for (size_t i = 0; i < size; i++)
        pick = (pick ^ d[i]) * 16777619u;
    struct evp_trace *t = fuzz_open(fuzz_file(0, d, size), 0);
    free(d);
    if (!t)
        return 0;
    fuzz_views(t, pick);
    fuzz_roundtrip(t, pick, 2);
    evp_trace_close(t);
    return 0;
}
