/*
 * CPython 3.11: op, exception and C call events through the C-level trace
 * and profile functions (PyEval_SetTrace / PyEval_SetProfile).
 *
 * With a trace function set and f_trace_opcodes on a frame, 3.11 calls the
 * function with PyTrace_OPCODE before each instruction of that frame
 * (from DO_TRACING; every instruction then runs in its generic form, so
 * the executed opcode is the base instruction).  The instruction is at the
 * frame's prev_instr; its code unit may hold a quickened form, which the
 * session's deopt table maps back.  Two 3.11 details:
 *
 *   - an instruction after EXTENDED_ARG is dispatched without tracing, so
 *     at an EXTENDED_ARG the whole prefix run and the instruction it
 *     extends are reported, the latter with the folded oparg (3.12+
 *     report each of them separately, with the same numbers);
 *   - RESUME is never reported as an opcode (it fires PyTrace_CALL
 *     instead; 3.12+ do not report it either).
 *
 * PyTrace_CALL turns opcode events on (and line events off) for each new
 * frame; PyTrace_EXCEPTION is the frame's "loop exception" (3.11 calls it
 * where the error path starts in each frame an exception reaches).
 * Without op events there is no trace function (with it, every
 * instruction would also go through the line-event check: more than
 * cProfile costs), and the eval hook reports frames left by an exception
 * instead.
 *
 * The profile function sees calls of builtin functions and methods
 * (PyTrace_C_CALL, _C_RETURN, _C_EXCEPTION), the same set cProfile
 * counts.  Both functions are per thread: start() sets them on the
 * starting thread (every thread with threads=True), and a thread that
 * appears later gets them at its first frame (evp_thread_setup).  They
 * share their slots with sys.settrace and sys.setprofile, and never take
 * a slot the program uses: while the program has its own tracer or
 * profiler set, that thread's ops or C calls are not seen; once it
 * removes it, the next frame takes the slot back (evp_legacy_thread).
 */
#include "tracer.h"

#if !EVP_HAVE_MONITORING

/* Events in evalprof's own frames are left out. */
static inline int
ignored(PyFrameObject *frame)
{
    struct evp_code *c = evp_code_get(frame->f_frame->f_code);
    return c != NULL && c->ignore;
}

/* Report the EXTENDED_ARG run starting at IP and the instruction after. */
static void
emit_extended(const _Py_CODEUNIT *ip)
{
    uint32_t arg = _Py_OPARG(*ip);
    evp_rec_op(EXTENDED_ARG, arg);
    for (int i = 0; i < 4; i++) {
        ip++;
        unsigned op = evp_S.deopt[_Py_OPCODE(*ip)];
        arg = (arg << 8) | _Py_OPARG(*ip);
        evp_rec_op(op, arg);
        if (op != EXTENDED_ARG)
            break;
    }
}

static int
trace_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    if (EVP_UNLIKELY(evp_tls.session != evp_S.id))
        evp_thread_setup(NULL); /* a thread running since before start() */
    if (EVP_LIKELY(what == PyTrace_OPCODE)) {
        const _Py_CODEUNIT *ip = frame->f_frame->prev_instr;
        unsigned op = evp_S.deopt[_Py_OPCODE(*ip)];
        if (EVP_UNLIKELY(op == EXTENDED_ARG))
            emit_extended(ip);
        else
            evp_rec_op(op, _Py_OPARG(*ip));
        return 0;
    }
    switch (what) {
    case PyTrace_CALL:
        frame->f_trace_opcodes = (char)(evp_S.ops && !ignored(frame));
        frame->f_trace_lines = 0;
        break;
    case PyTrace_EXCEPTION:
        if (!ignored(frame))
            evp_rec_event(EVP_EV_LOOP_EXCEPTION, 0);
        break;
    default:
        break;
    }
    return 0;
}

/* An op at event: the instruction at IP with its code unit in CODE. */
static inline void
emit_at(PyCodeObject *code, const _Py_CODEUNIT *ip, unsigned op, uint32_t arg)
{
    size_t unit = (size_t)(ip - _PyCode_CODE(code));
    if (unit < (1u << 24))
        evp_rec_emit(EVP_EV_OP_AT, op, (uint32_t)unit << 8 | (arg & 0xff));
}

/*
 * trace_fn with lines: op at events, and each code's line table when its
 * first frame starts.  A function of its own, so that plain ops pay
 * nothing for it.
 */
static int
trace_fn_lines(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    if (EVP_UNLIKELY(evp_tls.session != evp_S.id))
        evp_thread_setup(NULL);
    PyCodeObject *code = frame->f_frame->f_code;
    if (EVP_LIKELY(what == PyTrace_OPCODE)) {
        if (!evp_rec_wants(EVP_EV_OP_AT))
            return 0;
        const _Py_CODEUNIT *ip = frame->f_frame->prev_instr;
        unsigned op = evp_S.deopt[_Py_OPCODE(*ip)];
        uint32_t a = _Py_OPARG(*ip);
        emit_at(code, ip, op, a);
        /* As emit_extended: the instruction after a prefix is not
         * traced. */
        for (int i = 0; op == EXTENDED_ARG && i < 4; i++) {
            ip++;
            op = evp_S.deopt[_Py_OPCODE(*ip)];
            a = (a << 8) | _Py_OPARG(*ip);
            emit_at(code, ip, op, a);
        }
        return 0;
    }
    if (what == PyTrace_CALL) {
        struct evp_code *c = evp_code_get(code);
        if (c != NULL && !c->ignore)
            evp_code_lines(code, c);
    }
    return trace_fn(obj, frame, what, arg);
}

static int
profile_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    unsigned kind;
    switch (what) {
    case PyTrace_C_CALL:
        kind = EVP_EV_C_CALL;
        break;
    case PyTrace_C_RETURN:
        kind = EVP_EV_C_RETURN;
        break;
    case PyTrace_C_EXCEPTION:
        kind = EVP_EV_C_RAISE;
        break;
    default:
        return 0;
    }
    if (EVP_UNLIKELY(evp_tls.session != evp_S.id))
        evp_thread_setup(NULL);
    if (ignored(frame))
        return 0;
    uint32_t id = evp_cfunc_id(arg);
    if (id)
        evp_rec_event(kind, id);
    return 0;
}

/*
 * Frames that were running before the trace function was set never saw a
 * PyTrace_CALL: give them the flags it would have set (ON), or take them
 * back (removing).
 */
static void
set_frame_flags(PyThreadState *ts, int on, int removing)
{
    PyFrameObject *f = PyThreadState_GetFrame(ts);
    while (f != NULL) {
        f->f_trace_opcodes = (char)(on && !ignored(f));
        f->f_trace_lines = (char)removing;
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
}

/*
 * Take the trace and profile slots of TS where they are empty: a tracer or
 * profiler the program set itself (a debugger, coverage, cProfile) keeps
 * its slot.  Returns 1 when a slot was left to someone else.
 */
static int
take_slots(PyThreadState *ts)
{
    int foreign = 0;
    if (ts->c_profilefunc == NULL) {
        if (_PyEval_SetProfile(ts, profile_fn, NULL) < 0)
            PyErr_Clear();
    }
    else if (ts->c_profilefunc != profile_fn) {
        foreign = 1;
    }
    if (!evp_S.ops)
        return foreign;
    if (ts->c_tracefunc == NULL) {
        if (_PyEval_SetTrace(ts, evp_S.lines ? trace_fn_lines : trace_fn,
                             NULL) < 0)
            PyErr_Clear();
        else
            set_frame_flags(ts, 1, 0);
    }
    else if (ts->c_tracefunc != trace_fn &&
             ts->c_tracefunc != trace_fn_lines) {
        foreign = 1;
    }
    return foreign;
}

void
evp_legacy_thread(PyThreadState *ts)
{
    take_slots(ts);
}

int
evp_legacy_install(void)
{
    evp_precise_exceptions = evp_S.ops;
    int foreign = 0;
    if (!evp_S.all_threads) {
        foreign = take_slots(PyThreadState_Get());
    }
    else {
        /* Threads already running: from here, under the GIL. */
        for (PyThreadState *ts = PyInterpreterState_ThreadHead(evp_S.interp);
             ts != NULL; ts = PyThreadState_Next(ts))
            foreign |= take_slots(ts);
    }
    if (foreign)
        PySys_WriteStderr("evalprof: the program has its own trace or profile "
                          "function set (sys.settrace, sys.setprofile): "
                          "op or C call events are missing while it is\n");
    return 0;
}

void
evp_legacy_remove(void)
{
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(evp_S.interp);
         ts != NULL; ts = PyThreadState_Next(ts)) {
        if (ts->c_tracefunc == trace_fn || ts->c_tracefunc == trace_fn_lines) {
            if (_PyEval_SetTrace(ts, NULL, NULL) < 0)
                PyErr_Clear();
            set_frame_flags(ts, 0, 1);
        }
        if (ts->c_profilefunc == profile_fn &&
            _PyEval_SetProfile(ts, NULL, NULL) < 0)
            PyErr_Clear();
    }
}

#endif /* !EVP_HAVE_MONITORING */
