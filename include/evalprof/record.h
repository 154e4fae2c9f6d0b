/*
 * evalprof record: the unit every producer buffers and the codec encodes.
 *
 * Part of the format layer (src/format): the recorder (which fills
 * records), the chunk codec (which encodes and decodes them) and the trace
 * readers share this one definition, so that no lower layer needs the
 * recorder's API to speak of a record.
 */
#ifndef EVALPROF_RECORD_H
#define EVALPROF_RECORD_H

#include <stdint.h>

#if defined(__GNUC__)
#define EVP_LIKELY(x) __builtin_expect(!!(x), 1)
#define EVP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define EVP_HIDDEN __attribute__((visibility("hidden")))
#else
#define EVP_LIKELY(x) (x)
#define EVP_UNLIKELY(x) (x)
#define EVP_HIDDEN
#endif

/* One buffered record; the writer encodes it (docs/FORMAT.md). */
struct evp_rec_record {
    uint64_t ts;   /* clock ticks */
    uint16_t kind; /* enum evp_kind */
    uint16_t aux;  /* opcode for EVP_EV_OP, else 0 */
    uint32_t arg;  /* function id, oparg, ... */
};

#endif /* EVALPROF_RECORD_H */
