/*
 * evalprof fuzz targets: shared declarations.
 *
 * Each target (fuzz_evp.c, fuzz_text.c, fuzz_codec.c) defines
 * LLVMFuzzerTestOneInput.  It is linked two ways: with libFuzzer
 * (-Dfuzz=true, clang: tests/fuzz/run.sh drives it), and with
 * standalone.c in every build, where a Meson test (suite 'fuzz-corpus')
 * replays every file of tests/fuzz/corpus/<target>/ through it, so that
 * each input that ever crashed a reader stays a test (SQLite's fuzzcheck).
 *
 * A target checks properties, not just survival: on any violation it
 * prints what broke and aborts, which both drivers report as a failure.
 */
#ifndef EVP_FUZZ_H
#define EVP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Abort with a message when COND is false (in every build). */
#define FUZZ_CHECK(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond))                                                           \
            fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                 \
    } while (0)

__attribute__((noreturn, format(printf, 4, 5))) void
fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...);

/*
 * A path whose file holds DATA (SIZE bytes): an in-memory file (memfd)
 * named through /proc/self/fd, rewritten on each call.  SLOT 0-3 picks one
 * of several such files.  Never NULL (aborts when no file can be made).
 */
const char *fuzz_file(int slot, const uint8_t *data, size_t size);

/* The current contents of slot SLOT's file (after a writer wrote it). */
const uint8_t *fuzz_file_data(int slot, size_t *size);

/* Options for opening fuzzed input: warnings checked (one line each) and
 * counted, never printed.  FORMAT as evp_open_opts.format. */
struct evp_open_opts fuzz_open_opts(int format);

/* Warnings delivered through fuzz_open_opts since the last reset. */
extern size_t fuzz_nwarnings;

/*
 * Open PATH; on failure check the one-line error and return NULL.  On
 * success check the trace's invariants (streams, counts, metadata).
 */
struct evp_trace *fuzz_open(const char *path, int format);

/*
 * Run the views over T with output thrown away, their options picked by
 * PICK: tree (the three formats), summary (sorts, --funcs, folded
 * specialized forms, one stream), info, folded stacks (and the flame
 * graph drawn from them).  Checks each succeeds.
 */
void fuzz_views(struct evp_trace *t, unsigned pick);

/*
 * Write T as a binary trace (zstd or not, by PICK), read it back and check
 * that nothing changed: the same streams, events (kind, argument, opcode,
 * timestamp), functions; and that the copy reads without a warning.
 * With TEXT also export the text format and check that it reads back
 * with the same events: TEXT 1 for a text trace (everything the format
 * holds), 2 for a binary one (streams, kinds and times: a binary trace
 * can hold what text cannot).
 */
void fuzz_roundtrip(struct evp_trace *t, unsigned pick, int text);

#endif
