/* Core's attributes, as memory.py reads and sets them (see _ackcore.h for the whole). */
#include "_ackcore.h"

/* -------------------------------------------------- Core attribute access */

/* ``_buckets`` takes a non-empty list of dicts. */
static int
is_bucket_list(PyObject *value)
{
    if (!PyList_CheckExact(value) || PyList_GET_SIZE(value) < 1) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
        if (!PyDict_CheckExact(PyList_GET_ITEM(value, i))) {
            return 0;
        }
    }
    return 1;
}

/* A getter and a setter of the object attribute ``_field``: what is assigned must
 * pass ``check``, else TypeError(``message``). */
#define OBJECT_ACCESSORS(field, check, message)                                   \
    static PyObject *core_get_##field(CoreObject *self, void *closure)            \
    {                                                                             \
        return Py_NewRef(self->field);                                            \
    }                                                                             \
    static int core_set_##field(CoreObject *self, PyObject *value, void *closure) \
    {                                                                             \
        if (value == NULL || !check(value)) {                                     \
            PyErr_SetString(PyExc_TypeError, message);                            \
            return -1;                                                            \
        }                                                                         \
        Py_SETREF(self->field, Py_NewRef(value));                                 \
        return 0;                                                                 \
    }

OBJECT_ACCESSORS(chains, PyDict_CheckExact, "_chains must be a dict")
OBJECT_ACCESSORS(buckets, is_bucket_list, "_buckets must be a non-empty list of dicts")
OBJECT_ACCESSORS(acked_listeners, PyTuple_CheckExact, "_acked_listeners must be a tuple")

static PyObject *
core_get_high_water(CoreObject *self, void *closure)
{
    return PyLong_FromSsize_t(self->high_water);
}

static int
core_set_high_water(CoreObject *self, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "_high_water cannot be deleted");
        return -1;
    }
    Py_ssize_t hw = PyLong_AsSsize_t(value);
    if (hw == -1 && PyErr_Occurred()) {
        return -1;
    }
    self->high_water = hw < 0 ? -1 : hw;
    return 0;
}

#define CORE_NUMBER(field, ctype, to_py, from_py)                            \
    NUMBER_ACCESSORS(core, CoreObject, field, ctype, to_py, from_py, PyExc_TypeError, \
                     "_" #field " cannot be deleted")

CORE_NUMBER(gen, long long, PyLong_FromLongLong, PyLong_AsLongLong)
CORE_NUMBER(added, long long, PyLong_FromLongLong, PyLong_AsLongLong)
CORE_NUMBER(acked, long long, PyLong_FromLongLong, PyLong_AsLongLong)
CORE_NUMBER(pending, long long, PyLong_FromLongLong, PyLong_AsLongLong)
CORE_NUMBER(ack_time_total, double, PyFloat_FromDouble, PyFloat_AsDouble)
CORE_NUMBER(ack_time_max, double, PyFloat_FromDouble, PyFloat_AsDouble)

#define GETSET(field) \
    {"_" #field, (getter)core_get_##field, (setter)core_set_##field, NULL, NULL}

PyGetSetDef core_getset[] = {
    GETSET(chains),
    GETSET(buckets),
    GETSET(acked_listeners),
    GETSET(high_water),
    GETSET(gen),
    GETSET(added),
    GETSET(acked),
    GETSET(pending),
    GETSET(ack_time_total),
    GETSET(ack_time_max),
    {NULL},
};

