/*
 * Fuzz target: the text-trace reader (the discussion's format and
 * evalprof's extension lines), the replay engine, every view and both
 * writers, fed any bytes as a text trace (as `evalprof import` reads it:
 * text forced, whatever the bytes look like).
 *
 * Properties checked (fuzz_common.c): a failed open is one line; an
 * opened trace keeps its invariants; the views succeed; the binary copy
 * reads back with exactly the same events; and the text export reads
 * back with the same events, times and function names (a lossless round
 * trip for what the format can express).
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    unsigned pick = 2166136261u;
    for (size_t i = 0; i < size; i++)
        pick = (pick ^ data[i]) * 16777619u;
    struct evp_trace *t = fuzz_open(fuzz_file(0, data, size), 2);
    if (!t)
        return 0;
    fuzz_views(t, pick);
    fuzz_roundtrip(t, pick, 1);
    evp_trace_close(t);
    return 0;
}
