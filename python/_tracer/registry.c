/*
 * Function ids: code objects and C functions, as the recorder's function
 * table knows them.
 *
 * evp_rec_func takes a lock and copies strings, so it runs once per code
 * object and session: the id is cached in the code object's co_extra slot
 * (struct evp_code, freed with the code object).  The same record holds,
 * on 3.12+, the code object's instructions decoded once from its
 * de-specialised bytes, so that an INSTRUCTION callback's (code, offset)
 * becomes an opcode and oparg with one array read.
 *
 * C functions are keyed by their PyMethodDef: one id per C function
 * whether it is reached as a bound builtin ("len", "list.append" bound to
 * a list) or as a method descriptor (the unbound "list.append" that 3.12
 * calls with the list as first argument).  A small open-addressing table
 * maps PyMethodDef pointers to ids; an entry of an older session is
 * registered again on first use.
 */
#include <stdlib.h>
#include <string.h>

#include "tracer.h"

/* ---- code objects ------------------------------------------------------- */

uint64_t evp_code_epoch = 1;

static void
free_code(void *p)
{
    struct evp_code *c = p;
    if (c != NULL) {
        evp_code_epoch++;
        free(c->ops);
        free(c);
    }
}

int
evp_registry_init(void)
{
    if (evp_S.extra_index >= 0)
        return 0;
    Py_ssize_t i = evp_code_extra_index(free_code);
    if (i < 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "evalprof: no free co_extra slot in this interpreter");
        return -1;
    }
    evp_S.extra_index = i;
    return 0;
}

static const char *
utf8_or(PyObject *s, const char *dflt)
{
    if (s == NULL || !PyUnicode_Check(s))
        return dflt;
    const char *u = PyUnicode_AsUTF8(s);
    if (u == NULL) {
        PyErr_Clear();
        return dflt;
    }
    return u;
}

struct evp_code *
evp_code_get_slow(PyCodeObject *co)
{
    void *p = NULL;
    if (evp_code_extra_get(co, evp_S.extra_index, &p) < 0) {
        PyErr_Clear();
        return NULL;
    }
    struct evp_code *c = p;
    if (c == NULL) {
        c = calloc(1, sizeof *c);
        if (c == NULL)
            return NULL;
        int rc = evp_code_extra_set(co, evp_S.extra_index, c);
        if (rc < 0) {
            PyErr_Clear();
            free(c);
            return NULL;
        }
        c->creates_gen = (co->co_flags & (CO_GENERATOR | CO_COROUTINE |
                                          CO_ASYNC_GENERATOR)) != 0;
    }
    /* Keep any exception being propagated (a throw() into a generator):
     * the look-ups below may clear a failure of their own. */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    const char *file = utf8_or(co->co_filename, "");
    c->ignore = evp_S.ignore_len > 0 &&
                strncmp(file, evp_S.ignore_prefix, evp_S.ignore_len) == 0;
    c->func = 0;
    if (!c->ignore)
        c->func = evp_rec_func(utf8_or(co->co_qualname, "?"), file,
                               (uint32_t)co->co_firstlineno);
    PyErr_Restore(et, ev, tb);
    c->session = evp_S.id;
    return c;
}

int
evp_code_decode(PyCodeObject *co, struct evp_code *c)
{
    PyObject *bytes = PyCode_GetCode(co); /* de-specialised, uninstrumented */
    if (bytes == NULL)
        return -1;
    const uint8_t *b = (const uint8_t *)PyBytes_AS_STRING(bytes);
    size_t n = (size_t)PyBytes_GET_SIZE(bytes) / 2;
    struct evp_op_slot *ops = calloc(n ? n : 1, sizeof *ops);
    if (ops == NULL) {
        Py_DECREF(bytes);
        PyErr_NoMemory();
        return -1;
    }
    /* As dis does: an EXTENDED_ARG's own argument is the prefix so far,
     * and the instruction after it sees the whole folded oparg. */
    uint32_t ext = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned op = evp_S.deopt[b[2 * i]];
        uint32_t arg = b[2 * i + 1] | ext;
        ops[i].opcode = (uint16_t)op;
        ops[i].oparg = arg;
        ext = op == EXTENDED_ARG ? arg << 8 : 0;
    }
    Py_DECREF(bytes);
    free(c->ops);
    c->ops = ops;
    c->nunits = (uint32_t)n;
    return 0;
}

void
evp_code_lines(PyCodeObject *co, struct evp_code *c)
{
    if (c->func == 0 || c->lines_session == evp_S.id)
        return;
    c->lines_session = evp_S.id;
    PyObject *it = PyObject_CallMethod((PyObject *)co, "co_lines", NULL);
    if (it == NULL) {
        PyErr_Clear();
        return;
    }
    /* Each range's first code unit and line (None: 0). */
    struct evp_rec_lines lines = EVP_REC_LINES_INIT;
    PyObject *t;
    while ((t = PyIter_Next(it)) != NULL) {
        long start = -1, line = 0;
        if (PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 3) {
            start = PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
            PyObject *l = PyTuple_GET_ITEM(t, 2);
            line = l == Py_None ? 0 : PyLong_AsLong(l);
        }
        Py_DECREF(t);
        if (PyErr_Occurred() || start < 0 || line < 0)
            break;
        evp_rec_lines_add(&lines, start / 2, line);
    }
    PyErr_Clear();
    Py_DECREF(it);
    evp_rec_lines_end(&lines, c->func);
}

/* ---- C functions -------------------------------------------------------- */

struct cfunc_entry {
    const PyMethodDef *ml; /* NULL: empty slot */
    uint64_t session;
    uint32_t id;
};

static struct {
    struct cfunc_entry *slots;
    size_t cap, used; /* cap is a power of two */
} T;

extern PyMethodDef evp_module_methods[];
extern const size_t evp_module_nmethods;

static inline size_t
hash_ptr(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return (size_t)x;
}

static struct cfunc_entry *
cfunc_slot(const PyMethodDef *ml)
{
    size_t mask = T.cap - 1;
    for (size_t i = hash_ptr(ml) & mask;; i = (i + 1) & mask)
        if (T.slots[i].ml == ml || T.slots[i].ml == NULL)
            return &T.slots[i];
}

static int
cfunc_grow(void)
{
    size_t ncap = T.cap ? 2 * T.cap : 256;
    struct cfunc_entry *old = T.slots;
    size_t ocap = T.cap;
    struct cfunc_entry *ns = calloc(ncap, sizeof *ns);
    if (ns == NULL)
        return -1;
    T.slots = ns;
    T.cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].ml)
            *cfunc_slot(old[i].ml) = old[i];
    free(old);
    return 0;
}

/* The type among TYPE's bases whose method table holds ML. */
static PyTypeObject *
defining_type(PyTypeObject *type, const PyMethodDef *ml)
{
    PyObject *mro = type->tp_mro;
    if (mro == NULL || !PyTuple_Check(mro))
        return type;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        for (PyMethodDef *m = t->tp_methods; m && m->ml_name; m++)
            if (m == ml)
                return t;
    }
    return type;
}

/* "module" of a type: the part of tp_name before its last dot. */
static void
type_module(PyTypeObject *t, char *buf, size_t n)
{
    const char *dot = strrchr(t->tp_name, '.');
    if (dot == NULL) {
        snprintf(buf, n, "builtins");
        return;
    }
    size_t l = (size_t)(dot - t->tp_name);
    snprintf(buf, n, "%.*s", (int)(l < n ? l : n - 1), t->tp_name);
}

static uint32_t
cfunc_register(const PyMethodDef *ml, PyObject *self, PyTypeObject *deftype,
               PyObject *module)
{
    char name[512], file[256];
    const char *mname = ml->ml_name ? ml->ml_name : "?";
    PyTypeObject *t = deftype;
    if (t == NULL && self != NULL && !PyModule_Check(self))
        t = PyType_Check(self) ? (PyTypeObject *)self
                               : defining_type(Py_TYPE(self), ml);
    if (t != NULL) {
        PyObject *qn = PyType_GetQualName(t);
        const char *q = qn ? utf8_or(qn, t->tp_name) : t->tp_name;
        snprintf(name, sizeof name, "%s.%s", q, mname);
        Py_XDECREF(qn);
        PyErr_Clear();
        type_module(t, file, sizeof file);
    }
    else {
        snprintf(name, sizeof name, "%s", mname);
        const char *m = NULL;
        if (module != NULL && PyUnicode_Check(module))
            m = utf8_or(module, NULL);
        else if (self != NULL && PyModule_Check(self)) {
            m = PyModule_GetName(self);
            if (m == NULL)
                PyErr_Clear();
        }
        snprintf(file, sizeof file, "%s", m ? m : "");
    }
    return evp_rec_func(name, file, 0);
}

uint32_t
evp_cfunc_id(PyObject *callable)
{
    const PyMethodDef *ml;
    PyObject *self = NULL, *module = NULL;
    PyTypeObject *deftype = NULL;
    if (PyCFunction_Check(callable)) {
        PyCFunctionObject *f = (PyCFunctionObject *)callable;
        ml = f->m_ml;
        self = f->m_self;
        module = f->m_module;
    }
    else if (Py_IS_TYPE(callable, &PyMethodDescr_Type)) {
        PyMethodDescrObject *d = (PyMethodDescrObject *)callable;
        ml = d->d_method;
        deftype = d->d_common.d_type;
    }
    else {
        return 0;
    }
    if (EVP_UNLIKELY(ml >= evp_module_methods &&
                     ml < evp_module_methods + evp_module_nmethods))
        return 0; /* evalprof's own start/stop */
    if (EVP_UNLIKELY(2 * (T.used + 1) > T.cap) && cfunc_grow() < 0)
        return 0;
    struct cfunc_entry *e = cfunc_slot(ml);
    if (EVP_LIKELY(e->ml == ml && e->session == evp_S.id))
        return e->id;

    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    uint32_t id = cfunc_register(ml, self, deftype, module);
    PyErr_Restore(et, ev, tb);
    if (e->ml == NULL)
        T.used++;
    e->ml = ml;
    e->session = evp_S.id;
    e->id = id;
    return id;
}
