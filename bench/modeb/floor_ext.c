/*
 * _floor: what the interpreter's own machinery costs for the events
 * evalprof's ops mode asks for, with nothing recorded (bench/modeb).
 *
 *   noop        a callable that does nothing, called through vectorcall
 *               as evalprof's sys.monitoring callbacks are
 *   hook()      install a PEP 523 frame hook that only calls the default
 *               eval function, as evalprof's does before recording
 *   tsc_ns(n)   the mean cost of one TSC read, in ns, over N reads
 *
 * floor.py --calls uses the first two; run.py prints the third beside the
 * events a trace holds, so that ops mode's time over the floor splits into
 * the interpreter's part, the clock's part and the rest.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

typedef struct {
    PyObject_HEAD vectorcallfunc vectorcall;
} Noop;

static PyObject *noop_call(PyObject *self, PyObject *const *args, size_t n,
                           PyObject *kw)
{
    (void)self, (void)args, (void)n, (void)kw;
    Py_RETURN_NONE;
}

static PyTypeObject NoopType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_floor.Noop",
    .tp_basicsize = sizeof(Noop),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Noop, vectorcall),
    .tp_call = PyVectorcall_Call,
};

static PyObject *frame_hook(PyThreadState *ts, struct _PyInterpreterFrame *f,
                            int exc)
{
    return _PyEval_EvalFrameDefault(ts, f, exc);
}

static PyObject *hook(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), frame_hook);
    Py_RETURN_NONE;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static PyObject *tsc_ns(PyObject *m, PyObject *arg)
{
    (void)m;
    long n = PyLong_AsLong(arg);
    if (n <= 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "tsc_ns: N must be positive");
        return NULL;
    }
#if defined(__x86_64__) || defined(__i386__)
    volatile unsigned long long sink = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        sink += __rdtsc();
    double t1 = now_ns();
    (void)sink;
    return PyFloat_FromDouble((t1 - t0) / (double)n);
#else
    Py_RETURN_NONE;
#endif
}

static PyMethodDef methods[] = {
    {"hook", hook, METH_NOARGS, "Install a do-nothing PEP 523 frame hook."},
    {"tsc_ns", tsc_ns, METH_O, "Mean ns of one TSC read over N reads."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_floor",
    .m_doc = "The interpreter's price for evalprof's events, nothing "
             "recorded.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__floor(void);

PyMODINIT_FUNC PyInit__floor(void)
{
    if (PyType_Ready(&NoopType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Noop *o = PyObject_New(Noop, &NoopType);
    if (o == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    o->vectorcall = noop_call;
    if (PyModule_AddObject(m, "noop", (PyObject *)o) < 0) {
        Py_DECREF(o);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
