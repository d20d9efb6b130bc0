/* The CPython side of a generated extension module (templates/module.c.tmpl, templates/jit_module.c.tmpl):
 * linking its native code to runtime._native when the module is imported. Include it after Python.h and
 * the module's native header (which defines rt_set_allocator). */
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

/* The big-buffer allocator of runtime._native (one for every module), and with RT_SHARED_KERNELS its
 * compiled kernels (rt_shared.h). 0, or -1 with the exception set. */
static int rt_ext_link(void) {
    static const char *const allocator_names[] = {"rt_big_alloc", "rt_big_free"};
    void *allocator[2];
    PyObject *value = rt_ext_call("runtime._native", "allocator_capsules", NULL);
    if (value == NULL) return -1;
    int rc = rt_ext_capsules(value, "runtime._native.allocator_capsules()", 0, 2, allocator_names, allocator);
    Py_DECREF(value);
    if (rc < 0) return -1;
    rt_set_allocator(allocator[0], allocator[1]);
#ifdef RT_SHARED_KERNELS
    static const char *const table_names[] = {"rt_shared_kernels"};
    void *table;
    value = rt_ext_call("runtime._native", "shared_kernels", NULL);
    if (value == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        value = Py_BuildValue("(sO)", "none", Py_None);      /* a runtime._native from before shared kernels */
        if (value == NULL) return -1;
    }
    const char *hash = PyTuple_Check(value) && PyTuple_GET_SIZE(value) == 2
        ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(value, 0)) : NULL;
    rc = hash == NULL || PyTuple_GET_ITEM(value, 1) == Py_None ? -1
        : rt_ext_capsules(value, "runtime._native.shared_kernels()", 1, 1, table_names, &table);
    if (rc == 0 && rt_use_shared_kernels(hash, (void *const *)table) < 0) rc = -1;
    if (rc < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ImportError,
                     "this module was compiled to call the kernels of rt's runtime._native compiled from kernel "
                     "sources %s, but the installed runtime._native has %s: rebuild the module "
                     "(python -m transpiler build) with the installed rt", RT_KERNELS_HASH, hash ? hash : "none");
    }
    Py_DECREF(value);
    if (rc < 0) return -1;
#endif
    return 0;
}

#endif
