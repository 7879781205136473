/* Core: add and stamp, the hot path of memory.Ack (see _ackcore.h for the whole). */
#include "_ackcore.h"

/* ------------------------------------------------------------------- Core */


PyObject *str_add_slow;
PyObject *str_stamp_slow;

static PyObject *
core_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    CoreObject *self = (CoreObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->chains = PyDict_New();
    self->buckets = Py_BuildValue("[{}{}]");
    self->acked_listeners = PyTuple_New(0);
    self->high_water = -1;
    if (self->chains == NULL || self->buckets == NULL || self->acked_listeners == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* The Python objects a Core holds, each visited and cleared by the GC. */
#define CORE_OBJECTS(X) X(chains) X(buckets) X(acked_listeners)
#define VISIT_FIELD(field) Py_VISIT(self->field);
#define CLEAR_FIELD(field) Py_CLEAR(self->field);

static int
core_traverse(CoreObject *self, visitproc visit, void *arg)
{
    CORE_OBJECTS(VISIT_FIELD)
    return 0;
}

static int
core_clear(CoreObject *self)
{
    CORE_OBJECTS(CLEAR_FIELD)
    return 0;
}

/* Core is a static type: for a Python subclass, subtype_dealloc and
 * subtype_traverse take care of the (heap) type's own reference. */
static void
core_dealloc(CoreObject *self)
{
    PyObject_GC_UnTrack(self);
    core_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The dict that holds generation ``gen``'s chains, or NULL (no error set) if
 * the buckets were replaced by something the fast path does not handle. */
static PyObject *
bucket_of(CoreObject *self, long long gen)
{
    Py_ssize_t n = PyList_GET_SIZE(self->buckets);
    if (n < 1 || gen < 0) {
        return NULL;
    }
    PyObject *bucket = PyList_GET_ITEM(self->buckets, (Py_ssize_t)(gen % n));
    return PyDict_CheckExact(bucket) ? bucket : NULL;
}

static int
all_zero(const unsigned char *p, Py_ssize_t n)
{
    uint64_t acc = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        acc |= w;
    }
    for (; i < n; i++) {
        acc |= p[i];
    }
    return acc == 0;
}

/* dst ^= src; returns whether dst is non-zero afterwards. */
static int
xor_into(unsigned char *dst, const unsigned char *src, Py_ssize_t n)
{
    uint64_t acc = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t a, b;
        memcpy(&a, dst + i, 8);
        memcpy(&b, src + i, 8);
        a ^= b;
        memcpy(dst + i, &a, 8);
        acc |= a;
    }
    for (; i < n; i++) {
        dst[i] ^= src[i];
        acc |= dst[i];
    }
    return acc != 0;
}

static PyObject *
call_slow(CoreObject *self, PyObject *name, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *call_args[3] = {(PyObject *)self, NULL, NULL};
    for (Py_ssize_t i = 0; i < nargs; i++) {
        call_args[i + 1] = args[i];
    }
    return PyObject_VectorcallMethod(name, call_args, (size_t)nargs + 1, NULL);
}

static PyObject *
take_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL) {
        PyException_SetTraceback(value, tb);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

static void
raise_exception(PyObject *exc)
{
    /* Steals the reference to exc. */
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyObject *tb = PyException_GetTraceback(exc);
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, tb);
#endif
}

/* Call every listener with (tag,).  The chain is already forgotten and
 * counted, so a listener's exception cannot lose it: the other listeners still
 * run, then the exception is raised (an ExceptionGroup if several raised).
 * A BaseException that is not an Exception (KeyboardInterrupt, ...) stops at
 * once. */
static int
emit_acked(CoreObject *self, PyObject *tag)
{
    PyObject *listeners = self->acked_listeners;
    Py_ssize_t n = PyTuple_GET_SIZE(listeners);
    if (n == 0) {
        return 0;
    }
    Py_INCREF(listeners);
    PyObject *errors = NULL;
    int status = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyObject_CallOneArg(PyTuple_GET_ITEM(listeners, i), tag);
        if (r != NULL) {
            Py_DECREF(r);
            continue;
        }
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            status = -1;
            goto done;
        }
        PyObject *exc = take_exception();
        if (errors == NULL) {
            errors = PyList_New(0);
            if (errors == NULL) {
                Py_XDECREF(exc);
                status = -1;
                goto done;
            }
        }
        int rc = PyList_Append(errors, exc);
        Py_XDECREF(exc);
        if (rc < 0) {
            status = -1;
            goto done;
        }
    }
    if (errors != NULL) {
        status = -1;
        if (PyList_GET_SIZE(errors) == 1) {
            raise_exception(Py_NewRef(PyList_GET_ITEM(errors, 0)));
        }
        else {
            PyObject *group = PyObject_CallFunction(
                PyExc_BaseExceptionGroup, "sO", "several 'acked' listeners raised", errors);
            if (group != NULL) {
                raise_exception(group);
            }
        }
    }
done:
    Py_XDECREF(errors);
    Py_DECREF(listeners);
    return status;
}

/* A fast path: ``tag`` a non-empty str, ``stamp`` bytes, the core's containers its
 * own kinds.  It may still hand the call (``args``) to Python's slow path. */
typedef PyObject *(*FastPath)(CoreObject *self, PyObject *tag, PyObject *stamp,
                              PyObject *const *args, Py_ssize_t nargs);

/* The arguments of a call of add() or stamp() that is not two positional ones:
 * ``tag`` and ``stamp`` by position or by name (as PyAck and the stubs take them),
 * into ``bound``; -1 with a TypeError, as Python's, for a call that does not bind. */
static int
bind_tag_and_stamp(const char *name, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames, PyObject *bound[2])
{
    static const char *const params[2] = {"tag", "stamp"};
    if (nargs > 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes 2 positional arguments but %zd were given",
                     name, nargs);
        return -1;
    }
    bound[0] = bound[1] = NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        bound[i] = args[i];
    }
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k); /* always a str */
        int slot = -1;
        for (int j = 0; j < 2 && slot < 0; j++) {
            if (PyUnicode_CompareWithASCIIString(key, params[j]) == 0) {
                slot = j;
            }
        }
        if (slot < 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", name,
                         key);
            return -1;
        }
        if (bound[slot] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", name,
                         params[slot]);
            return -1;
        }
        bound[slot] = args[nargs + k];
    }
    for (int j = 0; j < 2; j++) {
        if (bound[j] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %d)", name,
                         params[j], j + 1);
            return -1;
        }
    }
    return 0;
}

/* add() and stamp() (METH_FASTCALL | METH_KEYWORDS): a TypeError for arguments that
 * do not bind to (tag, stamp); the fast path ``fast`` for arguments and containers it
 * takes; otherwise Python's slow path (``slow``) answers the call.  The plain call,
 * two positional arguments, costs one test more than before keywords were taken. */
static PyObject *
fast_or_slow(CoreObject *self, const char *name, PyObject *slow, FastPath fast,
             PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *bound[2];
    if (kwnames != NULL || nargs != 2) {
        if (bind_tag_and_stamp(name, args, nargs, kwnames, bound) < 0) {
            return NULL;
        }
        args = bound;
        nargs = 2;
    }
    if (PyUnicode_CheckExact(args[0]) && PyUnicode_GET_LENGTH(args[0]) > 0
        && PyBytes_Check(args[1]) && PyDict_CheckExact(self->chains)
        && PyList_CheckExact(self->buckets)) {
        return fast(self, args[0], args[1], args, nargs);
    }
    return call_slow(self, slow, args, nargs);
}

PyDoc_STRVAR(core_add_doc,
"add($self, /, tag, stamp)\n--\n\n"
"Start the chain ``tag`` with ``stamp``; True if the add completed it.");

static PyObject *
add_fast(CoreObject *self, PyObject *tag, PyObject *stamp, PyObject *const *args,
         Py_ssize_t nargs)
{
    Py_ssize_t nbytes = PyBytes_GET_SIZE(stamp);
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(stamp);
    if (nbytes == 0 || all_zero(data, nbytes)
        || (self->high_water >= 0 && PyDict_GET_SIZE(self->chains) >= self->high_water)) {
        return call_slow(self, str_add_slow, args, nargs);
    }
    PyObject *bucket = bucket_of(self, self->gen);
    if (bucket == NULL) {
        return call_slow(self, str_add_slow, args, nargs);
    }
    EntryObject *e = entry_alloc(nbytes);
    if (e == NULL) {
        return NULL;
    }
    memcpy(e->value, data, (size_t)nbytes);
    e->gen = self->gen;
    e->flags = FLAG_ADDED;
    /* One hash-table probe for "is the tag new?" and "insert it". */
    PyObject *held = PyDict_SetDefault(self->chains, tag, (PyObject *)e);
    if (held == NULL) {
        Py_DECREF(e);
        return NULL;
    }
    if (held != (PyObject *)e) {
        /* Already started (TagExists) or stamped before its add: Python. */
        Py_DECREF(e);
        return call_slow(self, str_add_slow, args, nargs);
    }
    e->t_added = perf_counter();
    if (PyDict_SetItem(bucket, tag, (PyObject *)e) < 0) {
        PyObject *exc = take_exception();
        if (PyDict_DelItem(self->chains, tag) < 0) {
            PyErr_Clear();
        }
        raise_exception(exc);
        Py_DECREF(e);
        return NULL;
    }
    Py_DECREF(e);
    self->added++;
    self->pending++;
    Py_RETURN_FALSE;
}

PyDoc_STRVAR(core_stamp_doc,
"stamp($self, /, tag, stamp)\n--\n\n"
"XOR ``stamp`` into the chain ``tag``; True if this stamp completed it.");

static PyObject *
stamp_fast(CoreObject *self, PyObject *tag, PyObject *stamp, PyObject *const *args,
           Py_ssize_t nargs)
{
    PyObject *found = PyDict_GetItemWithError(self->chains, tag);
    if (found == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        /* Unknown tag: a stamp that arrived before its add. */
        return call_slow(self, str_stamp_slow, args, nargs);
    }
    if (Py_TYPE(found) != &Entry_Type) {
        return call_slow(self, str_stamp_slow, args, nargs);
    }
    EntryObject *e = (EntryObject *)found;
    Py_ssize_t nbytes = PyBytes_GET_SIZE(stamp);
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(stamp);
    if (!(e->flags & FLAG_ADDED) || Py_SIZE(e) != nbytes || nbytes == 0
        || all_zero(data, nbytes)) {
        /* Not yet added, wrong length (BufferLengthsUnequal) or a zero stamp
         * (ZeroBufferNoOp): Python decides, nothing has changed. */
        return call_slow(self, str_stamp_slow, args, nargs);
    }
    PyObject *bucket = bucket_of(self, e->gen);
    if (bucket == NULL) {
        return call_slow(self, str_stamp_slow, args, nargs);
    }
    if (xor_into(e->value, data, nbytes)) {
        Py_RETURN_FALSE;
    }
    /* Zero: every piece of work the chain started has finished. */
    Py_INCREF(e);
    Py_INCREF(tag);
    int rc = PyDict_DelItem(self->chains, tag);
    if (rc == 0 && PyDict_DelItem(bucket, tag) < 0) {
        /* Not where its generation says: nothing to undo, the chain is gone. */
        PyErr_Clear();
    }
    if (rc < 0) {
        Py_DECREF(e);
        Py_DECREF(tag);
        return NULL;
    }
    double elapsed = perf_counter() - e->t_added;
    self->acked++;
    self->pending--;
    self->ack_time_total += elapsed;
    if (elapsed > self->ack_time_max) {
        self->ack_time_max = elapsed;
    }
    Py_DECREF(e);
    rc = emit_acked(self, tag);
    Py_DECREF(tag);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_TRUE;
}

/* The methods add() and stamp(): ``core_add`` and ``core_stamp``. */
#define FAST_METHOD(name)                                                                  \
    static PyObject *core_##name(CoreObject *self, PyObject *const *args, Py_ssize_t nargs, \
                                 PyObject *kwnames)                                        \
    {                                                                                      \
        return fast_or_slow(self, #name, str_##name##_slow, name##_fast, args, nargs,      \
                            kwnames);                                                      \
    }

FAST_METHOD(add)
FAST_METHOD(stamp)

#define FAST_CALL (METH_FASTCALL | METH_KEYWORDS)

static PyMethodDef core_methods[] = {
    {"add", (PyCFunction)(void (*)(void))core_add, FAST_CALL, core_add_doc},
    {"stamp", (PyCFunction)(void (*)(void))core_stamp, FAST_CALL, core_stamp_doc},
    {NULL},
};

PyTypeObject Core_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "xor_ack_dynamodb._ackcore.Core",
    .tp_doc = "The hot path of memory.Ack (add and stamp); subclassed by memory.CAck.",
    .tp_basicsize = sizeof(CoreObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = core_new,
    .tp_dealloc = (destructor)core_dealloc,
    .tp_traverse = (traverseproc)core_traverse,
    .tp_clear = (inquiry)core_clear,
    .tp_methods = core_methods,
    .tp_getset = core_getset,
};

