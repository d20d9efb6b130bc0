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
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF, PyObject

from runtime import config, context, errors

cnp.import_array()

cdef extern from "kernels/rt_kernels.h" nogil:
    ctypedef struct rt_tensor:
        void *data
        int64_t shape[8]
        int32_t ndim
        int32_t dtype
        void *owner
    ctypedef struct rt_ctx:
        void **allocs
        int64_t n_allocs
        int64_t cap_allocs
        char msg[1024]
        int py_error
        void *callback
        void *user
        int num_threads
        int inter_threads
    void *rt_alloc(rt_ctx *ctx, size_t nbytes)
    int rt_detach(rt_ctx *ctx, void *p)
    void rt_ctx_free(rt_ctx *ctx)
    int64_t rt_numel(const rt_tensor *t)
    size_t rt_itemsize(int dtype)

ctypedef int (*rt_fn)(rt_ctx *ctx, rt_tensor *inputs, rt_tensor *outputs) noexcept nogil

cdef extern from "kernels/rt_config.h":
    enum:
        RT_STRING
        RT_VARIANT
        RT_PARALLEL_MIN



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


cdef extern from *:
    """
    #include <pthread.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    /* The caching allocator for big buffers shared by every built module (see rt_kernels.h). */
    #define RT_BIG_SLOTS 32
    #define RT_BIG_CACHE_MAX ((size_t)512 << 20)
    #define RT_BIG_HEADER 64
    static pthread_mutex_t rt_big_lock = PTHREAD_MUTEX_INITIALIZER;
    static char *rt_big_slots[RT_BIG_SLOTS];
    static size_t rt_big_cached = 0;
    static size_t rt_big_size(char *block) { return *(size_t *)block; }
    static void *rt_big_alloc_impl(size_t nbytes) {
        char *found = NULL;
        int best = -1;
        pthread_mutex_lock(&rt_big_lock);
        for (int i = 0; i < RT_BIG_SLOTS; i++) {
            char *b = rt_big_slots[i];
            size_t have = b ? rt_big_size(b) - RT_BIG_HEADER : 0;
            if (b && have >= nbytes && have <= 2 * nbytes && (best < 0 || have < rt_big_size(rt_big_slots[best])))
                best = i;
        }
        if (best >= 0) {
            found = rt_big_slots[best];
            rt_big_slots[best] = NULL;
            rt_big_cached -= rt_big_size(found);
        }
        pthread_mutex_unlock(&rt_big_lock);
        if (!found) {
            size_t total = nbytes + RT_BIG_HEADER;
            const int huge = total >= ((size_t)2 << 20);      /* whole huge pages for the big ones */
            void *p = NULL;
            if (posix_memalign(&p, huge ? (size_t)2 << 20 : 64, total) != 0) return NULL;
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
            if (huge) madvise(p, total, MADV_HUGEPAGE);
    #endif
            found = (char *)p;
            *(size_t *)found = total;
        }
        return found + RT_BIG_HEADER;
    }
    static void rt_big_free_impl(void *data) {
        char *block = (char *)data - RT_BIG_HEADER;
        size_t size = rt_big_size(block);
        pthread_mutex_lock(&rt_big_lock);
        for (int i = 0; i < RT_BIG_SLOTS && block; i++) {
            if (!rt_big_slots[i] && rt_big_cached + size <= RT_BIG_CACHE_MAX) {
                rt_big_slots[i] = block;
                rt_big_cached += size;
                block = NULL;
            }
        }
        pthread_mutex_unlock(&rt_big_lock);
        if (block) free(block);
    }
    /* fork() while another thread holds the lock would leave the child's copy locked forever */
    static void rt_big_before_fork(void) { pthread_mutex_lock(&rt_big_lock); }
    static void rt_big_after_fork(void) { pthread_mutex_unlock(&rt_big_lock); }
    static int rt_big_register_fork(void) {
        return pthread_atfork(rt_big_before_fork, rt_big_after_fork, rt_big_after_fork);
    }
    """
    void *rt_big_alloc_impl(size_t nbytes) nogil
    void rt_big_free_impl(void *data) nogil
    int rt_big_register_fork()


if rt_big_register_fork() != 0:
    raise MemoryError("pthread_atfork failed")


cdef void _free_capsule(object capsule) noexcept:
    free(PyCapsule_GetPointer(capsule, b"rt_buffer"))


cdef void _free_big_capsule(object capsule) noexcept:
    rt_big_free_impl(PyCapsule_GetPointer(capsule, b"rt_buffer"))


def allocator_capsules():
    """The big-buffer allocator's alloc/free functions, for built modules to share."""
    return (PyCapsule_New(<void *>rt_big_alloc_impl, b"rt_big_alloc", NULL),
            PyCapsule_New(<void *>rt_big_free_impl, b"rt_big_free", NULL))


# Results at least this big are handed to numpy without a copy (the array owns the arena buffer); a smaller
# one is copied, which costs less than the capsule that would free it.
cdef size_t _HANDOVER_MIN_BYTES = 65536


cdef object _unpack(rt_tensor *t, int typenum, _CallState state, rt_ctx *ctx=NULL):
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
    cdef int kind = rt_detach(ctx, t.data) if ctx != NULL and nbytes >= _HANDOVER_MIN_BYTES else 0
    if kind:
        out = cnp.PyArray_SimpleNewFromData(t.ndim, dims, typenum, t.data)
        cnp.set_array_base(out, PyCapsule_New(t.data, b"rt_buffer", <PyCapsule_Destructor>(
            _free_big_capsule if kind == 2 else _free_capsule)))
        return out
    out = cnp.PyArray_EMPTY(t.ndim, dims, typenum, 0)
    memcpy(cnp.PyArray_DATA(out), t.data, nbytes)
    return out


cdef int _typenum(object dtype):
    return -1 if dtype.np == object else cnp.PyArray_TYPE(<cnp.ndarray>np.empty(0, dtype.np))


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
            arrays.append(_unpack(&ins[i], _typenum(op.inputs[i].dtype), state))
        results = (<NativeFunction>state.function).callback_kernel(op_index)(arrays, op.attrs)
        for i in range(n_out):
            dtype = op.outputs[i].dtype
            code = dtype.code
            value = results[i]
            if code == RT_STRING:
                value = np.asarray(value, dtype=object)
            if _is_object(code):
                _pack(ctx, &outs[i], value, code, state)
            else:
                value = np.asarray(value, dtype=dtype.np, order="C")
                _copy_in(ctx, &outs[i], value, code)
        return 0
    except (errors.OpError,) + errors.KERNEL_ERRORS as e:
        state.error = errors.located(e, state.function.ops[op_index])
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




# Process-wide switches the fast call path reads without touching Python state.
cdef int _active_traces = 0      # graphs being traced (any thread): calls then take the Python path
cdef bint _run_eagerly = False
cdef int _threads = 0            # intra-op threads; 0 = ask runtime.config


def trace_enter():
    global _active_traces
    _active_traces += 1


def trace_exit():
    global _active_traces
    _active_traces -= 1


def _settings_changed():
    """``rt.config`` changed: read the eager switch now and the thread counts on the next call."""
    global _run_eagerly, _threads
    _run_eagerly = config.functions_run_eagerly()
    _threads = 0


# The lower layers tell this module about traces and settings (they do not import it).
context.set_trace_hooks(trace_enter, trace_exit)
config.add_listener(_settings_changed)
_settings_changed()


cdef int _inter = 0


cdef inline int _num_threads():
    global _threads, _inter
    if _threads == 0:
        _threads = config.intra_op_threads()
        _inter = config.inter_op_threads()
    return _threads


from runtime.tensor import EagerTensor as _EagerTensor

cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset

cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member

# EagerTensor is a slotted Python class: the fast path reads and writes its two slots
# at their offsets, as the slot descriptors themselves do.
cdef Py_ssize_t _VALUE_OFFSET = (<PyMemberDescrObject *><PyObject *>_EagerTensor.__dict__["_value"]).d_member.offset
cdef Py_ssize_t _DTYPE_OFFSET = (<PyMemberDescrObject *><PyObject *>_EagerTensor.__dict__["dtype"]).d_member.offset
cdef type _EAGER = _EagerTensor
cdef type _NDARRAY = np.ndarray


cdef inline PyObject *_slot(object obj, Py_ssize_t offset):
    return (<PyObject **>(<char *><PyObject *>obj + offset))[0]


cdef inline void _set_slot(object obj, Py_ssize_t offset, object value):
    cdef PyObject **where = <PyObject **>(<char *><PyObject *>obj + offset)
    Py_INCREF(value)
    Py_XDECREF(where[0])
    where[0] = <PyObject *>value


cdef class NativeFunction:
    """A generated C function for one concrete signature; ``call(arrays)`` runs it without the GIL.

    ``try_call(args)`` is the fast path used by ``Function.__call__``: when every argument is
    an eager tensor of the built dtype and shape it runs the code and returns the result
    tensor, else None.
    """

    cdef rt_fn fn
    cdef int n_in, n_out, n_vars
    cdef int in_codes[64]
    cdef int in_typenums[64]
    cdef int in_ndims[64]
    cdef int64_t in_dims[64][8]
    cdef bint fast_ok, resolved
    cdef public list ops
    cdef public list out_dtypes
    cdef public list variables
    cdef public object name
    cdef object resolve
    cdef object single_dtype
    cdef int out_typenums[64]
    cdef bint needs_state, small
    cdef int n_args
    cdef int arg_tensor[64]       # per positional argument: tensor input index, or -1 for a fixed Python value
    cdef list fixed               # per positional argument: the Python value it was built with
    cdef dict callback_kernels    # op index -> the kernel its callback runs

    def __init__(self, capsule, graph, ops, variables, name="", resolve=None, single_output=False,
                 needs_state=True, small=False, arguments=None):
        cdef int i, d
        self.fn = <rt_fn>PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))
        self.ops = list(ops)
        self.variables = list(variables)
        self.n_vars = len(self.variables)
        self.n_in = len(graph.inputs)
        if self.n_in + self.n_vars > 64:
            raise ValueError("native functions take at most 64 tensor inputs and variables")
        self.fast_ok = True
        for i, t in enumerate(graph.inputs):
            self.in_codes[i] = t.dtype.code
            if _is_object(self.in_codes[i]):
                self.fast_ok = False
                continue
            self.in_typenums[i] = cnp.PyArray_TYPE(<cnp.ndarray>np.empty(0, t.dtype.np))
            if t.shape.rank is None:
                self.fast_ok = False
                continue
            self.in_ndims[i] = t.shape.rank
            for d in range(t.shape.rank):
                self.in_dims[i][d] = -1 if t.shape.dims[d] is None else t.shape.dims[d]
        self.out_dtypes = [t.dtype for t in graph.outputs]
        self.n_out = len(self.out_dtypes)
        if self.n_out > 64:
            raise ValueError("native functions return at most 64 tensors")
        for i, dtype in enumerate(self.out_dtypes):
            self.out_typenums[i] = -1 if _is_object(dtype.code) else \
                cnp.PyArray_TYPE(<cnp.ndarray>np.empty(0, dtype.np))
        # string/variant values and Python callbacks need the per-call state object
        self.needs_state = needs_state or any(_is_object(t.dtype.code) for t in graph.inputs) \
            or any(_is_object(d.code) for d in self.out_dtypes)
        self.single_dtype = self.out_dtypes[0] if single_output and self.n_out == 1 \
            and not _is_object(self.out_dtypes[0].code) else None
        self.name = name
        self.resolve = resolve
        self.resolved = resolve is None
        # a few hundred nanoseconds of straight-line work: releasing the GIL would cost more than it frees
        self.small = small
        # the positional arguments the fast path accepts: tensors (in order) and fixed Python values
        if arguments is None:
            arguments = [True] * self.n_in
        self.n_args = len(arguments)
        self.fixed = []
        k = 0
        for i, argument in enumerate(arguments):
            if argument is True:
                self.arg_tensor[i] = k
                k += 1
                self.fixed.append(None)
            else:
                self.arg_tensor[i] = -1
                self.fixed.append(argument[0])
        if k != self.n_in or self.n_args > 64:
            self.fast_ok = False

    cdef object callback_kernel(self, int op_index):
        """The kernel a callback runs: the kernel library's GEMM for MatMul (numpy's would start OpenBLAS's own
        thread pool, which fights OpenMP's for the cores), the op's numpy kernel otherwise."""
        op = self.ops[op_index]
        if op.type != "MatMul":
            return op.opdef.kernel
        if self.callback_kernels is None:
            self.callback_kernels = {}
        kernel = self.callback_kernels.get(op_index)
        if kernel is None:
            kernel = self.callback_kernels[op_index] = compiled_kernel(op)
        return kernel

    def call(self, list arrays):
        cdef PyObject *ptrs[64]
        cdef int i
        if len(arrays) != self.n_in:
            raise ValueError(f"{self.name}: expected {self.n_in} arrays, got {len(arrays)}")
        for i in range(self.n_in):
            ptrs[i] = <PyObject *>arrays[i]
        return self._run(ptrs, False)

    cdef object _run(self, PyObject **arrays, bint first_only):
        """Run the C function; ``arrays`` are borrowed references kept alive by the caller."""
        cdef rt_ctx ctx
        cdef rt_tensor ins[64]
        cdef rt_tensor outs[64]
        cdef int i, rc
        cdef _CallState state = None
        cdef list keep = None
        if not self.resolved:
            self.resolve()
            self.resolved = True
        ctx.allocs = NULL
        ctx.n_allocs = 0
        ctx.cap_allocs = 0
        ctx.msg[0] = 0
        ctx.py_error = 0
        ctx.callback = <void *>_callback
        ctx.user = NULL
        ctx.num_threads = _num_threads()
        ctx.inter_threads = _inter
        if self.needs_state:
            state = _CallState()
            state.function = self
            state.objects = []
            ctx.user = <void *>state
        try:
            for i in range(self.n_in):
                a = <object>arrays[i]
                if not _is_object(self.in_codes[i]):
                    if cnp.PyArray_TYPE(<cnp.ndarray>a) != self.in_typenums[i]:
                        raise errors.InvalidArgumentError(
                            f"{self.name}: input {i} must be an array of type number {self.in_typenums[i]}, "
                            f"got {a.dtype}")
                    if not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a) or \
                            not cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>a):
                        # the C code reads native-order, C-contiguous data ('>f4' is float32 too)
                        a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
                        if keep is None:
                            keep = []
                        keep.append(a)
                _pack(&ctx, &ins[i], a, self.in_codes[i], state)
            for i in range(self.n_vars):
                variable = (<object>self.variables[i]).get()
                storage = variable._value
                if not storage.flags.c_contiguous or not storage.flags.writeable:
                    storage = variable._value = np.array(storage, copy=True, order="C")
                if keep is None:
                    keep = []
                keep.append(storage)
                _pack(&ctx, &ins[self.n_in + i], storage, variable.dtype.code, state)
            if self.small:
                rc = self.fn(&ctx, ins, outs)
            else:
                with nogil:
                    rc = self.fn(&ctx, ins, outs)
            if rc != 0:
                if state is not None and state.error is not None:
                    raise state.error
                raise errors.InvalidArgumentError(ctx.msg.decode("utf-8", "replace"))
            if first_only:
                return _unpack(&outs[0], self.out_typenums[0], state, &ctx)
            return [_unpack(&outs[i], self.out_typenums[i], state, &ctx) for i in range(self.n_out)]
        finally:
            rt_ctx_free(&ctx)

    cdef object try_call(self, tuple args):
        cdef int i, d, k, n = len(args)
        cdef cnp.ndarray a
        cdef PyObject *values[64]
        cdef list scalars = None
        if not self.fast_ok or self.single_dtype is None or n != self.n_args:
            return None
        for i in range(n):
            x = args[i]
            k = self.arg_tensor[i]
            if k < 0:
                want = self.fixed[i]
                if type(x) is not type(want) or x != want:
                    return None
                continue
            if type(x) is _EAGER and _slot(x, _VALUE_OFFSET) != NULL:
                a = <cnp.ndarray>_slot(x, _VALUE_OFFSET)
            elif type(x) is _NDARRAY:          # numpy arrays are tensors of their dtype (tracing rules)
                a = <cnp.ndarray>x
            elif cnp.PyArray_CheckScalar(x):      # numpy scalars (not Python numbers)
                a = np.asarray(x)              # a numpy scalar is a 0-d tensor, like a 0-d array
                if scalars is None:
                    scalars = []
                scalars.append(a)              # (keeps it alive: values[] are borrowed)
            else:
                return None
            if cnp.PyArray_TYPE(a) != self.in_typenums[k] or cnp.PyArray_NDIM(a) != self.in_ndims[k] \
                    or not cnp.PyArray_ISNOTSWAPPED(a):
                return None                    # (the Python path converts other dtypes and byte orders)
            for d in range(self.in_ndims[k]):
                if self.in_dims[k][d] != -1 and self.in_dims[k][d] != cnp.PyArray_DIMS(a)[d]:
                    return None
            values[k] = <PyObject *>a     # borrowed: the argument tensor keeps it alive
        result = self._run(values, True)
        tensor = _new_tensor(_EAGER)
        _set_slot(tensor, _VALUE_OFFSET, result)
        _set_slot(tensor, _DTYPE_OFFSET, self.single_dtype)
        return tensor


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)
    ctypedef struct PyTypeObject:
        PyObject *(*tp_alloc)(PyTypeObject *, Py_ssize_t)


cdef inline object _new_tensor(type cls):
    """An empty instance of the (slotted, no __init__ needed) EagerTensor class: tp_alloc, no Python call."""
    cdef PyObject *obj = (<PyTypeObject *>cls).tp_alloc(<PyTypeObject *>cls, 0)
    if obj == NULL:
        raise MemoryError()
    result = <object>obj       # takes a new reference ...
    Py_DECREF(result)          # ... so drop tp_alloc's own
    PyObject_GC_UnTrack(obj)   # it only refers to an array and a dtype: it can never be part of a cycle
    return result


cdef class FunctionBase:
    """Base of ``rt.Function``: ``__call__`` first tries the built signatures' native code in C."""

    cdef public list _fast_natives

    def __call__(self, *args, **kwargs):
        # (calls on instances go through _function_call below; this is Function.__call__(f, ...))
        return _function_call(self, args, <PyObject *>kwargs)


cdef object _function_call(object self, object args, PyObject *kwargs):
    """tp_call of Function: the fast path without building a kwargs dict, else the Python path."""
    cdef NativeFunction native
    cdef FunctionBase function = <FunctionBase>self
    if function._fast_natives and (kwargs == NULL or not <object>kwargs) and not _run_eagerly \
            and _active_traces == 0:
        for native in function._fast_natives:
            result = native.try_call(<tuple>args)
            if result is not None:
                return result
    if kwargs == NULL:
        return self._call_python(*args)
    return self._call_python(*args, **<object>kwargs)


cdef extern from "Python.h":
    ctypedef PyObject *(*ternaryfunc)(PyObject *, PyObject *, PyObject *)
    ctypedef struct PyTypeObject_call "PyTypeObject":
        ternaryfunc tp_call
    void PyType_Modified(PyTypeObject_call *)



def install_fast_call(type cls):
    """Make ``cls`` (rt.Function) call ``_function_call`` directly, skipping the kwargs dict of ``__call__``.

    A Python subclass resolves its call slot to the base's ``__call__`` wrapper, so the slot is set on
    the subclass itself once it exists (what CPython's own slot updates do).
    """
    if not issubclass(cls, FunctionBase):
        raise TypeError(f"{cls} is not a FunctionBase")
    (<PyTypeObject_call *>cls).tp_call = <ternaryfunc>_function_call
    PyType_Modified(<PyTypeObject_call *>cls)


# ---------------------------------------------------------------------------
# The generic executor: runs any graph (no C compiler needed) with the kernel
# library's compiled loops where they apply, the op's numpy kernel elsewhere.

cdef extern from "kernels/rt_elementwise.h" nogil:
    ctypedef void (*rt_ew_fn)(void *const *ins, void *out, int64_t n, const int64_t *s, int threads)
    rt_ew_fn rt_ew_lookup(const char *op, int dtype, int dst)

ctypedef int (*gemm_batch_fn)(rt_ctx *ctx, const void *a, const void *b, void *c, int batch_ndim,
                              const int64_t *batch_shape, const int64_t *a_batch_strides,
                              const int64_t *b_batch_strides, int64_t m, int64_t k, int64_t n,
                              int transpose_a, int transpose_b) noexcept nogil

# The batched products of the kernel library (see rt_kernels.h), declared with untyped data pointers:
# the executor calls them through one pointer type, chosen by dtype (other dtypes use the op's numpy kernel).
cdef extern from "kernels/rt_kernels.h" nogil:
    int rt_gemm_batch_int8(rt_ctx *, const void *, const void *, void *, int, const int64_t *, const int64_t *,
                           const int64_t *, int64_t, int64_t, int64_t, int, int)
    int rt_gemm_batch_int16(rt_ctx *, const void *, const void *, void *, int, const int64_t *, const int64_t *,
                            const int64_t *, int64_t, int64_t, int64_t, int, int)
    int rt_gemm_batch_int32(rt_ctx *, const void *, const void *, void *, int, const int64_t *, const int64_t *,
                            const int64_t *, int64_t, int64_t, int64_t, int, int)
    int rt_gemm_batch_int64(rt_ctx *, const void *, const void *, void *, int, const int64_t *, const int64_t *,
                            const int64_t *, int64_t, int64_t, int64_t, int, int)
    int rt_gemm_batch_uint8(rt_ctx *, const void *, const void *, void *, int, const int64_t *, const int64_t *,
                            const int64_t *, int64_t, int64_t, int64_t, int, int)
    int rt_gemm_batch_float32(rt_ctx *, const void *, const void *, void *, int, const int64_t *, const int64_t *,
                              const int64_t *, int64_t, int64_t, int64_t, int, int)
    int rt_gemm_batch_float64(rt_ctx *, const void *, const void *, void *, int, const int64_t *, const int64_t *,
                              const int64_t *, int64_t, int64_t, int64_t, int, int)

_GEMM_BATCH = {
    "int8": <intptr_t><gemm_batch_fn>rt_gemm_batch_int8, "int16": <intptr_t><gemm_batch_fn>rt_gemm_batch_int16,
    "int32": <intptr_t><gemm_batch_fn>rt_gemm_batch_int32, "int64": <intptr_t><gemm_batch_fn>rt_gemm_batch_int64,
    "uint8": <intptr_t><gemm_batch_fn>rt_gemm_batch_uint8,
    "float32": <intptr_t><gemm_batch_fn>rt_gemm_batch_float32,
    "float64": <intptr_t><gemm_batch_fn>rt_gemm_batch_float64,
}


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
        threads = config.intra_op_threads() if n >= RT_PARALLEL_MIN else 1
        with nogil:
            self.fn(ptrs, out_data, n, steps, threads)
        return (out,)


cdef class _MatMul:
    """MatMul through the kernel library's GEMM: transposed operands and broadcast batches included."""
    cdef object fallback

    def __call__(self, list inputs, attrs):
        cdef cnp.ndarray a = inputs[0], b = inputs[1], c
        cdef gemm_batch_fn fn
        cdef rt_ctx ctx
        cdef int64_t m, k, n, k2
        cdef int64_t shape[8]
        cdef int64_t a_strides[8]
        cdef int64_t b_strides[8]
        cdef int ta = bool(attrs.get("transpose_a")), tb = bool(attrs.get("transpose_b"))
        cdef int d, nd, rc
        address = _GEMM_BATCH.get(a.dtype.name)
        if address is None or a.dtype != b.dtype or a.ndim < 2 or b.ndim < 2 or max(a.ndim, b.ndim) > 10:
            return self.fallback(inputs, attrs)
        *a_batch, a_rows, a_cols = (<object>a).shape
        *b_batch, b_rows, b_cols = (<object>b).shape
        m, k = (a_cols, a_rows) if ta else (a_rows, a_cols)
        k2, n = (b_cols, b_rows) if tb else (b_rows, b_cols)
        try:
            batch = np.broadcast_shapes(tuple(a_batch), tuple(b_batch))
        except ValueError:
            return self.fallback(inputs, attrs)     # it raises the op's own error
        if k != k2:
            return self.fallback(inputs, attrs)
        a = np.ascontiguousarray(a)
        b = np.ascontiguousarray(b)
        nd = len(batch)
        for d in range(nd):
            shape[d] = batch[d]
            a_strides[d] = _batch_stride(a, d - nd + a.ndim - 2, batch[d])
            b_strides[d] = _batch_stride(b, d - nd + b.ndim - 2, batch[d])
        c = np.empty(tuple(batch) + (m, n), a.dtype)
        fn = <gemm_batch_fn><intptr_t>address
        ctx.msg[0] = 0
        ctx.num_threads = config.intra_op_threads()
        with nogil:
            rc = fn(&ctx, cnp.PyArray_DATA(a), cnp.PyArray_DATA(b), cnp.PyArray_DATA(c), nd, shape, a_strides,
                    b_strides, m, k, n, ta, tb)
        if rc != 0:
            raise MemoryError(ctx.msg.decode("utf-8", "replace"))
        return (c,)


cdef int64_t _batch_stride(cnp.ndarray x, int axis, int64_t size):
    """Elements between consecutive matrices of contiguous ``x`` along batch ``axis`` (0 where it broadcasts)."""
    if axis < 0 or x.shape[axis] == 1:
        return 0
    return x.strides[axis] // x.itemsize


cdef extern from "kernels/rt_kernels.h" nogil:
    ctypedef void *(*rt_big_alloc_fn)(size_t nbytes)
    ctypedef void (*rt_big_free_fn)(void *data)
    rt_big_alloc_fn rt_big_alloc
    rt_big_free_fn rt_big_free

rt_big_alloc = <rt_big_alloc_fn>rt_big_alloc_impl
rt_big_free = <rt_big_free_fn>rt_big_free_impl

# ---------------------------------------------------------------------------
# Convolution and max pooling (runtime/kernels/rt_nn.h), float32 and float64.

cdef extern from "kernels/rt_nn.h" nogil:
    ctypedef struct rt_window:
        int64_t n, h, w, c, kh, kw, f, sh, sw, top, left, oh, ow
    int rt_window_init(rt_window *g, int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,
                       int64_t f, int64_t sh, int64_t sw, int same)
    int rt_conv2d_float32(const float *x, const float *filt, float *y, const rt_window *g, int threads)
    int rt_conv2d_float64(const double *x, const double *filt, double *y, const rt_window *g, int threads)
    int rt_conv2d_backprop_input_float32(const float *filt, const float *dy, float *dx, const rt_window *g,
                                         int threads)
    int rt_conv2d_backprop_input_float64(const double *filt, const double *dy, double *dx, const rt_window *g,
                                         int threads)
    int rt_conv2d_backprop_filter_float32(const float *x, const float *dy, float *dfilt, const rt_window *g,
                                          int threads)
    int rt_conv2d_backprop_filter_float64(const double *x, const double *dy, double *dfilt, const rt_window *g,
                                          int threads)
    void rt_max_pool_float32(const float *x, float *y, const rt_window *g, int threads)
    void rt_max_pool_float64(const double *x, double *y, const rt_window *g, int threads)
    void rt_max_pool_grad_float32(const float *x, const float *y, const float *dy, float *dx, const rt_window *g,
                                  int threads)
    void rt_max_pool_grad_float64(const double *x, const double *y, const double *dy, double *dx,
                                  const rt_window *g, int threads)

DEF NN_CONV = 0
DEF NN_CONV_INPUT = 1
DEF NN_CONV_FILTER = 2
DEF NN_POOL = 3
DEF NN_POOL_GRAD = 4

_NN_KINDS = {"Conv2D": NN_CONV, "Conv2DBackpropInput": NN_CONV_INPUT, "Conv2DBackpropFilter": NN_CONV_FILTER,
             "MaxPool": NN_POOL, "MaxPoolGrad": NN_POOL_GRAD}


cdef inline void *_data(object a):
    return cnp.PyArray_DATA(<cnp.ndarray>a)


cdef class _NNKernel:
    """A convolution or pooling op on C-contiguous float arrays; anything unusual goes to the numpy kernel
    (which also gives the error messages)."""
    cdef object fallback
    cdef int kind

    def __call__(self, list inputs, attrs):
        cdef rt_window g
        cdef int rc = 0, threads, same = attrs["padding"] == "SAME", wide
        cdef int64_t sh = attrs["strides"][0], sw = attrs["strides"][1]
        cdef void *p0
        cdef void *p1
        cdef void *p2
        cdef void *po
        floats = [x for x in inputs if x.dtype.kind == "f"]
        if not floats or floats[0].dtype.name not in ("float32", "float64") \
                or any(x.dtype != floats[0].dtype for x in floats):
            return self.fallback(inputs, attrs)
        dtype = floats[0].dtype
        wide = dtype.name == "float64"
        threads = config.intra_op_threads()
        if self.kind == NN_CONV:
            x, filt = np.ascontiguousarray(inputs[0]), np.ascontiguousarray(inputs[1])
            if x.ndim != 4 or filt.ndim != 4 or x.shape[3] != filt.shape[2] or rt_window_init(
                    &g, x.shape[0], x.shape[1], x.shape[2], x.shape[3], filt.shape[0], filt.shape[1], filt.shape[3],
                    sh, sw, same) != 0:
                return self.fallback(inputs, attrs)
            out = np.empty((g.n, g.oh, g.ow, g.f), dtype)
            p0, p1, po = _data(x), _data(filt), _data(out)
            with nogil:
                if wide:
                    rc = rt_conv2d_float64(<double *>p0, <double *>p1, <double *>po, &g, threads)
                else:
                    rc = rt_conv2d_float32(<float *>p0, <float *>p1, <float *>po, &g, threads)
        elif self.kind == NN_CONV_INPUT:
            sizes = [int(d) for d in inputs[0]]
            filt, dy = np.ascontiguousarray(inputs[1]), np.ascontiguousarray(inputs[2])
            if len(sizes) != 4 or filt.ndim != 4 or sizes[3] != filt.shape[2] or rt_window_init(
                    &g, sizes[0], sizes[1], sizes[2], sizes[3], filt.shape[0], filt.shape[1], filt.shape[3], sh, sw,
                    same) != 0 or dy.shape != (g.n, g.oh, g.ow, g.f):
                return self.fallback(inputs, attrs)
            out = np.empty(sizes, dtype)
            p0, p1, po = _data(filt), _data(dy), _data(out)
            with nogil:
                if wide:
                    rc = rt_conv2d_backprop_input_float64(<double *>p0, <double *>p1, <double *>po, &g, threads)
                else:
                    rc = rt_conv2d_backprop_input_float32(<float *>p0, <float *>p1, <float *>po, &g, threads)
        elif self.kind == NN_CONV_FILTER:
            sizes = [int(d) for d in inputs[1]]
            x, dy = np.ascontiguousarray(inputs[0]), np.ascontiguousarray(inputs[2])
            if len(sizes) != 4 or x.ndim != 4 or sizes[2] != x.shape[3] or rt_window_init(
                    &g, x.shape[0], x.shape[1], x.shape[2], x.shape[3], sizes[0], sizes[1], sizes[3], sh, sw,
                    same) != 0 or dy.shape != (g.n, g.oh, g.ow, g.f):
                return self.fallback(inputs, attrs)
            out = np.empty(sizes, dtype)
            p0, p1, po = _data(x), _data(dy), _data(out)
            with nogil:
                if wide:
                    rc = rt_conv2d_backprop_filter_float64(<double *>p0, <double *>p1, <double *>po, &g, threads)
                else:
                    rc = rt_conv2d_backprop_filter_float32(<float *>p0, <float *>p1, <float *>po, &g, threads)
        else:
            kh, kw = attrs["ksize"]
            x = np.ascontiguousarray(inputs[0])
            if x.ndim != 4 or rt_window_init(&g, x.shape[0], x.shape[1], x.shape[2], x.shape[3], kh, kw,
                                             x.shape[3], sh, sw, same) != 0:
                return self.fallback(inputs, attrs)
            if self.kind == NN_POOL:
                out = np.empty((g.n, g.oh, g.ow, g.c), dtype)
                p0, po = _data(x), _data(out)
                with nogil:
                    if wide:
                        rt_max_pool_float64(<double *>p0, <double *>po, &g, threads)
                    else:
                        rt_max_pool_float32(<float *>p0, <float *>po, &g, threads)
            else:
                y, dy = np.ascontiguousarray(inputs[1]), np.ascontiguousarray(inputs[2])
                if y.shape != (g.n, g.oh, g.ow, g.c) or dy.shape != y.shape:
                    return self.fallback(inputs, attrs)
                out = np.empty(x.shape, dtype)
                p0, p1, p2, po = _data(x), _data(y), _data(dy), _data(out)
                with nogil:
                    if wide:
                        rt_max_pool_grad_float64(<double *>p0, <double *>p1, <double *>p2, <double *>po, &g, threads)
                    else:
                        rt_max_pool_grad_float32(<float *>p0, <float *>p1, <float *>p2, <float *>po, &g, threads)
        if rc != 0:
            raise MemoryError(f"{self.fallback.__name__}: out of memory")
        return (out,)


def compiled_kernel(op):
    """The compiled kernel for ``op`` (a callable like ``opdef.kernel``), or None."""
    cdef _Elementwise ew
    cdef _MatMul mm
    cdef rt_ew_fn fn
    if op.type == "MatMul":
        mm = _MatMul()
        mm.fallback = op.opdef.kernel
        return mm
    if op.type in _NN_KINDS:
        nn = _NNKernel()
        nn.kind = _NN_KINDS[op.type]
        nn.fallback = op.opdef.kernel
        return nn
    if not op.opdef.elementwise or op.type == "Identity" or not op.inputs or op.opdef.num_inputs is None:
        return None
    key = op.inputs[len(op.inputs) - 1].dtype if op.type == "SelectV2" else op.inputs[0].dtype
    if key.c_type is None:
        return None
    dst = op.attrs["DstT"].code if op.type == "Cast" else -1
    if op.type == "Cast" and op.attrs["DstT"].c_type is None:
        return None
    fn = rt_ew_lookup(op.type.encode(), key.code, dst)
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
        except (errors.OpError,) + errors.KERNEL_ERRORS as e:
            raise errors.located(e, op) from None
        for slot, value, kind in zip(outs, results, kinds):
            if kind is not None and (type(value) is not np.ndarray or (<cnp.ndarray>value).dtype != kind):
                value = np.asarray(value).astype(kind, copy=False)
            values[slot] = value
