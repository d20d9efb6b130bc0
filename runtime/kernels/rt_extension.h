/* The CPython side of a generated extension module (templates/module.c.tmpl, templates/jit_module.c.tmpl):
 * linking its native code to runtime._native when the module is imported. Include it after Python.h and
 * the module's native header (which defines rt_set_runtime). */
#ifndef RT_EXTENSION_H
#define RT_EXTENSION_H

/* runtime.<module>.<name>(*args): a new reference, or NULL with the exception set */
static PyObject *rt_ext_call(const char *module_name, const char *name, PyObject *args) {
    PyObject *module = PyImport_ImportModule(module_name);
    if (module == NULL) return NULL;
    PyObject *function = PyObject_GetAttrString(module, name);
    Py_DECREF(module);
    if (function == NULL) return NULL;
    PyObject *result = PyObject_CallObject(function, args);
    Py_DECREF(function);
    return result;
}

/* The pointers of a (str, capsule, capsule ...) tuple's capsules, named `names` in order; -1 with the
 * exception set when `value` is not such a tuple. */
static int rt_ext_capsules(PyObject *value, const char *what, int first, int count, const char *const *names,
                           void **out) {
    if (!PyTuple_Check(value) || PyTuple_GET_SIZE(value) != first + count) {
        PyErr_Format(PyExc_ImportError, "%s returned %R, not the %d values this module expects", what, value,
                     first + count);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        out[i] = PyCapsule_GetPointer(PyTuple_GET_ITEM(value, first + i), names[i]);
        if (out[i] == NULL) return -1;
    }
    return 0;
}

/* What every built module shares with runtime._native: its big-buffer allocator and the Ctrl-C flag generated
 * loops read (rt_kernels.h). 0, or -1 with the exception set. */
static int rt_ext_link(void) {
    static const char *const names[] = {"rt_big_alloc", "rt_big_free", "rt_interrupt"};
    void *shared[3];
    PyObject *value = rt_ext_call("runtime._native", "runtime_capsules", NULL);
    if (value == NULL) return -1;
    int rc = rt_ext_capsules(value, "runtime._native.runtime_capsules()", 0, 3, names, shared);
    Py_DECREF(value);
    if (rc < 0) return -1;
    rt_set_runtime(shared[0], shared[1], shared[2]);
    return 0;
}

#endif
