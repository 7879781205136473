/*
 * _ackcore: the hot path of the in-memory tracker ``xor_ack_dynamodb.memory.Ack``.
 *
 * Only two things live here, because only they are on every operation:
 *
 *   Core.add(tag, stamp)    start a chain whose tag is new (the common case);
 *   Core.stamp(tag, stamp)  XOR a stamp into a started chain, and when it
 *                           reaches zero: forget it, count it and call the
 *                           "acked" listeners.
 *
 * Everything else -- typed errors, stamps that arrive before their add, fail,
 * timeouts, the high-water mark, reset -- is Python (memory.py): whenever a call
 * is not the plain case, the fast path hands it, untouched, to
 * ``self._add_slow`` / ``self._stamp_slow``.  memory.PyAck is the same fast
 * path in pure Python; the tests run every behaviour against both.
 *
 * State is shared with the Python side through typed attributes: ``_chains``
 * (dict tag -> Entry), ``_buckets`` (list of dicts, the timeout generations,
 * an entry sits in ``_buckets[entry.gen % len(_buckets)]``), counters and the
 * tuple of "acked" listeners.
 *
 * The extension is four files, one concept each: _ackcore_entry.c (Entry, one chain),
 * _ackcore_core.c (Core: add and stamp, the hot path), _ackcore_access.c (Core's
 * attributes as the Python side reads and sets them) and _ackcore.c (the module).
 * This header holds what they share: the two object layouts and the accessor macro.
 */
#ifndef XOR_ACK_ACKCORE_H
#define XOR_ACK_ACKCORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FLAG_ADDED 1
#define FLAG_FAILED 2

/* The clock of time.perf_counter(), without a Python call. */
static inline double
perf_counter(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyTime_t t;
    if (PyTime_PerfCounterRaw(&t) < 0) {
        return 0.0;
    }
    return PyTime_AsSecondsDouble(t);
#else
    return _PyTime_AsSecondsDouble(_PyTime_GetPerfCounter());
#endif
}

/* A getter and a setter of the number attribute ``field`` of ``Object``, named
 * ``prefix``_get_``field`` / ``prefix``_set_``field``: ``to_py`` reads it, ``from_py``
 * converts what is assigned (returning -1 with an exception set when it cannot);
 * deleting it raises ``del_error`` with ``del_message``.  Entry's and Core's
 * numbers all go through it. */
#define NUMBER_ACCESSORS(prefix, Object, field, ctype, to_py, from_py, del_error, del_message) \
    static PyObject *prefix##_get_##field(Object *self, void *closure)                         \
    {                                                                                          \
        return to_py(self->field);                                                             \
    }                                                                                          \
    static int prefix##_set_##field(Object *self, PyObject *value, void *closure)              \
    {                                                                                          \
        if (value == NULL) {                                                                   \
            PyErr_SetString(del_error, del_message);                                           \
            return -1;                                                                         \
        }                                                                                      \
        ctype v = from_py(value);                                                              \
        if (v == (ctype)-1 && PyErr_Occurred()) {                                              \
            return -1;                                                                         \
        }                                                                                      \
        self->field = v;                                                                       \
        return 0;                                                                              \
    }

/* One chain: its XOR state as raw bytes (no Python int per operation), the
 * timeout generation it belongs to, when it was added, and its flags. Holds no
 * Python references, so it is not tracked by the cyclic GC. */
typedef struct {
    PyObject_VAR_HEAD /* ob_size: the stamp length in bytes */
    long long gen;
    double t_added;
    int flags;
    unsigned char value[1];
} EntryObject;

/* The tracker's state, shared with memory.py through the attributes of _ackcore_access.c. */
typedef struct {
    PyObject_HEAD
    PyObject *chains;          /* dict: tag -> Entry */
    PyObject *buckets;         /* list of dicts */
    PyObject *acked_listeners; /* tuple of callables */
    long long gen;
    Py_ssize_t high_water;     /* < 0: no limit */
    long long added;
    long long acked;
    long long pending;
    double ack_time_total;
    double ack_time_max;
} CoreObject;

extern PyTypeObject Entry_Type;
extern PyTypeObject Core_Type;
extern PyGetSetDef core_getset[];      /* _ackcore_access.c */
extern PyObject *str_add_slow;         /* "_add_slow", "_stamp_slow": set by the module */
extern PyObject *str_stamp_slow;

EntryObject *entry_alloc(Py_ssize_t nbytes);

#endif
