/*
 * evalprof._tracer: the running interpreter's memory layout (layout.h).
 *
 * Where the sampler's knowledge of a CPython version lives (which version
 * has which of these is version.h's, the extension's per-version adapter):
 *
 *   3.13+  the offsets the interpreter publishes (_PyRuntime.debug_offsets,
 *          struct _Py_DebugOffsets of the version's own headers), accepted
 *          when their cookie is "xdebugpy", their version is the major and
 *          minor version the extension was built for, and they describe a
 *          build with the GIL.  A new version is added by accepting its
 *          offsets' version below (and checking the few facts they leave
 *          out, listed at the top of evp_layout_init);
 *   3.11, 3.12  no published offsets: the same table from the headers.
 *
 * JIT-compiled code (3.14+, an interpreter configured with
 * --enable-experimental-jit, running with PYTHON_JIT=1): a thread runs a
 * trace of the tier-2 optimizer while its thread state's current_executor
 * is set (cleared while a nested evaluation runs, set again when it
 * returns); whether the interrupted program counter lies in JIT code is
 * asked of the interpreter itself on 3.15 (_PyJIT_AddressInJitCode, the
 * test its own tools use), and on 3.14 by the executor lists that function
 * reads (each executor's jit_code and jit_size).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define Py_BUILD_CORE 1
#include "version.h"
#if !EVP_HAVE_DEBUG_OFFSETS
#define NEED_OPCODE_TABLES
#include "internal/pycore_opcode.h"
#undef NEED_OPCODE_TABLES
#include "internal/pycore_frame.h"
#else
#include "internal/pycore_runtime.h"
#endif
#if EVP_JIT_EXECUTOR_LISTS
#include "internal/pycore_interp.h"
#include "internal/pycore_optimizer.h"
#endif
#undef Py_BUILD_CORE

#include "layout.h"

struct evp_layout evp_L;

#if EVP_JIT_ADDRESS_QUERY
/* 3.15: the interpreter's own test (exported; reads memory only). */
static int (*address_in_jit)(PyInterpreterState *, uintptr_t);
#endif
static const char *jit_how = "none: this interpreter has no JIT";

#if EVP_HAVE_DEBUG_OFFSETS
static int
from_debug_offsets(char *why, size_t n)
{
    const _Py_DebugOffsets *d = &_PyRuntime.debug_offsets;
    if (memcmp(d->cookie, "xdebugpy", 8) != 0) {
        snprintf(why, n,
                 "the interpreter publishes no debug offsets "
                 "(_PyRuntime.debug_offsets has no \"xdebugpy\" cookie)");
        return -1;
    }
    /* the struct's layout is the minor version's: its own headers' */
    if ((d->version >> 16) != (EVP_BUILT_FOR_HEX >> 16)) {
        snprintf(why, n,
                 "the interpreter's debug offsets are those of version "
                 "%#llx, not of CPython %d.%d as evalprof._tracer was built "
                 "for",
                 (unsigned long long)d->version, EVP_BUILT_FOR_HEX >> 24,
                 (EVP_BUILT_FOR_HEX >> 16) & 0xff);
        return -1;
    }
    if (d->free_threaded) {
        snprintf(why, n, "the interpreter is free-threaded");
        return -1;
    }
    evp_L.version = (uint32_t)d->version;
    evp_L.published = 1;
    evp_L.ts_current_frame = d->thread_state.current_frame;
    evp_L.ts_cframe = SIZE_MAX;
    evp_L.ts_interp = d->thread_state.interp;
    evp_L.frame_previous = d->interpreter_frame.previous;
    evp_L.frame_executable = d->interpreter_frame.executable;
    evp_L.frame_instr_ptr = d->interpreter_frame.instr_ptr;
    evp_L.frame_owner = d->interpreter_frame.owner;
    evp_L.code_qualname = d->code_object.qualname;
    evp_L.code_filename = d->code_object.filename;
    evp_L.code_firstlineno = d->code_object.firstlineno;
    evp_L.code_linetable = d->code_object.linetable;
    evp_L.code_adaptive = d->code_object.co_code_adaptive;
    evp_L.ob_type = d->pyobject.ob_type;
    return 0;
}
#endif

int
evp_layout_init(char *why, size_t n)
{
    memset(&evp_L, 0, sizeof evp_L);
    evp_L.ts_current_executor = SIZE_MAX;
#if EVP_HAVE_DEBUG_OFFSETS
    if (from_debug_offsets(why, n) < 0)
        return -1;
#else
    evp_L.version = EVP_BUILT_FOR_HEX;
    evp_L.ts_current_frame = SIZE_MAX;
    evp_L.ts_cframe = offsetof(PyThreadState, cframe);
    evp_L.cframe_current_frame = offsetof(_PyCFrame, current_frame);
    evp_L.ts_interp = offsetof(PyThreadState, interp);
    evp_L.frame_previous = offsetof(_PyInterpreterFrame, previous);
    evp_L.frame_executable = offsetof(_PyInterpreterFrame, f_code);
    evp_L.frame_instr_ptr = offsetof(_PyInterpreterFrame, prev_instr);
    evp_L.frame_owner = offsetof(_PyInterpreterFrame, owner);
    evp_L.code_qualname = offsetof(PyCodeObject, co_qualname);
    evp_L.code_filename = offsetof(PyCodeObject, co_filename);
    evp_L.code_firstlineno = offsetof(PyCodeObject, co_firstlineno);
    evp_L.code_linetable = offsetof(PyCodeObject, co_linetable);
    evp_L.code_adaptive = offsetof(PyCodeObject, co_code_adaptive);
    evp_L.ob_type = offsetof(PyObject, ob_type);
    /* the caller's pointer rests on the call's last cache entry while the
     * callee is set up and while it is cleared on return */
    evp_L.ip_in_caches = 1;
    evp_L.deopt = _PyOpcode_Deopt;
    evp_L.caches = _PyOpcode_Caches;
#endif
    /* What the published offsets leave out, the same on 3.11-3.15: */
    /* - the frame's owner: FRAME_OWNED_BY_GENERATOR is 1, and owners from
     *   3 on (FRAME_OWNED_BY_CSTACK on 3.12-3.13, _INTERPRETER and _CSTACK
     *   on 3.14, _INTERPRETER on 3.15) are no Python frame; */
    evp_L.owner_generator = 1;
    evp_L.owner_not_python = 3;
    /* - a frame's code is a stack reference from 3.14 on, its tag in the
     *   low bits (1 bit on 3.14, 2 on 3.15); an object is 8-aligned; */
    evp_L.executable_mask = ~(uintptr_t)7;
    /* - the public struct: the first traceable instruction, the size in
     *   code units, the type; */
    evp_L.code_firsttraceable = offsetof(PyCodeObject, _co_firsttraceable);
    evp_L.code_size = offsetof(PyVarObject, ob_size);
    evp_L.code_type = &PyCode_Type;
    /* - the tier-2 executor a thread runs. */
#if EVP_HAVE_TIER2
    evp_L.ts_current_executor = offsetof(PyThreadState, current_executor);
#endif
#if EVP_JIT_ADDRESS_QUERY
    address_in_jit = (int (*)(PyInterpreterState *, uintptr_t))dlsym(
        RTLD_DEFAULT, "_PyJIT_AddressInJitCode");
    jit_how = address_in_jit != NULL
                  ? "current_executor and _PyJIT_AddressInJitCode"
                  : "none: the interpreter was built without the JIT";
#elif EVP_JIT_EXECUTOR_LISTS
    jit_how = "current_executor and the executor lists";
#endif
    return 0;
}

#if EVP_JIT_EXECUTOR_LISTS
/* 3.14: does an executor of the list from HEAD hold PC? */
static int
in_executor_list(const _PyExecutorObject *e, uintptr_t pc)
{
    /* the bound guards against a damaged list, never met otherwise */
    for (unsigned i = 0; e != NULL && i < (1u << 16);
         e = e->vm_data.links.next, i++) {
        uintptr_t lo = (uintptr_t)e->jit_code;
        if (lo != 0 && pc >= lo && pc - lo < e->jit_size)
            return 1;
    }
    return 0;
}
#endif

int
evp_layout_jit(const void *ts, uintptr_t pc)
{
    if (evp_L.ts_current_executor == SIZE_MAX)
        return 0;
    const void *ex =
        *(const void *const *)((const char *)ts + evp_L.ts_current_executor);
    if (ex == NULL)
        return 0;
#if EVP_JIT_ADDRESS_QUERY
    PyInterpreterState *interp =
        *(PyInterpreterState *const *)((const char *)ts + evp_L.ts_interp);
    if (address_in_jit != NULL && pc != 0 && address_in_jit(interp, pc))
        return 2;
#elif EVP_JIT_EXECUTOR_LISTS
    const PyInterpreterState *interp =
        *(PyInterpreterState *const *)((const char *)ts + evp_L.ts_interp);
    if (pc != 0 && (in_executor_list(interp->executor_list_head, pc) ||
                    in_executor_list(interp->executor_deletion_list_head, pc)))
        return 2;
#else
    (void)pc;
#endif
    return 1;
}

const char *
evp_layout_jit_how(void)
{
    return jit_how;
}
