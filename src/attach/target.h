/*
 * The target's insides that the other files of src/attach share
 * (attach-internal; target.c owns them): its process, its resolved
 * layout, the addresses of the runtime and of the functions an injection
 * calls, and the code objects read so far.
 */
#ifndef EVP_ATTACH_TARGET_H
#define EVP_ATTACH_TARGET_H

#include <stdint.h>

#include "evalprof/attach.h"
#include "elfread.h"
#include "pylayout.h"
#include "proc.h"

/* A code object read from the target, keyed for the traces. */
struct evp_tcode {
    uint64_t addr;
    /* what says it is still the same code at that address */
    uint64_t qualname, filename, linetable;
    int32_t firstline;
    int32_t firsttraceable;
    int64_t size; /* code units */
    char *name, *file;
    /* unit -> line ranges: the unit each starts at, its line */
    uint32_t *lt_unit, *lt_line;
    size_t nlt;
    char *lines; /* "unit:line,..." (the trace's lines.ID), or NULL */
    uint32_t key;
};

struct evp_target {
    struct evp_proc p;
    struct evp_target_info info;
    const struct evp_pylayout *L;
    uint64_t off[EVP_PF__COUNT]; /* resolved: EVP_PF_NONE where absent */
    uint64_t runtime;            /* &_PyRuntime */
    uint64_t code_type, unicode_type, bytes_type;
    uint64_t add_pending_call, run_simple_string; /* Py_AddPendingCall ... */
    uint64_t bias;                                /* of the runtime file */
    struct evp_elf elf;                           /* the runtime file */
    struct {
        uint64_t lo, hi;
    } eval[8];
    int neval;
    uint8_t call_op[256]; /* executed opcode -> a call instruction's */
    const char *opnames[256];
    /* the code cache: codes[key - 1]; an open-addressing index by address */
    struct evp_tcode *codes;
    size_t ncodes, codes_cap;
    uint32_t *index; /* key, 0: empty */
    size_t index_cap;
    int frozen;
    uint64_t walk_errors;
};

/* The code key KEY's entry. */
static inline const struct evp_tcode *
evp_target_code(const struct evp_target *t, uint32_t key)
{
    return key >= 1 && key <= t->ncodes ? &t->codes[key - 1] : NULL;
}

/* The PyThreadState of the target's main interpreter's main thread (the
 * one whose kernel id is the process's), or 0 with -errno. */
int evp_target_main_tstate(struct evp_target *t, uint64_t *ts);

#endif
