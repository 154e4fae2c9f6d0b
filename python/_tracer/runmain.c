/*
 * run_main(): run the traced program's __main__ as the interpreter itself
 * would, with none of evalprof's frames under it.
 *
 * `python -m evalprof` and `evalprof record` reach the program through a
 * few Python frames of their own (runpy or the -c bootstrap, then the
 * runner).  Run from there, the program would see them: one more line per
 * frame in every traceback, a stack two or five frames deeper (a
 * RecursionError a few calls sooner), sys._getframe() walking into
 * evalprof.  So the program runs here, from C, as Modules/main.c runs it:
 *
 *   - the thread's current frame is set aside for the time of the run
 *     (the program's first frame has no caller, as at start-up) and the
 *     recursion counters start where they start for a fresh interpreter;
 *   - a script and -c code go through PyRun_SimpleFileExFlags and
 *     PyRun_SimpleStringFlags, as in main.c: same __main__ set-up, same
 *     traceback printing, sys.exit() leaving through Py_Exit();
 *   - a module goes through runpy._run_module_as_main(name, True), as
 *     main.c's -m does (a directory or zip file: "__main__", False);
 *   - an uncaught exception exits with status 1 after finalization, a
 *     KeyboardInterrupt by SIGINT, as the interpreter does.
 *
 * Only a normal end returns (None), with evalprof's frames put back.
 */
#include <signal.h>
#include <unistd.h>

#include "tracer.h"

struct set_aside {
    struct _PyInterpreterFrame *frame;
    struct evp_recursion recursion;
};

static void
set_aside(PyThreadState *ts, struct set_aside *s)
{
    s->frame = evp_ts_frame(ts);
    evp_ts_set_frame(ts, NULL);
    evp_recursion_reset(ts, &s->recursion);
}

static void
put_back(PyThreadState *ts, const struct set_aside *s)
{
    evp_ts_set_frame(ts, s->frame);
    evp_recursion_restore(ts, &s->recursion);
}

/* The end of Py_RunMain after an uncaught exception, printed already. */
static void
exit_after_error(void)
{
    PyObject *last = PySys_GetObject("last_type"); /* borrowed */
    int sigint = last != NULL && PyType_Check(last) &&
                 PyType_IsSubtype((PyTypeObject *)last,
                                  (PyTypeObject *)PyExc_KeyboardInterrupt);
    int status = Py_FinalizeEx() < 0 ? 120 : 1;
    if (sigint) {
        /* Die of SIGINT, as an interrupted interpreter does, so that a
         * shell sees the program interrupted. */
        signal(SIGINT, SIG_DFL);
        kill(getpid(), SIGINT);
        status = 128 + SIGINT;
    }
    exit(status);
}

/* Skip the first line of FP, newline kept (python -x). */
static void
skip_first_line(FILE *fp)
{
    int ch;
    while ((ch = getc(fp)) != EOF) {
        if (ch == '\n') {
            ungetc(ch, fp);
            break;
        }
    }
}

/* python -i: the interpreter goes on to its prompt after the program. */
static int
inspecting(void)
{
    PyObject *flags = PySys_GetObject("flags"); /* borrowed */
    PyObject *v = flags ? PyObject_GetAttrString(flags, "inspect") : NULL;
    int on = v != NULL && PyObject_IsTrue(v) == 1;
    Py_XDECREF(v);
    PyErr_Clear();
    return on;
}

static int
run_module(const char *name, int alter_argv)
{
    PyObject *runpy = PyImport_ImportModule("runpy");
    PyObject *run =
        runpy ? PyObject_GetAttrString(runpy, "_run_module_as_main") : NULL;
    Py_XDECREF(runpy);
    if (run == NULL) {
        PyErr_Print();
        return -1;
    }
    PyObject *r = PyObject_CallFunction(run, "sO", name,
                                        alter_argv ? Py_True : Py_False);
    Py_DECREF(run);
    if (r == NULL) {
        PyErr_Print();
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

PyObject *
evp_run_main(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"kind", "target", "skip_first_line", "alter_argv",
                            NULL};
    const char *kind, *target;
    int skip = 0, alter_argv = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|pp:run_main", names, &kind,
                                     &target, &skip, &alter_argv))
        return NULL;
    FILE *fp = NULL;
    if (strcmp(kind, "file") == 0) {
        fp = fopen(target, "rb");
        if (fp == NULL)
            return PyErr_SetFromErrnoWithFilename(PyExc_OSError, target);
        if (skip)
            skip_first_line(fp);
    }
    else if (strcmp(kind, "stdin") == 0) {
        if (skip)
            skip_first_line(stdin);
    }
    else if (strcmp(kind, "code") != 0 && strcmp(kind, "module") != 0) {
        PyErr_Format(PyExc_ValueError, "run_main: unknown kind %s", kind);
        return NULL;
    }

    PyThreadState *ts = PyThreadState_Get();
    struct set_aside saved;
    set_aside(ts, &saved);
    int rc;
    if (fp != NULL)
        rc = PyRun_SimpleFileExFlags(fp, target, 1, NULL);
    else if (strcmp(kind, "stdin") == 0)
        rc = PyRun_AnyFileExFlags(stdin, "<stdin>", 0, NULL);
    else if (strcmp(kind, "code") == 0)
        rc = PyRun_SimpleStringFlags(target, NULL);
    else
        rc = run_module(target, alter_argv);
    if (rc != 0 && !inspecting())
        exit_after_error(); /* frames still set aside, as at exit */
    put_back(ts, &saved);
    Py_RETURN_NONE;
}
