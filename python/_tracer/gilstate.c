/*
 * evalprof._tracer: does a thread hold the GIL?  Read from the signal
 * handler of the sampled mode (sample.c), so it only reads memory.
 *
 * The answer lives in the interpreter's internal state, whose headers
 * only compile with Py_BUILD_CORE defined before Python.h; this file is
 * apart so that no other code of the extension is built that way.  It
 * calls no Python function.
 *
 *   3.11  _PyRuntime.gilstate.tstate_current: the thread state holding
 *         the GIL (NULL while it is released);
 *   3.12  the interpreter's GIL: locked, and its last holder is TS;
 *   3.13+ TS's own state: _Py_THREAD_ATTACHED while it holds the GIL.
 *
 * (The reads themselves are version.h's EVP_GIL_HELD and EVP_GIL_LOCK.)
 *
 * And where the GIL lies, for a thread without it: one blocked in a futex
 * wait on a word of the GIL (its mutex, its condition variables) is
 * waiting to take it.  3.11 has one, in _PyRuntime.ceval; 3.12+ one for
 * each interpreter that has its own, which interp->ceval.gil points to.
 */
#define Py_BUILD_CORE 1
#include "version.h"
#include "internal/pycore_pystate.h"
#include "internal/pycore_interp.h"

int evp_sample_gil_held(PyThreadState *ts);
const void *evp_sample_gil_lock(PyThreadState *ts, size_t *size);

int
evp_sample_gil_held(PyThreadState *ts)
{
    return EVP_GIL_HELD(ts);
}

const void *
evp_sample_gil_lock(PyThreadState *ts, size_t *size)
{
    *size = sizeof(struct _gil_runtime_state);
    return EVP_GIL_LOCK(ts);
}
