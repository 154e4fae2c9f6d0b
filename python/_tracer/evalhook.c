/*
 * The PEP 523 frame-evaluation hook: enter, exit, resume, suspend and
 * runtime other for every Python frame the interpreter evaluates.
 *
 * While a hook is installed the interpreter stops inlining Python-to-Python
 * calls (3.11: CALL checks eval_frame and the CALL_PY_* forms deoptimise;
 * 3.12/3.13: the same checks, _CHECK_PEP_523 in 3.13), so every frame,
 * including every generator resumption, passes through evp_eval_frame.
 * The hook names the frame's function (a cached id, see registry.c), hands
 * the frame to the wrapped eval function and looks at how it came back:
 *
 *   - a frame owned by a generator or coroutine is "resume" unless its
 *     resumption point is right after RETURN_GENERATOR (its first start,
 *     which is "enter"); it ends in "suspend" when the generator is left
 *     suspended (yield, await), else in "exit";
 *   - the call that only creates a generator (the function's frame runs
 *     its prologue and RETURN_GENERATOR) is not reported: its time stays
 *     with the caller, as in cProfile and sys.monitoring;
 *   - every exit and suspend is followed by "runtime other", the time
 *     spent back in the runtime until the next event;
 *   - exceptions are reported where they are raised, by legacy.c and
 *     monitor.c; only where no such hook is active (3.11 without op
 *     tracing, whose trace function would cost more than cProfile) does a
 *     frame left by an exception get a "loop exception" here, just before
 *     its exit.
 *
 * Because calls are no longer inlined, each Python call now also nests a C
 * call of the eval function.  3.12 and 3.13 count those against the C
 * recursion limit (1500 in 3.12; each entry of _PyEval_EvalFrameDefault
 * takes two units), so a program that recurses 5,000 deep untraced would
 * fail traced: the hook gives each evaluation its C recursion units back.
 * In exchange it watches the real C stack: near the end of the thread's
 * stack it lets the interpreter raise RecursionError instead of
 * overflowing.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "tracer.h"

/* Keep this much C stack free (at least) below the deepest traced frame. */
#define STACK_MARGIN (256 * 1024)

/* C recursion units one entry of the eval function takes (3.12, 3.13:
 * PY_EVAL_C_STACK_UNITS in Python/ceval.c; measured the same on 3.12.1,
 * 3.13.0). */
#define EVAL_C_UNITS 2

int evp_precise_exceptions;

static void
find_stack_low(struct evp_tls *tl)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        goto none;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    if (rc != 0 || size == 0)
        goto none;
    size_t margin = size / 16 > STACK_MARGIN ? size / 16 : STACK_MARGIN;
    if (margin >= size)
        goto none;
    tl->stack_low = (char *)addr + margin;
    return;
none:
    tl->stack_low = (char *)1; /* unknown: never guard */
}

static inline int
stack_nearly_full(void)
{
    struct evp_tls *tl = &evp_tls;
    if (EVP_UNLIKELY(tl->stack_low == NULL))
        find_stack_low(tl);
    return (char *)__builtin_frame_address(0) < tl->stack_low;
}

/*
 * Evaluate F with the wrapped eval function, keeping the interpreter's
 * recursion accounting what it would be without the hook.
 */
static inline PyObject *
eval_inner(PyThreadState *ts, struct _PyInterpreterFrame *f, int throwflag)
{
    if (!EVP_INTERPRETER_WATCHES_C_STACK &&
        EVP_UNLIKELY(stack_nearly_full())) {
        /* Make the interpreter's own check fail: it raises RecursionError
         * and unwinds the frame cleanly. */
        return evp_eval_exhausted(evp_S.inner, ts, f, throwflag);
    }
    /* 3.11 counts every Python frame once, inlined or not; 3.12 and 3.13
     * get their units back; 3.14+ count none. */
    return evp_eval_units_back(evp_S.inner, ts, f, throwflag, EVAL_C_UNITS);
}

static PyObject *
evp_eval_frame(PyThreadState *ts, struct _PyInterpreterFrame *f, int throwflag)
{
    uint64_t session = evp_S.id;
    if (EVP_UNLIKELY(!evp_S.active) || !evp_thread_on(ts))
        return eval_inner(ts, f, throwflag);

    PyCodeObject *co = evp_frame_code(f);
    struct evp_code *c = PyCode_Check(co) ? evp_code_get(co) : NULL;
    if (EVP_UNLIKELY(c == NULL || c->func == 0 || c->ignore))
        return eval_inner(ts, f, throwflag);
    uint32_t func = c->func;

    PyGenObject *gen = NULL;
    unsigned enter = EVP_EV_ENTER;
    if (evp_frame_is_gen(f)) {
        gen = evp_frame_gen(f);
        if (!evp_gen_first_start(f))
            enter = EVP_EV_RESUME;
    }
    else if (c->creates_gen) {
        /* Only creates the generator (RETURN_GENERATOR): not a frame of
         * its own for the reports. */
        return eval_inner(ts, f, throwflag);
    }
    if (EVP_UNLIKELY(!evp_tls.named))
        evp_thread_name_retry();
#if !EVP_HAVE_MONITORING
    if (EVP_UNLIKELY(ts->c_profilefunc == NULL ||
                     (evp_S.ops && ts->c_tracefunc == NULL)))
        evp_legacy_thread(ts);
#endif

    evp_rec_event(enter, func);
    PyObject *r = eval_inner(ts, f, throwflag);
    if (EVP_LIKELY(session == evp_S.id)) {
        if (r == NULL && !evp_precise_exceptions)
            evp_rec_event(EVP_EV_LOOP_EXCEPTION, 0);
        evp_rec_event(gen != NULL && evp_gen_suspended(gen) ? EVP_EV_SUSPEND
                                                            : EVP_EV_EXIT,
                      func);
        evp_rec_event(EVP_EV_RUNTIME_OTHER, 0);
    }
    return r;
}

int
evp_evalhook_install(void)
{
    PyInterpreterState *interp = evp_S.interp;
    _PyFrameEvalFunction cur = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (cur == evp_eval_frame)
        return 0;
    /* Wrap whatever is installed (another PEP 523 user, or the default). */
    evp_S.inner = cur ? cur : _PyEval_EvalFrameDefault;
    _PyInterpreterState_SetEvalFrameFunc(interp, evp_eval_frame);
    return 0;
}

void
evp_evalhook_remove(void)
{
    PyInterpreterState *interp = evp_S.interp;
    if (_PyInterpreterState_GetEvalFrameFunc(interp) == evp_eval_frame)
        _PyInterpreterState_SetEvalFrameFunc(interp, evp_S.inner);
    /* Frames still inside the hook keep calling evp_S.inner: leave it. */
}
