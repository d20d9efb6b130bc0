# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The native call path shared by every built extension module.

``NativeFunction`` calls a generated C function (received as a capsule) on numpy
arrays: it checks and packs the arguments, releases the GIL for the whole graph,
and turns the results into arrays. Ops without a C kernel call back into Python
through ``_callback`` (the only place generated code takes the GIL). String and
variant values stay Python objects: in C they are an index into the call's list.
"""
import numpy as np
cimport numpy as cnp
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_New, PyCapsule_GetName, PyCapsule_Destructor
from libc.stdint cimport int64_t, int32_t, intptr_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, free

from runtime import errors, config

cnp.import_array()

cdef extern from "kernels/rt_kernels.h" nogil:
    ctypedef struct rt_tensor:
        void *data
        int64_t shape[8]
        int32_t ndim
        int32_t dtype
        void *owner
    ctypedef struct rt_ctx:
        char msg[1024]
        int py_error
        void *callback
        void *user
        int num_threads
    void *rt_alloc(rt_ctx *ctx, size_t nbytes)
    int rt_detach(rt_ctx *ctx, void *p)
    void rt_ctx_free(rt_ctx *ctx)
    int64_t rt_numel(const rt_tensor *t)
    size_t rt_itemsize(int dtype)

ctypedef int (*rt_fn)(rt_ctx *ctx, rt_tensor *inputs, rt_tensor *outputs) noexcept nogil

DEF RT_STRING = 9
DEF RT_VARIANT = 10

_CODES = {"bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5, "float16": 6,
          "float32": 7, "float64": 8, "string": 9, "variant": 10}


cdef class _CallState:
    cdef public object function
    cdef public list objects
    cdef public object error


cdef inline int _is_object(int code) noexcept nogil:
    return code == RT_STRING or code == RT_VARIANT


cdef int _pack(rt_ctx *ctx, rt_tensor *t, object array, int code, _CallState state) except -1:
    cdef cnp.ndarray a
    cdef int i
    if _is_object(code):
        # a Python object (string array, TensorArray list) travels as its index in the call's list
        state.objects.append(array)
        t.data = <void *><intptr_t>(len(state.objects) - 1)
        t.ndim = 0
        t.dtype = code
        t.owner = NULL
        return 0
    a = <cnp.ndarray>array
    t.data = cnp.PyArray_DATA(a)
    t.ndim = cnp.PyArray_NDIM(a)
    for i in range(t.ndim):
        t.shape[i] = cnp.PyArray_DIMS(a)[i]
    t.dtype = code
    t.owner = <void *>a
    return 0


cdef void _free_capsule(object capsule) noexcept:
    free(PyCapsule_GetPointer(capsule, b"rt_buffer"))


cdef object _unpack(rt_tensor *t, object dtype, _CallState state, rt_ctx *ctx=NULL):
    """A numpy array for a result: big arena buffers are handed over (no copy), small ones copied."""
    cdef cnp.ndarray out
    cdef cnp.npy_intp dims[8]
    cdef int i
    cdef size_t nbytes
    if _is_object(t.dtype):
        return state.objects[<intptr_t>t.data]
    for i in range(t.ndim):
        dims[i] = t.shape[i]
    nbytes = <size_t>rt_numel(t) * rt_itemsize(t.dtype)
    typenum = cnp.PyArray_TYPE(<cnp.ndarray>np.empty(0, dtype.np))
    if ctx != NULL and nbytes >= 65536 and rt_detach(ctx, t.data):
        out = cnp.PyArray_SimpleNewFromData(t.ndim, dims, typenum, t.data)
        cnp.set_array_base(out, PyCapsule_New(t.data, b"rt_buffer", <PyCapsule_Destructor>_free_capsule))
        return out
    out = cnp.PyArray_EMPTY(t.ndim, dims, typenum, 0)
    memcpy(cnp.PyArray_DATA(out), t.data, nbytes)
    return out


cdef int _callback(rt_ctx *ctx, int op_index, rt_tensor *ins, int n_in, rt_tensor *outs, int n_out) noexcept nogil:
    with gil:
        return _run_callback(ctx, op_index, ins, n_in, outs, n_out)


cdef int _run_callback(rt_ctx *ctx, int op_index, rt_tensor *ins, int n_in, rt_tensor *outs, int n_out):
    cdef _CallState state = <_CallState>ctx.user
    cdef int i
    try:
        op = state.function.ops[op_index]
        arrays = []
        for i in range(n_in):
            arrays.append(_unpack(&ins[i], op.inputs[i].dtype, state))
        results = op.opdef.kernel(arrays, op.attrs)
        for i in range(n_out):
            dtype = op.outputs[i].dtype
            code = _CODES[dtype.name]
            value = results[i]
            if code == RT_STRING:
                value = np.asarray(value, dtype=object)
            if _is_object(code):
                _pack(ctx, &outs[i], value, code, state)
            else:
                value = np.asarray(value, dtype=dtype.np, order="C")
                _copy_in(ctx, &outs[i], value, code)
        return 0
    except errors.OpError as e:
        state.error = _located(type(e), str(e), state.function.ops[op_index])
    except (ValueError, IndexError, TypeError, ZeroDivisionError, FloatingPointError, OverflowError) as e:
        state.error = _located(errors.InvalidArgumentError, f"{state.function.ops[op_index].type}: {e}",
                               state.function.ops[op_index])
    except BaseException as e:
        state.error = e
    ctx.py_error = 1
    return -1


cdef int _copy_in(rt_ctx *ctx, rt_tensor *t, cnp.ndarray value, int code) except -1:
    cdef int i
    cdef size_t nbytes = <size_t>cnp.PyArray_NBYTES(value)
    t.data = rt_alloc(ctx, nbytes)
    if t.data == NULL:
        raise MemoryError()
    memcpy(t.data, cnp.PyArray_DATA(value), nbytes)
    t.ndim = cnp.PyArray_NDIM(value)
    for i in range(t.ndim):
        t.shape[i] = cnp.PyArray_DIMS(value)[i]
    t.dtype = code
    t.owner = NULL
    return 0


def _located(cls, message, op):
    if "\n  [[" in message:
        return cls(message, op)
    return cls(f"{message}\n  [[{op.where()}]]", op)


cdef class NativeFunction:
    """A generated C function for one concrete signature; ``call(arrays)`` runs it without the GIL."""

    cdef rt_fn fn
    cdef int n_in, n_out
    cdef int in_codes[64]
    cdef public list ops
    cdef public list out_dtypes
    cdef public list variables
    cdef public object name

    def __init__(self, capsule, graph, ops, variables, name=""):
        self.fn = <rt_fn>PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))
        self.ops = list(ops)
        self.variables = list(variables)
        self.n_in = len(graph.inputs)
        if self.n_in + len(self.variables) > 64:
            raise ValueError("native functions take at most 64 tensor inputs and variables")
        for i, t in enumerate(graph.inputs):
            self.in_codes[i] = _CODES[t.dtype.name]
        for k, handle in enumerate(self.variables):
            self.in_codes[self.n_in + k] = _CODES[handle.get().dtype.name] if handle.ref is not None else 0
        self.out_dtypes = [t.dtype for t in graph.outputs]
        self.n_out = len(self.out_dtypes)
        self.name = name

    def call(self, list arrays):
        cdef rt_ctx ctx
        cdef rt_tensor ins[64]
        cdef rt_tensor outs[64]
        cdef int i, rc
        cdef int n_vars = len(self.variables)
        cdef _CallState state = _CallState()
        if self.n_out > 64:
            raise ValueError("native functions return at most 64 tensors")
        state.function = self
        state.objects = []
        memset(&ctx, 0, sizeof(rt_ctx))
        ctx.callback = <void *>_callback
        ctx.user = <void *>state
        ctx.num_threads = config.intra_op_threads()
        keep = []
        try:
            for i in range(self.n_in):
                a = arrays[i]
                if not _is_object(self.in_codes[i]) and not (<cnp.ndarray>a).flags.c_contiguous:
                    a = np.ascontiguousarray(a)
                    keep.append(a)
                _pack(&ctx, &ins[i], a, self.in_codes[i], state)
            for i in range(n_vars):
                variable = self.variables[i].get()
                storage = variable._value
                if not storage.flags.c_contiguous or not storage.flags.writeable:
                    storage = variable._value = np.array(storage, copy=True, order="C")
                keep.append(storage)
                _pack(&ctx, &ins[self.n_in + i], storage, _CODES[variable.dtype.name], state)
            with nogil:
                rc = self.fn(&ctx, ins, outs)
            if rc != 0:
                if state.error is not None:
                    raise state.error
                raise errors.InvalidArgumentError(ctx.msg.decode("utf-8", "replace"))
            return [_unpack(&outs[i], self.out_dtypes[i], state, &ctx) for i in range(self.n_out)]
        finally:
            rt_ctx_free(&ctx)


def blas_capsules():
    """Capsules of scipy's BLAS sgemm/dgemm (for large float matmuls), or (None, None)."""
    try:
        from scipy.linalg import cython_blas
    except ImportError:
        return None, None
    capi = cython_blas.__pyx_capi__
    return capi.get("sgemm"), capi.get("dgemm")


# ---------------------------------------------------------------------------
# The generic executor: runs any graph (no C compiler needed) with the kernel
# library's compiled loops where they apply, the op's numpy kernel elsewhere.

cdef extern from "kernels/rt_elementwise.h" nogil:
    ctypedef void (*rt_ew_fn)(void *const *ins, void *out, int64_t n, const int64_t *s, int threads)
    rt_ew_fn rt_ew_lookup(const char *op, int dtype, int dst)

cdef extern from "kernels/rt_kernels.h" nogil:
    void rt_matmul_int8(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n)
    void rt_matmul_int16(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n)
    void rt_matmul_int32(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n)
    void rt_matmul_int64(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n)
    void rt_matmul_uint8(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n)
    void rt_matmul_float32(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n)
    void rt_matmul_float64(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n)
    void *rt_sgemm
    void *rt_dgemm

ctypedef void (*matmul_fn)(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n) noexcept nogil


cdef class _Elementwise:
    """A compiled loop for same-shape (or scalar) operands; other broadcasts use the numpy kernel."""
    cdef rt_ew_fn fn
    cdef object fallback
    cdef object out_dtype
    cdef int check

    def __call__(self, list inputs, attrs):
        cdef void *ptrs[3]
        cdef int64_t steps[3]
        cdef int64_t n = 1
        cdef int i, threads
        cdef cnp.ndarray a, out
        cdef void *out_data
        shape = None
        for x in inputs:
            if (<cnp.ndarray>x).size != 1:
                if shape is None:
                    shape = x.shape
                elif x.shape != shape:
                    return self.fallback(inputs, attrs)
        if shape is None or any(x.ndim > len(shape) for x in inputs):
            shape = np.broadcast_shapes(*[x.shape for x in inputs])
        if self.check == 1 and not np.all(inputs[1]):
            raise errors.InvalidArgumentError("Integer division by zero")
        if self.check == 2 and np.any(inputs[1] < 0):
            raise errors.InvalidArgumentError("Integers to negative integer powers are not allowed")
        out = np.empty(shape, self.out_dtype)
        for i in range(len(inputs)):
            a = <cnp.ndarray>inputs[i]
            if not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
                inputs[i] = a
            ptrs[i] = cnp.PyArray_DATA(a)
            steps[i] = 0 if a.size == 1 else 1
        n = out.size
        out_data = cnp.PyArray_DATA(out)
        threads = config.intra_op_threads() if n >= 65536 else 1
        with nogil:
            self.fn(ptrs, out_data, n, steps, threads)
        return (out,)


cdef class _MatMul:
    cdef object fallback

    def __call__(self, list inputs, attrs):
        cdef cnp.ndarray a = inputs[0], b = inputs[1], c
        cdef void *pa
        cdef void *pb
        cdef void *pc
        cdef matmul_fn fn
        cdef int64_t m, k, n
        if a.ndim != 2 or b.ndim != 2 or attrs.get("transpose_a") or attrs.get("transpose_b") \
                or a.dtype != b.dtype or a.dtype.name not in _MATMUL_OK or a.shape[1] != b.shape[0]:
            return self.fallback(inputs, attrs)
        a = np.ascontiguousarray(a)
        b = np.ascontiguousarray(b)
        name = a.dtype.name
        if name == "int8": fn = <matmul_fn>rt_matmul_int8
        elif name == "int16": fn = <matmul_fn>rt_matmul_int16
        elif name == "int32": fn = <matmul_fn>rt_matmul_int32
        elif name == "int64": fn = <matmul_fn>rt_matmul_int64
        elif name == "uint8": fn = <matmul_fn>rt_matmul_uint8
        elif name == "float32": fn = <matmul_fn>rt_matmul_float32
        else: fn = <matmul_fn>rt_matmul_float64
        m, k, n = a.shape[0], a.shape[1], b.shape[1]
        c = np.empty((m, n), a.dtype)
        pa, pb, pc = cnp.PyArray_DATA(a), cnp.PyArray_DATA(b), cnp.PyArray_DATA(c)
        with nogil:
            fn(pa, pb, pc, m, k, n)
        return (c,)


_MATMUL_OK = {"int8", "int16", "int32", "int64", "uint8", "float32", "float64"}


def _set_own_blas():
    global rt_sgemm, rt_dgemm
    s, d = blas_capsules()
    if s is not None:
        rt_sgemm = PyCapsule_GetPointer(s, PyCapsule_GetName(s))
        rt_dgemm = PyCapsule_GetPointer(d, PyCapsule_GetName(d))


_set_own_blas()


def compiled_kernel(op):
    """The compiled kernel for ``op`` (a callable like ``opdef.kernel``), or None."""
    cdef _Elementwise ew
    cdef _MatMul mm
    cdef rt_ew_fn fn
    if op.type == "MatMul":
        mm = _MatMul()
        mm.fallback = op.opdef.kernel
        return mm
    if op.opdef.c_expr is None or op.type == "Identity" or not op.inputs or op.opdef.num_inputs is None:
        return None
    key = op.inputs[len(op.inputs) - 1].dtype if op.type == "SelectV2" else op.inputs[0].dtype
    if key.name not in _CODES or _CODES[key.name] > 8:
        return None
    dst = _CODES[op.attrs["DstT"].name] if op.type == "Cast" else -1
    if dst > 8:
        return None
    fn = rt_ew_lookup(op.type.encode(), _CODES[key.name], dst)
    if fn == NULL:
        return None
    ew = _Elementwise()
    ew.fn = fn
    ew.fallback = op.opdef.kernel
    ew.out_dtype = op.outputs[0].dtype.np
    ew.check = 0
    if key.is_integer and op.type in ("FloorDiv", "FloorMod"):
        ew.check = 1
    elif key.is_integer and op.type == "Pow":
        ew.check = 2
    return ew


def run_plan(list steps, list values):
    """Run plan steps (see runtime.executor.Plan) over the value slots; the hot loop of the executor."""
    cdef tuple step
    for step in steps:
        op, kernel, attrs, ins, outs, kinds = step
        try:
            results = kernel([values[i] for i in ins], attrs)
        except errors.OpError as e:
            raise _located(type(e), str(e), op) from None
        except (ValueError, IndexError, TypeError, ZeroDivisionError, FloatingPointError, OverflowError) as e:
            raise _located(errors.InvalidArgumentError, f"{op.type}: {e}", op) from None
        for slot, value, kind in zip(outs, results, kinds):
            if kind is not None and (type(value) is not np.ndarray or (<cnp.ndarray>value).dtype != kind):
                value = np.asarray(value).astype(kind, copy=False)
            values[slot] = value
