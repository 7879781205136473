/* Entry: one chain of the in-memory tracker (see _ackcore.h for the whole). */
#include "_ackcore.h"

/* ------------------------------------------------------------------ Entry */



EntryObject *
entry_alloc(Py_ssize_t nbytes)
{
    EntryObject *e = PyObject_NewVar(EntryObject, &Entry_Type, nbytes);
    if (e != NULL) {
        memset(e->value, 0, (size_t)nbytes);
    }
    return e;
}

static PyObject *
entry_get_value(EntryObject *self, void *closure)
{
    return PyObject_CallMethod((PyObject *)&PyLong_Type, "from_bytes", "y#s",
                               (const char *)self->value, Py_SIZE(self), "big");
}

static int
entry_store_int(EntryObject *self, PyObject *value)
{
    if (!PyLong_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "Entry.value must be an int");
        return -1;
    }
    PyObject *raw = PyObject_CallMethod(value, "to_bytes", "ns", Py_SIZE(self), "big");
    if (raw == NULL) {
        return -1;
    }
    memcpy(self->value, PyBytes_AS_STRING(raw), (size_t)Py_SIZE(self));
    Py_DECREF(raw);
    return 0;
}

static int
entry_set_value(EntryObject *self, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "Entry.value cannot be deleted");
        return -1;
    }
    return entry_store_int(self, value);
}

static PyObject *
entry_get_nbytes(EntryObject *self, void *closure)
{
    return PyLong_FromSsize_t(Py_SIZE(self));
}

#define ENTRY_NUMBER(field, ctype, to_py, from_py) \
    NUMBER_ACCESSORS(entry, EntryObject, field, ctype, to_py, from_py, PyExc_AttributeError, \
                     "Entry." #field " cannot be deleted")

ENTRY_NUMBER(gen, long long, PyLong_FromLongLong, PyLong_AsLongLong)
ENTRY_NUMBER(t_added, double, PyFloat_FromDouble, PyFloat_AsDouble)
ENTRY_NUMBER(flags, long, PyLong_FromLong, PyLong_AsLong)

static PyGetSetDef entry_getset[] = {
    {"value", (getter)entry_get_value, (setter)entry_set_value,
     "The chain's XOR state as a non-negative int.", NULL},
    {"nbytes", (getter)entry_get_nbytes, NULL,
     "The stamp length of the chain (0 while only a fail has arrived).", NULL},
    {"gen", (getter)entry_get_gen, (setter)entry_set_gen,
     "The timeout generation (bucket) the chain sits in.", NULL},
    {"t_added", (getter)entry_get_t_added, (setter)entry_set_t_added,
     "time.perf_counter() of the add (0.0 before it).", NULL},
    {"flags", (getter)entry_get_flags, (setter)entry_set_flags,
     "1: added, 2: failed before its add.", NULL},
    {NULL},
};

static PyObject *
entry_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"value", "nbytes", "gen", "t_added", "flags", NULL};
    PyObject *value;
    Py_ssize_t nbytes;
    long long gen;
    double t_added;
    int flags;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OnLdi:Entry", kwlist, &value, &nbytes,
                                     &gen, &t_added, &flags)) {
        return NULL;
    }
    if (nbytes < 0) {
        PyErr_SetString(PyExc_ValueError, "nbytes must be >= 0");
        return NULL;
    }
    EntryObject *e = entry_alloc(nbytes);
    if (e == NULL) {
        return NULL;
    }
    e->gen = gen;
    e->t_added = t_added;
    e->flags = flags;
    if (entry_store_int(e, value) < 0) {
        Py_DECREF(e);
        return NULL;
    }
    return (PyObject *)e;
}

static void
entry_dealloc(PyObject *self)
{
    PyObject_Free(self);
}

PyTypeObject Entry_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "xor_ack_dynamodb._ackcore.Entry",
    .tp_doc = "One chain of the in-memory tracker: Entry(value, nbytes, gen, t_added, flags).",
    .tp_basicsize = offsetof(EntryObject, value),
    .tp_itemsize = 1,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = entry_new,
    .tp_dealloc = entry_dealloc,
    .tp_getset = entry_getset,
};

