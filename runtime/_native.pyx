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
from libc.stdint cimport int64_t, int32_t, intptr_t, uint64_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, free
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF, PyObject
from cpython.exc cimport PyErr_CheckSignals

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
        int max_threads
    void *rt_alloc(rt_ctx *ctx, size_t nbytes)
    int rt_detach(rt_ctx *ctx, void *p)
    void rt_ctx_free(rt_ctx *ctx)
    int64_t rt_numel(const rt_tensor *t)
    size_t rt_itemsize(int dtype)
    int rt_available_threads(int wanted)
    enum:
        RT_GEMM_TINY

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
    /* Ctrl-C in native loops (rt_kernels.h): a SIGINT handler that sets the flag every built module reads, then
     * runs the handler it replaced (Python's, which makes the interpreter raise KeyboardInterrupt). Installed
     * over a handler that is a function (Python's), never over SIG_DFL or SIG_IGN; Python reinstalls its own
     * when a program calls signal.signal(SIGINT, ...), and rt_watch_sigint puts this one back in front. */
    #include <signal.h>
    static struct sigaction rt_sigint_previous;
    static void rt_on_sigint(int sig, siginfo_t *info, void *uctx) {
        rt_interrupt_flag = 1;
        if (rt_sigint_previous.sa_flags & SA_SIGINFO) {
            if (rt_sigint_previous.sa_sigaction) rt_sigint_previous.sa_sigaction(sig, info, uctx);
        } else if (rt_sigint_previous.sa_handler != SIG_DFL && rt_sigint_previous.sa_handler != SIG_IGN) {
            rt_sigint_previous.sa_handler(sig);
        }
    }
    static void rt_watch_sigint(void) {
        struct sigaction now, mine;
        if (sigaction(SIGINT, NULL, &now) != 0) return;
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == rt_on_sigint) return;
        if (!(now.sa_flags & SA_SIGINFO) && (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN)) return;
        rt_sigint_previous = now;
        memset(&mine, 0, sizeof(mine));
        mine.sa_sigaction = rt_on_sigint;
        mine.sa_flags = SA_SIGINFO | (now.sa_flags & SA_RESTART);
        sigemptyset(&mine.sa_mask);
        sigaction(SIGINT, &mine, NULL);
    }
    static void *rt_interrupt_address(void) { return (void *)rt_interrupt; }
    static void rt_clear_interrupt(void) { *rt_interrupt = 0; }
    static int rt_was_interrupted(void) { return *rt_interrupt; }
    """
    void *rt_big_alloc_impl(size_t nbytes) nogil
    void rt_big_free_impl(void *data) nogil
    int rt_big_register_fork()
    void rt_watch_sigint()
    void *rt_interrupt_address()
    void rt_clear_interrupt() nogil
    int rt_was_interrupted() nogil


if rt_big_register_fork() != 0:
    raise MemoryError("pthread_atfork failed")


cdef void _free_capsule(object capsule) noexcept:
    free(PyCapsule_GetPointer(capsule, b"rt_buffer"))


cdef void _free_big_capsule(object capsule) noexcept:
    rt_big_free_impl(PyCapsule_GetPointer(capsule, b"rt_buffer"))


def allocator_capsules():
    """The big-buffer allocator's alloc/free functions (extensions built before ``runtime_capsules`` call this)."""
    return (PyCapsule_New(<void *>rt_big_alloc_impl, b"rt_big_alloc", NULL),
            PyCapsule_New(<void *>rt_big_free_impl, b"rt_big_free", NULL))


def runtime_capsules():
    """What built modules share with this one: the big-buffer allocator's alloc/free functions and the Ctrl-C
    flag their loops read (``rt_set_runtime`` in the generated header)."""
    rt_watch_sigint()
    return allocator_capsules() + (PyCapsule_New(rt_interrupt_address(), b"rt_interrupt", NULL),)


rt_watch_sigint()


def _interrupted() -> BaseException:
    """The exception a native call stopped by Ctrl-C raises: what Python's handler raises, else KeyboardInterrupt."""
    PyErr_CheckSignals()
    return KeyboardInterrupt()


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
cdef bint _follow_load = False


cdef inline int _num_threads():
    global _threads, _inter, _follow_load
    if _threads == 0:
        _threads = config.intra_op_threads()
        _inter = config.inter_op_threads()
        _follow_load = config.threads_follow_load()
    return rt_available_threads(_threads) if _follow_load else _threads


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
    cdef bint convert_scalars     # Python numbers convert to 0-d tensor inputs (an input_signature's rule)
    cdef dict callback_kernels    # op index -> the kernel its callback runs
    # The shapes a shape-generic function ran, for the signature ledger (``sample``): up to 8, by a hash of
    # the input shapes, with their number of calls.
    cdef bint sample
    cdef int n_seen
    cdef uint64_t seen_hash[8]
    cdef int64_t seen_count[8]
    cdef list seen_shapes

    def __init__(self, capsule, graph, ops, variables, name="", resolve=None, single_output=False,
                 needs_state=True, small=False, arguments=None, convert_scalars=False, sample=False):
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
        self.sample = sample and self.fast_ok
        self.seen_shapes = []
        # the positional arguments the fast path accepts: tensors (in order) and fixed Python values
        self.convert_scalars = convert_scalars
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

    cdef object _run(self, PyObject **arrays, bint first_only, void **scalars=NULL):
        """Run the C function; ``arrays`` are borrowed references kept alive by the caller. An input whose
        ``scalars`` entry is set is a 0-d value stored there (a converted Python number, no array)."""
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
        ctx.max_threads = _threads
        ctx.inter_threads = _inter if not _follow_load or _inter <= ctx.num_threads else ctx.num_threads
        if self.needs_state:
            state = _CallState()
            state.function = self
            state.objects = []
            ctx.user = <void *>state
        try:
            for i in range(self.n_in):
                if scalars != NULL and scalars[i] != NULL:
                    ins[i].data = scalars[i]
                    ins[i].ndim = 0
                    ins[i].dtype = self.in_codes[i]
                    ins[i].owner = NULL
                    continue
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
            if self.sample:
                self._sample(ins)
            rt_clear_interrupt()
            if self.small:
                rc = self.fn(&ctx, ins, outs)
            else:
                with nogil:
                    rc = self.fn(&ctx, ins, outs)
            if rc != 0:
                if state is not None and state.error is not None:
                    raise state.error
                if rt_was_interrupted():
                    raise _interrupted()
                raise errors.InvalidArgumentError(ctx.msg.decode("utf-8", "replace"))
            if first_only:
                return _unpack(&outs[0], self.out_typenums[0], state, &ctx)
            return [_unpack(&outs[i], self.out_typenums[i], state, &ctx) for i in range(self.n_out)]
        finally:
            rt_ctx_free(&ctx)

    cdef int _sample(self, rt_tensor *ins) except -1:
        """Count this call's input shapes (see ``seen``)."""
        cdef uint64_t h = 1469598103934665603ULL
        cdef int i, d
        for i in range(self.n_in):
            h = (h ^ <uint64_t>ins[i].ndim) * 1099511628211ULL
            for d in range(ins[i].ndim):
                h = (h ^ <uint64_t>ins[i].shape[d]) * 1099511628211ULL
        for i in range(self.n_seen):
            if self.seen_hash[i] == h:
                self.seen_count[i] += 1
                return 0
        if self.n_seen < 8:
            self.seen_hash[self.n_seen] = h
            self.seen_count[self.n_seen] = 1
            self.seen_shapes.append(tuple([tuple([ins[i].shape[d] for d in range(ins[i].ndim)])
                                           for i in range(self.n_in)]))
            self.n_seen += 1
        return 0

    def seen(self):
        """``[(input shapes, calls)]``: the shapes this shape-generic function ran (the first 8 distinct ones)."""
        return [(self.seen_shapes[i], self.seen_count[i]) for i in range(self.n_seen)]

    cdef object try_call(self, tuple args):
        cdef int i, d, k, n = len(args)
        cdef cnp.ndarray a
        cdef PyObject *values[64]
        cdef list scalars = None
        cdef int64_t scalar_values[64]    # Python numbers converted for 0-d inputs (8 bytes hold any of them)
        cdef void *scalar_ptrs[64]
        cdef void **scalar_data = NULL
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
            elif self.convert_scalars and self.in_ndims[k] == 0 and (
                    type(x) is float or type(x) is int or type(x) is bool):
                if scalar_data == NULL:
                    memset(scalar_ptrs, 0, sizeof(void *) * self.n_in)
                    scalar_data = scalar_ptrs
                if not _python_scalar(x, self.in_typenums[k], &scalar_values[k]):
                    return None                # (the Python path gives the rule's error or conversion)
                scalar_ptrs[k] = &scalar_values[k]
                values[k] = NULL
                continue
            else:
                return None
            if cnp.PyArray_TYPE(a) != self.in_typenums[k] or cnp.PyArray_NDIM(a) != self.in_ndims[k] \
                    or not cnp.PyArray_ISNOTSWAPPED(a):
                return None                    # (the Python path converts other dtypes and byte orders)
            for d in range(self.in_ndims[k]):
                if self.in_dims[k][d] != -1 and self.in_dims[k][d] != cnp.PyArray_DIMS(a)[d]:
                    return None
            values[k] = <PyObject *>a     # borrowed: the argument tensor keeps it alive
        result = self._run(values, True, scalar_data)
        tensor = _new_tensor(_EAGER)
        _set_slot(tensor, _VALUE_OFFSET, result)
        _set_slot(tensor, _DTYPE_OFFSET, self.single_dtype)
        return tensor


cdef extern from "Python.h":
    long long PyLong_AsLongLongAndOverflow(object obj, int *overflow) except? -1
    double PyFloat_AS_DOUBLE(object obj)

cdef extern from "math.h" nogil:
    float floorf(float x)
    bint isinf(double x)


cdef bint _python_scalar(object x, int typenum, void *out) except -1:
    """Store a Python bool, int or float in ``out`` as numpy type ``typenum``, converted as
    ``runtime.tensor.to_array`` converts it (floats go through float32, as ``tf.constant`` does, except for a
    float64 tensor, which takes the double itself; ints and
    floats to ints only when integral and in range; to bool only 0 and 1). False where that rule has more to
    say (an error, an out-of-range value, another dtype): the caller takes the Python path, which says it."""
    cdef int overflow = 0
    cdef long long v = 0
    cdef double d = 0
    cdef float f = 0
    cdef bint is_float = False
    if type(x) is bool:
        v = 1 if x is True else 0
    elif type(x) is int:
        v = PyLong_AsLongLongAndOverflow(x, &overflow)
        if overflow:
            return False
    else:
        d = PyFloat_AS_DOUBLE(x)
        f = <float>d
        is_float = True
        if isinf(f) and not isinf(d) and typenum != cnp.NPY_FLOAT64:
            return False                   # (out of float32's range: the Python path rounds it, as numpy does)
    if typenum == cnp.NPY_FLOAT32:
        (<float *>out)[0] = f if is_float else <float>v
    elif typenum == cnp.NPY_FLOAT64:
        (<double *>out)[0] = d if is_float else <double>v      # a Python float is a double: rounded once
    elif typenum == cnp.NPY_INT32:
        if is_float:
            if not (f == floorf(f) and -2147483648.0 <= f < 2147483648.0):
                return False
            v = <long long>f
        elif not (-2147483648 <= v < 2147483648):
            return False
        (<int32_t *>out)[0] = <int32_t>v
    elif typenum == cnp.NPY_INT64:
        if is_float:
            if not (f == floorf(f) and -9223372036854775808.0 <= f < 9223372036854775808.0):
                return False
            v = <long long>f
        (<int64_t *>out)[0] = v
    elif typenum == cnp.NPY_BOOL:
        if is_float:
            if f != 0 and f != 1:
                return False
            v = f == 1
        elif v != 0 and v != 1:
            return False
        (<cnp.npy_bool *>out)[0] = <cnp.npy_bool>v
    else:
        return False
    return True


def python_scalar(x, dtype):
    """The fast path's conversion of a Python number to a 0-d array of rt dtype ``dtype`` (for tests), or None
    where the Python path decides."""
    out = np.empty((), dtype.np)
    if not _python_scalar(x, cnp.PyArray_TYPE(<cnp.ndarray>out), cnp.PyArray_DATA(<cnp.ndarray>out)):
        return None
    return out


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

_GEMM_BATCH = {     # numpy type number -> the kernel library's batched product
    cnp.NPY_INT8: <intptr_t><gemm_batch_fn>rt_gemm_batch_int8, cnp.NPY_INT16: <intptr_t><gemm_batch_fn>rt_gemm_batch_int16,
    cnp.NPY_INT32: <intptr_t><gemm_batch_fn>rt_gemm_batch_int32, cnp.NPY_INT64: <intptr_t><gemm_batch_fn>rt_gemm_batch_int64,
    cnp.NPY_UINT8: <intptr_t><gemm_batch_fn>rt_gemm_batch_uint8,
    cnp.NPY_FLOAT32: <intptr_t><gemm_batch_fn>rt_gemm_batch_float32,
    cnp.NPY_FLOAT64: <intptr_t><gemm_batch_fn>rt_gemm_batch_float64,
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
        cdef int64_t m, k, n, k2, work
        cdef cnp.npy_intp dims[12]
        cdef int64_t shape[8]
        cdef int64_t a_strides[8]
        cdef int64_t b_strides[8]
        cdef int ta = bool(attrs.get("transpose_a")), tb = bool(attrs.get("transpose_b"))
        cdef int d, nd, rc
        address = _GEMM_BATCH.get(cnp.PyArray_TYPE(a))
        if address is None or cnp.PyArray_TYPE(b) != cnp.PyArray_TYPE(a) or a.ndim < 2 or b.ndim < 2 \
                or max(a.ndim, b.ndim) > 10:
            return self.fallback(inputs, attrs)
        m, k = (a.shape[a.ndim - 1], a.shape[a.ndim - 2]) if ta else (a.shape[a.ndim - 2], a.shape[a.ndim - 1])
        k2, n = (b.shape[b.ndim - 1], b.shape[b.ndim - 2]) if tb else (b.shape[b.ndim - 2], b.shape[b.ndim - 1])
        if a.ndim == 2 and b.ndim == 2:
            batch = ()          # a plain product (np.broadcast_shapes costs a few microseconds)
        else:
            try:
                batch = np.broadcast_shapes((<object>a).shape[:a.ndim - 2], (<object>b).shape[:b.ndim - 2])
            except ValueError:
                return self.fallback(inputs, attrs)     # it raises the op's own error
        if k != k2:
            return self.fallback(inputs, attrs)
        if not cnp.PyArray_IS_C_CONTIGUOUS(a):
            a = np.ascontiguousarray(a)
        if not cnp.PyArray_IS_C_CONTIGUOUS(b):
            b = np.ascontiguousarray(b)
        nd = len(batch)
        work = m * k * n
        for d in range(nd):
            shape[d] = batch[d]
            dims[d] = shape[d]
            work *= shape[d]
            a_strides[d] = _batch_stride(a, d - nd + a.ndim - 2, batch[d])
            b_strides[d] = _batch_stride(b, d - nd + b.ndim - 2, batch[d])
        dims[nd] = m
        dims[nd + 1] = n
        c = cnp.PyArray_EMPTY(nd + 2, dims, cnp.PyArray_TYPE(a), 0)
        fn = <gemm_batch_fn><intptr_t>address
        ctx.msg[0] = 0
        # tiny products run on one thread whatever the setting (reading it costs about a microsecond)
        ctx.num_threads = config.intra_op_threads() if work > RT_GEMM_TINY else 1
        ctx.max_threads = ctx.num_threads
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
    cdef tuple step, ins, outs, kinds, results
    cdef list args
    cdef Py_ssize_t i, j
    caught = (errors.OpError,) + errors.KERNEL_ERRORS
    for step in steps:
        op, kernel, attrs, ins, outs, kinds = step
        args = [values[j] for j in ins]
        try:
            results = tuple(kernel(args, attrs))
        except caught as e:
            raise errors.located(e, op) from None
        for i in range(min(len(outs), len(results))):
            value = results[i]
            kind = kinds[i]
            # numpy's dtypes of builtin types are singletons: `is` decides the usual case
            if kind is not None and (type(value) is not np.ndarray or (<cnp.ndarray>value).descr is not kind
                                     and (<cnp.ndarray>value).dtype != kind):
                value = np.asarray(value).astype(kind, copy=False)
            values[outs[i]] = value
