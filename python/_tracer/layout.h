/*
 * evalprof._tracer: the running interpreter's memory layout, for code that
 * reads threads and frames without the Python API (the sampled mode's
 * signal handler, sample.c).
 *
 * On CPython 3.13 and later the layout comes from the offsets the
 * interpreter publishes for tools (_PyRuntime.debug_offsets, struct
 * _Py_DebugOffsets): one walker then serves every such version, and a new
 * version needs only its offsets' version accepted in layout.c.  On 3.11
 * and 3.12, which publish none, layout.c fills the same table from the
 * version's headers.  What the offsets leave out (the frame owners that are
 * no Python frame, the code object's first traceable instruction, the tag
 * bits of a stack reference, how to tell JIT-compiled code) is stated per
 * version in layout.c too, so that every version test of the sampler lives
 * in one file.
 *
 * Everything here is read-only after evp_layout_init() and safe to use in
 * a signal handler (plain loads; the caller guards against faults).
 */
#ifndef EVP_LAYOUT_H
#define EVP_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

struct evp_layout {
    uint32_t version; /* PY_VERSION_HEX the offsets describe */
    int published;    /* 1: from _PyRuntime.debug_offsets */
    /* thread state: the current frame is *(ts + ts_current_frame), or on
     * 3.11/3.12 (ts_cframe not SIZE_MAX) *(*(ts + ts_cframe) +
     * cframe_current_frame) */
    size_t ts_current_frame, ts_cframe, cframe_current_frame;
    size_t ts_interp;
    /* tier 2: the executor a thread runs (3.14+: non-NULL while a trace
     * of the tier-2 optimizer runs at the innermost evaluation); SIZE_MAX
     * when the version has none */
    size_t ts_current_executor;
    /* interpreter frame */
    size_t frame_previous, frame_executable, frame_instr_ptr, frame_owner;
    uintptr_t executable_mask; /* clears a stack reference's tag bits */
    int owner_generator;       /* a generator's (or coroutine's) frame */
    int owner_not_python;      /* owners from this on are no Python frame */
    /* code object */
    size_t code_qualname, code_filename, code_firstlineno, code_linetable,
        code_adaptive, code_firsttraceable, code_size;
    size_t ob_type;
    const void *code_type; /* &PyCode_Type */
    /* 3.11/3.12: a frame's instruction pointer can rest on an inline
     * cache entry (after a call is set up, before the callee starts, and
     * while a returning callee's frame is cleared); these give each
     * executed opcode's base and cache entries, to find its instruction */
    int ip_in_caches;
    const uint8_t *deopt, *caches;
};

extern struct evp_layout evp_L;

/*
 * Fill evp_L for the running interpreter.  Returns 0, or -1 with a
 * one-line reason in WHY (the interpreter's published offsets are missing
 * or are not of the version the extension was built for).
 */
int evp_layout_init(char *why, size_t n);

/*
 * Whether the thread TS, interrupted at program counter PC outside the
 * eval function, runs JIT-compiled code: returns 2 when PC lies in the
 * JIT's code, 1 when the thread runs a tier-2 trace but PC is elsewhere
 * (runtime code the trace called), 0 otherwise.  Memory reads only; the
 * caller guards against faults.
 */
int evp_layout_jit(const void *ts, uintptr_t pc);

/* "JIT: ..." text for the trace's metadata (sample.jit). */
const char *evp_layout_jit_how(void);

#endif /* EVP_LAYOUT_H */
