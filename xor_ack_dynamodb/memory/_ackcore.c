/* The module xor_ack_dynamodb._ackcore (see _ackcore.h for the whole). */
#include "_ackcore.h"

/* ----------------------------------------------------------------- module */

static PyObject *
module_now(PyObject *module, PyObject *unused)
{
    return PyFloat_FromDouble(perf_counter());
}

static PyMethodDef module_methods[] = {
    {"now", module_now, METH_NOARGS, "The clock the core uses (time.perf_counter's)."},
    {NULL},
};

static struct PyModuleDef ackcore_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "xor_ack_dynamodb._ackcore",
    .m_doc = "C fast path of xor_ack_dynamodb.memory.Ack (optional; PyAck is the fallback).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__ackcore(void)
{
    if (PyType_Ready(&Entry_Type) < 0 || PyType_Ready(&Core_Type) < 0) {
        return NULL;
    }
    str_add_slow = PyUnicode_InternFromString("_add_slow");
    str_stamp_slow = PyUnicode_InternFromString("_stamp_slow");
    if (str_add_slow == NULL || str_stamp_slow == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&ackcore_module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Entry", (PyObject *)&Entry_Type) < 0
        || PyModule_AddObjectRef(m, "Core", (PyObject *)&Core_Type) < 0
        || PyModule_AddIntConstant(m, "ADDED", FLAG_ADDED) < 0
        || PyModule_AddIntConstant(m, "FAILED", FLAG_FAILED) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

