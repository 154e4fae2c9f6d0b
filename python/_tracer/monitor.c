/*
 * CPython 3.12 and 3.13: op, exception and C call events through
 * sys.monitoring (PEP 669), with the callbacks written in C.
 *
 * sys.monitoring calls a registered callable through vectorcall, so a C
 * callable receives the event's arguments as an array with no tuple, no
 * frame object and no Python code in between:
 *
 *   INSTRUCTION (code, offset)            -> op: the decoded instruction at
 *                                            offset (registry.c);
 *   CALL (code, offset, callable, arg0)   -> c call, when the callable is a
 *                                            builtin function or method or
 *                                            a method descriptor;
 *   C_RETURN / C_RAISE (same arguments)   -> c return / c raise, same test;
 *   RAISE / RERAISE (code, offset, exc)   -> loop exception.
 *
 * CALL fires for every call and, with a PEP 523 hook installed, C_RETURN
 * fires after Python calls too; the same callable test on both sides
 * keeps c call and c return paired.  The events are global (every thread,
 * every code object, including frames already running: sys.monitoring
 * instruments them when the events are set); with threads=False the
 * callbacks drop other threads' events.  While INSTRUCTION events are on,
 * the interpreter runs its generic instructions, so ops are base
 * instructions.
 *
 * The tool id is 4 or 3 when free (ids no standard tool claims), so that a
 * traced program can still use a debugger, coverage or cProfile through
 * sys.monitoring; else the profiler's (2), else the optimizer's (5).
 */
#include "tracer.h"

#if EVP_HAVE_MONITORING

/*
 * The callbacks are objects of a small type whose vectorcall slot is the
 * callback itself: sys.monitoring calls it directly, without a builtin
 * function's wrapper (argument-kind dispatch, recursion check) in between.
 */
typedef struct {
    PyObject_HEAD vectorcallfunc vectorcall;
    const char *name;
} CallbackObject;

/*
 * The slow path of on_instruction: the thread's and the code's checks,
 * the decoding, and the cache that lets the next events of the same code
 * skip them.  Returns the instructions (NULL: nothing to record).
 */
static const struct evp_op_slot *
op_slots_slow(PyObject *code, uint32_t *nunits)
{
    *nunits = 0;
    if (!evp_thread_on(NULL) || !PyCode_Check(code))
        return NULL;
    PyCodeObject *co = (PyCodeObject *)code;
    struct evp_code *c = evp_code_get_cached(co);
    if (EVP_UNLIKELY(c == NULL))
        return NULL;
    if (EVP_UNLIKELY(c->ops == NULL) && !c->ignore &&
        evp_code_decode(co, c) < 0) {
        PyErr_Clear();
        return NULL;
    }
    struct evp_tls *tl = &evp_tls;
    tl->op_code = code;
    tl->op_slots = c->ignore ? NULL : c->ops;
    tl->op_nunits = c->ignore ? 0 : c->nunits;
    tl->op_epoch = evp_code_epoch;
    *nunits = tl->op_nunits;
    return tl->op_slots;
}

/*
 * INSTRUCTION: the hot path of ops mode, once per instruction.  Consecutive
 * instructions mostly run in one code object: a hit in the thread's cache
 * goes straight from (code, offset) to the record.
 */
static PyObject *
on_instruction(PyObject *cb, PyObject *const *args, size_t nargsf,
               PyObject *kwnames)
{
    if (EVP_UNLIKELY(PyVectorcall_NARGS(nargsf) < 2))
        Py_RETURN_NONE;
    struct evp_tls *tl = &evp_tls;
    const struct evp_op_slot *ops;
    uint32_t n;
    if (EVP_LIKELY(args[0] == tl->op_code && tl->op_epoch == evp_code_epoch)) {
        ops = tl->op_slots;
        n = tl->op_nunits;
    }
    else {
        ops = op_slots_slow(args[0], &n);
    }
    PyObject *off = args[1];
    size_t unit;
    if (EVP_LIKELY(Py_IS_TYPE(off, &PyLong_Type) &&
                   PyUnstable_Long_IsCompact((PyLongObject *)off)))
        unit = (size_t)PyUnstable_Long_CompactValue((PyLongObject *)off) / 2;
    else if ((unit = (size_t)PyLong_AsSsize_t(off) / 2, PyErr_Occurred()))
        PyErr_Clear();
    if (EVP_LIKELY(unit < n))
        evp_rec_op(ops[unit].opcode, ops[unit].oparg);
    Py_RETURN_NONE;
}

/*
 * INSTRUCTION with lines: the same, recording op at events (the code unit
 * travels with the op), and the code's line table the first time the
 * code is seen in the session.  A callback of its own, so that plain ops
 * pay nothing for it.
 */
static PyObject *
on_instruction_lines(PyObject *cb, PyObject *const *args, size_t nargsf,
                     PyObject *kwnames)
{
    struct evp_tls *tl = &evp_tls;
    if (EVP_UNLIKELY(PyVectorcall_NARGS(nargsf) < 2))
        Py_RETURN_NONE;
    int hit = args[0] == tl->op_code && tl->op_epoch == evp_code_epoch;
    uint32_t n = tl->op_nunits;
    const struct evp_op_slot *ops =
        hit ? tl->op_slots : op_slots_slow(args[0], &n);
    if (!hit && ops != NULL)
        evp_code_lines((PyCodeObject *)args[0],
                       evp_code_get_cached((PyCodeObject *)args[0]));
    size_t unit = (size_t)PyLong_AsSsize_t(args[1]) / 2;
    if (PyErr_Occurred())
        PyErr_Clear();
    else if (EVP_LIKELY(unit < n && unit < (1u << 24)) &&
             evp_rec_wants(EVP_EV_OP_AT))
        evp_rec_emit(EVP_EV_OP_AT, ops[unit].opcode,
                     (uint32_t)unit << 8 | (ops[unit].oparg & 0xff));
    Py_RETURN_NONE;
}

/* Events in evalprof's own frames are left out. */
static inline int
ignored(PyObject *code)
{
    if (!PyCode_Check(code))
        return 0;
    struct evp_code *c = evp_code_get_cached((PyCodeObject *)code);
    return c != NULL && c->ignore;
}

/* Not a C function (the Python functions and classes most calls reach):
 * no C call event.  Exact types first, the subtype walk last. */
static inline int
not_cfunc(PyObject *callable)
{
    PyTypeObject *t = Py_TYPE(callable);
    if (EVP_LIKELY(t == &PyCFunction_Type || t == &PyMethodDescr_Type ||
                   t == &PyCMethod_Type))
        return 0;
    return t == &PyFunction_Type || t == &PyMethod_Type ||
           !PyCFunction_Check(callable);
}

static inline PyObject *
c_event(unsigned kind, PyObject *const *args, size_t nargsf)
{
    if (EVP_UNLIKELY(PyVectorcall_NARGS(nargsf) < 3) || not_cfunc(args[2]) ||
        !evp_thread_on(NULL))
        Py_RETURN_NONE;
    if (ignored(args[0]))
        Py_RETURN_NONE;
    uint32_t id = evp_cfunc_id(args[2]);
    if (id)
        evp_rec_event(kind, id);
    Py_RETURN_NONE;
}

static PyObject *
on_call(PyObject *cb, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return c_event(EVP_EV_C_CALL, args, nargsf);
}

static PyObject *
on_c_return(PyObject *cb, PyObject *const *args, size_t nargsf,
            PyObject *kwnames)
{
    return c_event(EVP_EV_C_RETURN, args, nargsf);
}

static PyObject *
on_c_raise(PyObject *cb, PyObject *const *args, size_t nargsf,
           PyObject *kwnames)
{
    return c_event(EVP_EV_C_RAISE, args, nargsf);
}

static PyObject *
on_raise(PyObject *cb, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) >= 1 && evp_thread_on(NULL) &&
        !ignored(args[0]))
        evp_rec_event(EVP_EV_LOOP_EXCEPTION, 0);
    Py_RETURN_NONE;
}

static PyObject *
callback_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<evalprof %s callback>",
                                ((CallbackObject *)self)->name);
}

static PyTypeObject CallbackType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "evalprof._tracer.Callback",
    .tp_basicsize = sizeof(CallbackObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(CallbackObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = callback_repr,
    .tp_doc = "A sys.monitoring callback of evalprof, written in C.",
};

struct callback {
    const char *event; /* name in sys.monitoring.events */
    int with_ops;      /* 1: only for ops without lines, 2: with lines */
    vectorcallfunc fn;
};

static const struct callback callbacks[] = {
    {"INSTRUCTION", 1, on_instruction},
    {"INSTRUCTION", 2, on_instruction_lines},
    {"CALL", 0, on_call},
    {"C_RETURN", 0, on_c_return},
    {"C_RAISE", 0, on_c_raise},
    {"RAISE", 0, on_raise},
    {"RERAISE", 0, on_raise},
};
#define NCALLBACKS (sizeof callbacks / sizeof callbacks[0])

static PyObject *
new_callback(const struct callback *cb)
{
    if (!(CallbackType.tp_flags & Py_TPFLAGS_READY) &&
        PyType_Ready(&CallbackType) < 0)
        return NULL;
    CallbackObject *o = PyObject_New(CallbackObject, &CallbackType);
    if (o == NULL)
        return NULL;
    o->vectorcall = cb->fn;
    o->name = cb->event;
    return (PyObject *)o;
}

static PyObject *
monitoring(void)
{
    PyObject *sys = PyImport_ImportModule("sys");
    if (sys == NULL)
        return NULL;
    PyObject *m = PyObject_GetAttrString(sys, "monitoring");
    Py_DECREF(sys);
    return m;
}

/* sys.monitoring.events.NAME as an int, or -1 with an exception. */
static long
event_bit(PyObject *mon, const char *name)
{
    PyObject *events = PyObject_GetAttrString(mon, "events");
    if (events == NULL)
        return -1;
    PyObject *v = PyObject_GetAttrString(events, name);
    Py_DECREF(events);
    if (v == NULL)
        return -1;
    long b = PyLong_AsLong(v);
    Py_DECREF(v);
    return b;
}

static int
pick_tool(PyObject *mon)
{
    static const int order[] = {4, 3, 2, 5};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        PyObject *who = PyObject_CallMethod(mon, "get_tool", "i", order[i]);
        if (who == NULL)
            return -1;
        int free_ = who == Py_None;
        Py_DECREF(who);
        if (!free_)
            continue;
        PyObject *r = PyObject_CallMethod(mon, "use_tool_id", "is", order[i],
                                          "evalprof");
        if (r == NULL)
            return -1;
        Py_DECREF(r);
        return order[i];
    }
    PyErr_SetString(PyExc_RuntimeError,
                    "evalprof: every sys.monitoring tool id is in use");
    return -1;
}

int
evp_monitor_install(void)
{
    evp_precise_exceptions = 1;
    evp_code_epoch++; /* every thread's cached code of an older session */
    PyObject *mon = monitoring();
    if (mon == NULL)
        return -1;
    int tool = pick_tool(mon);
    if (tool < 0) {
        Py_DECREF(mon);
        return -1;
    }
    evp_S.tool_id = tool;
    long mask = 0;
    for (size_t i = 0; i < NCALLBACKS; i++) {
        const struct callback *cb = &callbacks[i];
        if (cb->with_ops && (!evp_S.ops || cb->with_ops != 1 + evp_S.lines))
            continue;
        long bit = event_bit(mon, cb->event);
        if (bit < 0)
            goto fail;
        PyObject *fn = new_callback(cb);
        if (fn == NULL)
            goto fail;
        PyObject *r = PyObject_CallMethod(mon, "register_callback", "ilO",
                                          tool, bit, fn);
        Py_DECREF(fn);
        if (r == NULL)
            goto fail;
        Py_DECREF(r);
        mask |= bit;
    }
    PyObject *r = PyObject_CallMethod(mon, "set_events", "il", tool, mask);
    if (r == NULL)
        goto fail;
    Py_DECREF(r);
    Py_DECREF(mon);
    return 0;
fail:
    Py_DECREF(mon);
    evp_monitor_remove();
    return -1;
}

void
evp_monitor_remove(void)
{
    int tool = evp_S.tool_id;
    if (tool < 0)
        return;
    evp_S.tool_id = -1;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *mon = monitoring();
    if (mon != NULL) {
        PyObject *r = PyObject_CallMethod(mon, "set_events", "ii", tool, 0);
        Py_XDECREF(r);
        PyErr_Clear();
        for (size_t i = 0; i < NCALLBACKS; i++) {
            long bit = event_bit(mon, callbacks[i].event);
            if (bit < 0) {
                PyErr_Clear();
                continue;
            }
            r = PyObject_CallMethod(mon, "register_callback", "ilO", tool, bit,
                                    Py_None);
            Py_XDECREF(r);
            PyErr_Clear();
        }
        r = PyObject_CallMethod(mon, "free_tool_id", "i", tool);
        Py_XDECREF(r);
        Py_DECREF(mon);
    }
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

#endif /* EVP_HAVE_MONITORING */
