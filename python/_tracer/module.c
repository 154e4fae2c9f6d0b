/*
 * evalprof._tracer: the module the evalprof package drives.
 *
 *   start(path, ops=True, threads=True, follow_fork=True, opcodes=(),
 *         meta=None, buffer_events=0, quiet=False, ignore_prefix=None,
 *         lines=False, sample=False, rate=0, cpu_clock=True, max_depth=0)
 *   stop() -> dict of figures (events, dropped, bytes, chunks, error,
 *             end_error, path: the file written, PATH or PATH.<pid>)
 *   active() -> bool
 *   thread_name(name)  name the calling thread's stream
 *
 * start() opens a recorder session (mode B: producer "extension", and the
 * kinds this producer can emit), records the metadata and opcode table the
 * package computed, emits init, then installs the hooks: the op, exception
 * and C call hooks of this version (legacy.c or monitor.c) and the PEP 523
 * frame hook (evalhook.c).  stop() removes them, emits fini and closes the
 * trace.  With sample=True (rate, cpu_clock, max_depth) no hook is
 * installed: sample.c samples the threads instead, and stop() adds the
 * sampling figures ("sampling": samples, dropped, missed, threads).
 * Python code normally goes through evalprof.start()/stop(),
 * which add the metadata, the exit handler and fork handling.
 *
 * Threads: each thread sets itself up on its first event of a session
 * (evp_thread_setup): it finds its threading name, attaches to the
 * recorder under that name and, on 3.11, gets the trace and profile
 * functions.  With threads=False only the thread that called start() is
 * traced; the others are counted, and stop() keeps their number as the
 * threads.untraced metadata (and in its figures, untraced_threads).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer.h"

struct evp_session evp_S = {.extra_index = -1, .tool_id = -1};
__thread struct evp_tls evp_tls __attribute__((tls_model("initial-exec")));

/* ---- threads ------------------------------------------------------------ */

int
evp_python_thread_name(char *buf, size_t n)
{
    int found = 0;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *name = PyUnicode_FromString("threading");
    PyObject *threading = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    if (threading == NULL)
        goto out;
    PyObject *active = PyObject_GetAttrString(threading, "_active");
    Py_DECREF(threading);
    if (active == NULL || !PyDict_Check(active)) {
        Py_XDECREF(active);
        goto out;
    }
    PyObject *key = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
    PyObject *t = key ? PyDict_GetItemWithError(active, key) : NULL;
    Py_XDECREF(key);
    Py_XINCREF(t);
    Py_DECREF(active);
    if (t == NULL)
        goto out;
    PyObject *tn = PyObject_GetAttrString(t, "_name");
    Py_DECREF(t);
    if (tn != NULL && PyUnicode_Check(tn)) {
        const char *u = PyUnicode_AsUTF8(tn);
        if (u != NULL) {
            snprintf(buf, n, "%s", u);
            found = 1;
        }
    }
    Py_XDECREF(tn);
out:
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return found;
}

/* Attach the calling thread under its Python name when it has one. */
static void
attach_named(struct evp_tls *tl)
{
    char name[256];
    tl->name_tries++;
    if (evp_python_thread_name(name, sizeof name)) {
        tl->named = 1;
        evp_rec_thread_attach(name);
    }
    else if (tl->name_tries >= 64) {
        tl->named = 1; /* give up: "thread <tid>" it stays */
    }
}

void
evp_thread_name_retry(void)
{
    struct evp_tls *tl = &evp_tls;
    if (tl->on)
        attach_named(tl);
    else
        tl->named = 1;
}

void
evp_thread_setup(PyThreadState *ts)
{
    struct evp_tls *tl = &evp_tls;
    tl->session = evp_S.id;
    tl->on = 0;
    tl->named = 1;
    if (!evp_S.active)
        return;
    if (!evp_S.all_threads) {
        evp_S.untraced++; /* the starting thread is set up by start() */
        return;
    }
    tl->on = 1;
    tl->named = 0;
    tl->name_tries = 0;
    attach_named(tl);
#if !EVP_HAVE_MONITORING
    evp_legacy_thread(ts ? ts : PyThreadState_Get());
#else
    (void)ts;
#endif
}

/* ---- start / stop ------------------------------------------------------- */

static int
add_opcodes(PyObject *seq)
{
    for (int i = 0; i < 256; i++)
        evp_S.deopt[i] = (uint8_t)i;
    if (seq == NULL || seq == Py_None)
        return 0;
    PyObject *fast = PySequence_Fast(seq, "opcodes must be a sequence");
    if (fast == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    struct evp_opcode_desc *d = PyMem_Calloc(n ? (size_t)n : 1, sizeof *d);
    if (d == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int op, base;
        const char *name;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "iis", &op,
                              &base, &name)) {
            PyMem_Free(d);
            Py_DECREF(fast);
            return -1;
        }
        if (op < 0 || op > 255 || base < 0 || base > 255)
            continue;
        evp_S.deopt[op] = (uint8_t)base;
        d[k].opcode = (uint16_t)op;
        d[k].base = (uint16_t)base;
        d[k].name = name; /* copied by the recorder */
        k++;
    }
    evp_rec_opcodes(d, (size_t)k);
    evp_sample_call_ops(d, (size_t)k);
    PyMem_Free(d);
    Py_DECREF(fast);
    return 0;
}

static int
add_meta(PyObject *meta)
{
    if (meta == NULL || meta == Py_None)
        return 0;
    if (!PyDict_Check(meta)) {
        PyErr_SetString(PyExc_TypeError, "meta must be a dict of str");
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(meta, &pos, &k, &v)) {
        const char *ks = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
        const char *vs = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
        if (ks == NULL || vs == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "meta must be a dict of str");
            return -1;
        }
        evp_rec_meta(ks, vs);
    }
    return 0;
}

static uint64_t
can_emit(int ops)
{
    uint64_t k = EVP_KIND_BIT(EVP_EV_INIT) | EVP_KIND_BIT(EVP_EV_FINI) |
                 EVP_KIND_BIT(EVP_EV_RUNTIME_OTHER) |
                 EVP_KIND_BIT(EVP_EV_ENTER) | EVP_KIND_BIT(EVP_EV_EXIT) |
                 EVP_KIND_BIT(EVP_EV_LOOP_EXCEPTION) |
                 EVP_KIND_BIT(EVP_EV_C_CALL) | EVP_KIND_BIT(EVP_EV_C_RETURN) |
                 EVP_KIND_BIT(EVP_EV_C_RAISE) | EVP_KIND_BIT(EVP_EV_RESUME) |
                 EVP_KIND_BIT(EVP_EV_SUSPEND);
    if (ops)
        k |= EVP_KIND_BIT(EVP_EV_OP);
    return k;
}

static void
remove_hooks(void)
{
    evp_evalhook_remove();
#if !EVP_HAVE_MONITORING
    evp_legacy_remove();
#else
    evp_monitor_remove();
#endif
}

static PyObject *
tracer_start(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {
        "path",   "ops",           "threads",   "follow_fork",   "opcodes",
        "meta",   "buffer_events", "quiet",     "ignore_prefix", "lines",
        "sample", "rate",          "cpu_clock", "max_depth",     NULL};
    const char *path, *ignore = NULL;
    int ops = 1, threads = 1, follow_fork = 1, quiet = 0, lines = 0;
    int sample = 0, cpu_clock = 1;
    unsigned int buffer_events = 0, rate = 0, max_depth = 0;
    PyObject *opcodes = NULL, *meta = NULL;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "s|pppOOIpzppIpI", kwlist, &path, &ops, &threads,
            &follow_fork, &opcodes, &meta, &buffer_events, &quiet, &ignore,
            &lines, &sample, &rate, &cpu_clock, &max_depth))
        return NULL;
    if (evp_S.active) {
        PyErr_SetString(PyExc_RuntimeError, "evalprof is already tracing");
        return NULL;
    }
    if (evp_registry_init() < 0)
        return NULL;

    struct evp_rec_config cfg = {
        .path = path,
        .producer = EVP_PRODUCER_EXTENSION,
        /* a sampled session emits no events (0 would mean all kinds) */
        .can_emit = sample
                        ? EVP_KIND_BIT(EVP_EV_RECORDER)
                        : can_emit(ops) |
                              (ops && lines ? EVP_KIND_BIT(EVP_EV_OP_AT) : 0),
        .flags = (follow_fork ? EVP_REC_FOLLOW_FORK : 0) |
                 (quiet ? EVP_REC_QUIET : 0),
        .buffer_events = buffer_events,
    };
    int rc = evp_rec_open(&cfg);
    if (rc < 0) {
        if (rc == -EBUSY) {
            PyErr_SetString(PyExc_RuntimeError,
                            "evalprof: a recording is already open in this "
                            "process");
        }
        else if (rc == -EINVAL) {
            /* A FIFO, a socket or a device: EINVAL's own words would
             * not say what is wrong with PATH. */
            PyObject *e = PyObject_CallFunction(
                PyExc_OSError, "iss", EINVAL,
                "not a regular file (a FIFO, a socket or a device)", path);
            if (e != NULL) {
                PyErr_SetObject(PyExc_OSError, e);
                Py_DECREF(e);
            }
        }
        else {
            errno = -rc;
            PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
        }
        return NULL;
    }
    if (add_opcodes(opcodes) < 0 || add_meta(meta) < 0)
        goto fail_open;
    evp_rec_meta("mode", "B");
    evp_rec_meta("tracer.built_for", PY_VERSION);
#if !EVP_HAVE_MONITORING
    const char *hooks =
        ops ? "PEP 523 frame hook; PyEval_SetTrace (PyTrace_OPCODE, "
              "PyTrace_EXCEPTION); PyEval_SetProfile (C calls)"
            : "PEP 523 frame hook; PyEval_SetProfile (C calls)";
#else
    const char *hooks =
        ops ? "PEP 523 frame hook; sys.monitoring (INSTRUCTION, CALL, "
              "C_RETURN, C_RAISE, RAISE, RERAISE)"
            : "PEP 523 frame hook; sys.monitoring (CALL, C_RETURN, "
              "C_RAISE, RAISE, RERAISE)";
#endif
    if (sample)
        hooks = "none: a per-thread timer signal, the thread's frames read "
                "in its handler";
    evp_rec_meta("tracer.hooks", hooks);
    if (sample)
        evp_rec_meta("evalprof.mode", "sample"); /* as mode A says it */

    free(evp_S.ignore_prefix);
    evp_S.ignore_prefix = ignore && *ignore ? strdup(ignore) : NULL;
    evp_S.ignore_len = evp_S.ignore_prefix ? strlen(evp_S.ignore_prefix) : 0;
    evp_S.interp = PyInterpreterState_Get();
    evp_S.ops = ops;
    evp_S.lines = ops && lines;
    evp_S.all_threads = threads;
    evp_S.untraced = 0;
    evp_S.sample = sample;
    evp_S.id++;
    evp_S.active = 1;

    if (sample) {
        /* no hook at all: the threads are sampled */
        if (evp_sample_start(rate, cpu_clock, max_depth, threads) < 0) {
            evp_S.active = 0;
            goto fail_open;
        }
        Py_RETURN_NONE;
    }

    /* The starting thread is always traced. */
    struct evp_tls *tl = &evp_tls;
    tl->session = evp_S.id;
    tl->on = 1;
    tl->named = 0;
    tl->name_tries = 0;
    attach_named(tl);
    evp_rec_event(EVP_EV_INIT, 0);

#if !EVP_HAVE_MONITORING
    if (evp_legacy_install() < 0)
        goto fail_hooks;
#else
    if (evp_monitor_install() < 0)
        goto fail_hooks;
#endif
    if (evp_evalhook_install() < 0)
        goto fail_hooks;
    Py_RETURN_NONE;

fail_hooks:
    remove_hooks();
    evp_S.active = 0;
fail_open:
    evp_rec_close();
    return NULL;
}

static PyObject *
stats_dict(int rc)
{
    struct evp_rec_stats st;
    evp_rec_get_stats(&st);
    const char *path = evp_rec_path();
    return Py_BuildValue(
        "{sKsKsKsKsdsisisz}", "events", (unsigned long long)st.events,
        "dropped", (unsigned long long)st.dropped, "bytes",
        (unsigned long long)st.bytes, "chunks", (unsigned long long)st.chunks,
        "event_cost_ns", st.event_cost_ns, "error", rc < 0 ? -rc : 0,
        "end_error", -st.end_error, "path", path);
}

static PyObject *
tracer_stop(PyObject *self, PyObject *unused)
{
    if (!evp_S.active) {
        PyErr_SetString(PyExc_RuntimeError, "evalprof is not tracing");
        return NULL;
    }
    if (evp_S.sample) {
        evp_sample_stop();
    }
    else {
        remove_hooks();
        evp_rec_event(EVP_EV_FINI, 0);
    }
    evp_S.active = 0;
    if (!evp_S.all_threads && !evp_S.sample) {
        char n[24];
        snprintf(n, sizeof n, "%lu", evp_S.untraced);
        evp_rec_meta("threads.untraced", n);
    }
    int rc = evp_rec_close();
    PyObject *stats = stats_dict(rc);
    if (stats != NULL && evp_S.sample) {
        struct evp_rec_sample_stats ss;
        evp_rec_sample_get_stats(&ss);
        PyObject *d = Py_BuildValue("{sKsKsKsK}", "samples",
                                    (unsigned long long)ss.samples, "dropped",
                                    (unsigned long long)ss.dropped, "missed",
                                    (unsigned long long)ss.missed, "threads",
                                    (unsigned long long)ss.threads);
        if (d == NULL || PyDict_SetItemString(stats, "sampling", d) < 0)
            Py_CLEAR(stats);
        Py_XDECREF(d);
    }
    if (stats != NULL && !evp_S.all_threads && !evp_S.sample) {
        PyObject *n = PyLong_FromUnsignedLong(evp_S.untraced);
        if (n == NULL ||
            PyDict_SetItemString(stats, "untraced_threads", n) < 0)
            Py_CLEAR(stats);
        Py_XDECREF(n);
    }
    return stats;
}

static PyObject *
tracer_active(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(evp_S.active && evp_rec_is_open());
}

/* ARG's UTF-8, or NULL with an exception naming FUNC. */
static const char *
str_arg(PyObject *arg, const char *func)
{
    const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (s == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "%s() needs a str", func);
    return s;
}

static PyObject *
tracer_sample_thread(PyObject *self, PyObject *arg)
{
    const char *name = str_arg(arg, "sample_thread");
    if (name == NULL || evp_sample_thread(name) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
tracer_thread_name(PyObject *self, PyObject *arg)
{
    const char *name = str_arg(arg, "thread_name");
    if (name == NULL)
        return NULL;
    if (evp_S.active && evp_tls.on) {
        evp_tls.named = 1;
        evp_rec_thread_attach(name);
    }
    Py_RETURN_NONE;
}

/* os.fork(): the writer thread is stopped around it (recorder.h). */
static PyObject *
tracer_fork_pause(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(evp_rec_writer_pause());
}

static int
resume_pending(void *unused)
{
    int rc = evp_rec_writer_resume();
    if (rc < 0)
        fprintf(stderr,
                "evalprof: cannot restart the trace writer after fork: %s\n",
                strerror(-rc));
    return 0;
}

/*
 * The after-fork hook itself (called from C, not from Python code): the
 * writer is restarted by a pending call, once os.fork() has returned to
 * the program, because 3.13 counts the threads after running the hooks,
 * and Python code (the CALL of a builtin) would run the pending call.
 */
static PyObject *
tracer_fork_resume(PyObject *self, PyObject *unused)
{
    if (Py_AddPendingCall(resume_pending, NULL) < 0)
        resume_pending(NULL);
    Py_RETURN_NONE;
}

PyMethodDef evp_module_methods[] = {
    {"start", (PyCFunction)(void (*)(void))tracer_start,
     METH_VARARGS | METH_KEYWORDS,
     "start(path, ops=True, threads=True, follow_fork=True, opcodes=(),\n"
     "      meta=None, buffer_events=0, quiet=False, ignore_prefix=None,\n"
     "      lines=False, sample=False, rate=0, cpu_clock=True, max_depth=0)"
     "\n\n"
     "Open the trace PATH and start tracing.  Code from files whose name\n"
     "starts with IGNORE_PREFIX is not traced.  Raises OSError when PATH\n"
     "cannot be created, RuntimeError when already tracing."},
    {"stop", tracer_stop, METH_NOARGS,
     "stop() -> dict\n\nStop tracing, close the trace and return its "
     "figures."},
    {"active", tracer_active, METH_NOARGS, "active() -> bool"},
    {"run_main", (PyCFunction)(void (*)(void))evp_run_main,
     METH_VARARGS | METH_KEYWORDS,
     "run_main(kind, target, skip_first_line=False, alter_argv=True)\n\n"
     "Run the program's __main__ as the interpreter does, with the caller's\n"
     "frames set aside: KIND 'file' (TARGET is the script's path), 'stdin',\n"
     "'code' (TARGET is the source) or 'module' (its name).  Returns after\n"
     "a normal end; otherwise exits the process as the interpreter would."},
    {"fork_pause", tracer_fork_pause, METH_NOARGS,
     "fork_pause() -> bool\n\nStop the writer thread before os.fork(), so "
     "that the\nprocess forks with the program's threads only."},
    {"fork_resume", tracer_fork_resume, METH_NOARGS,
     "fork_resume()\n\nAn after-fork hook of the parent: start the writer "
     "again when the\nmain thread next runs Python code."},
    {"sample_thread", tracer_sample_thread, METH_O,
     "sample_thread(name)\n\nSample the calling thread from now on, its "
     "stream named NAME\n(sampled sessions; threads started through "
     "threading do it first\nthing)."},
    {"thread_name", tracer_thread_name, METH_O,
     "thread_name(name)\n\nName the calling thread's stream in the trace."},
    {NULL, NULL, 0, NULL},
};
const size_t evp_module_nmethods =
    sizeof evp_module_methods / sizeof evp_module_methods[0];

static void
tracer_free(void *m)
{
    if (evp_S.active) {
        if (evp_S.sample)
            evp_sample_stop();
        else
            remove_hooks();
        evp_S.active = 0;
        evp_rec_close();
    }
}

static struct PyModuleDef tracer_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "evalprof._tracer",
    .m_doc = "evalprof's tracer for stock CPython (mode B): PEP 523 frame "
             "hook plus the version's op and C call hooks, writing .evp "
             "traces.",
    .m_size = -1,
    .m_methods = evp_module_methods,
    .m_free = tracer_free,
};

PyMODINIT_FUNC PyInit__tracer(void);

PyMODINIT_FUNC
PyInit__tracer(void)
{
    PyObject *m = PyModule_Create(&tracer_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddStringConstant(m, "built_for", PY_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* what this producer records (with ops): the package names the
     * discussion's kinds it cannot, from the generated vocabulary */
    PyObject *kinds = PyLong_FromUnsignedLongLong(can_emit(1));
    if (kinds == NULL || PyModule_AddObject(m, "can_emit", kinds) < 0) {
        Py_XDECREF(kinds);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
