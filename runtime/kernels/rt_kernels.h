/* The kernel library shared by generated native code and the generic executor.
 *
 * Tensors are dense, C-contiguous buffers described by rt_tensor. Every call
 * runs with an rt_ctx: an arena of allocations released at scope ends, an
 * error message buffer, and a callback into Python for ops that have no C
 * kernel (taken with the GIL, only when such an op runs).
 * Functions return 0 on success and -1 on error (message in ctx->msg, or a
 * Python exception already set when ctx->py_error is 1).
 */
#ifndef RT_KERNELS_H
#define RT_KERNELS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#include <stddef.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define RT_MAX_DIMS 8

/* glibc's libmvec has vector versions of these: declaring them `omp declare simd` lets
 * `#pragma omp simd` loops call them 4/8/16 lanes at a time without -ffast-math
 * (which would also change NaN semantics elsewhere). */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP) && !defined(RT_NO_LIBMVEC)
#pragma omp declare simd notinbranch
float tanhf(float);
#pragma omp declare simd notinbranch
double tanh(double);
#pragma omp declare simd notinbranch
float expf(float);
#pragma omp declare simd notinbranch
double exp(double);
#pragma omp declare simd notinbranch
float logf(float);
#pragma omp declare simd notinbranch
double log(double);
#pragma omp declare simd notinbranch
float sinf(float);
#pragma omp declare simd notinbranch
double sin(double);
#pragma omp declare simd notinbranch
float cosf(float);
#pragma omp declare simd notinbranch
double cos(double);
#pragma omp declare simd notinbranch
float powf(float, float);
#pragma omp declare simd notinbranch
double pow(double, double);
#if defined(__GLIBC_PREREQ) && __GLIBC_PREREQ(2, 35)
/* glibc 2.35 added these to libmvec: erf (float32's is double's erf rounded, as eager code computes it;
 * GELU's), log1p and expm1 (softplus, log-sigmoid, Keras' ELU). As scalar calls, GELU over 262K floats
 * took 25x jax.jit's time. */
#pragma omp declare simd notinbranch
double erf(double);
#pragma omp declare simd notinbranch
double erfc(double);
#pragma omp declare simd notinbranch
float log1pf(float);
#pragma omp declare simd notinbranch
double log1p(double);
#pragma omp declare simd notinbranch
float expm1f(float);
#pragma omp declare simd notinbranch
double expm1(double);
#endif
/* sin and cos again, under names GCC does not take for its builtins (the same symbols: the asm names): a loop
 * computing both of one value (`sin(x) * 1.25 + cos(x)`) had them merged into one scalar sincosf call, which
 * libmvec has no `omp simd` version of, and ran unvectorised: 7.7 ns an element at AVX-512, where each alone
 * takes 0.33. rt_sin_S and rt_cos_S call these. */
#pragma omp declare simd notinbranch
__attribute__((const, nothrow)) float rt_mvec_sinf(float) __asm__("sinf");
#pragma omp declare simd notinbranch
__attribute__((const, nothrow)) double rt_mvec_sin(double) __asm__("sin");
#pragma omp declare simd notinbranch
__attribute__((const, nothrow)) float rt_mvec_cosf(float) __asm__("cosf");
#pragma omp declare simd notinbranch
__attribute__((const, nothrow)) double rt_mvec_cos(double) __asm__("cos");
#define RT_SINf rt_mvec_sinf
#define RT_SIN rt_mvec_sin
#define RT_COSf rt_mvec_cosf
#define RT_COS rt_mvec_cos
#else
#define RT_SINf sinf
#define RT_SIN sin
#define RT_COSf cosf
#define RT_COS cos
#endif

typedef uint8_t rt_bool;

/* Generated code is compiled with -ffp-contract=off, so that x * y + z rounds twice, as numpy's separate
 * ops do. Matmul and convolution kernels want their fused multiply-adds: they are functions of their own
 * (never inlined into a function compiled without contraction, whose mode would win) that contract. */
#if defined(__GNUC__) && !defined(__clang__)
#define RT_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define RT_CONTRACT
#endif
#define RT_FMA_KERNEL __attribute__((noinline)) RT_CONTRACT

#include "rt_config.h"     /* enum rt_dtype, RT_PARALLEL_MIN: generated from the Python tables */

typedef struct {
    void *data;
    int64_t shape[RT_MAX_DIMS];
    int32_t ndim;
    int32_t dtype;
    void *owner;          /* Python object owning data (borrowed), or NULL when the arena owns it */
} rt_tensor;

struct rt_ctx;
typedef int (*rt_callback_fn)(struct rt_ctx *ctx, int op_index, rt_tensor *inputs, int n_in,
                              rt_tensor *outputs, int n_out);

#define RT_INLINE_ALLOCS 16

typedef struct rt_ctx {
    void **allocs;        /* NULL or inline_allocs until more than RT_INLINE_ALLOCS are live */
    int64_t n_allocs, cap_allocs;
    void *inline_allocs[RT_INLINE_ALLOCS];
    char msg[1024];
    int py_error;
    rt_callback_fn callback;
    void *user;           /* the Python-side function object, for callbacks */
    int num_threads;      /* intra-op: threads of one parallel loop */
    int inter_threads;    /* inter-op: independent parts of a graph run at once */
    int max_threads;      /* intra-op threads the settings ask for (num_threads: those the machine's load
                           * leaves, rt_available_threads); 0: num_threads */
} rt_ctx;

static inline int64_t rt_numel(const rt_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static inline size_t rt_itemsize(int dtype) {
    switch (dtype) {
    case RT_BOOL: case RT_INT8: case RT_UINT8: return 1;
    case RT_INT16: case RT_FLOAT16: return 2;
    case RT_INT32: case RT_FLOAT32: return 4;
    case RT_COMPLEX128: return 16;       /* complex values only travel between Python callbacks */
    default: return 8;
    }
}

/* ---- Ctrl-C ------------------------------------------------------------------------------------ */

/* Ctrl-C reaches native loops through one process-wide flag: runtime._native's SIGINT handler sets it (and
 * then runs Python's handler as before), every iteration of a generated loop reads it (no GIL needed), and a
 * call that sees it stops and raises KeyboardInterrupt. runtime._native hands the address of its flag to
 * each built module at import (rt_set_runtime); until then a module reads a flag nobody sets. */
static volatile int rt_interrupt_flag = 0;
static volatile int *rt_interrupt = &rt_interrupt_flag;
#define RT_INTERRUPTED (*rt_interrupt)

/* ---- threads on a busy machine -------------------------------------------------------------- */

/* How many of `wanted` threads parallel loops should use now. A parallel loop ends when its slowest thread
 * does: while another process keeps a core busy, one of two threads on two cores is descheduled for whole
 * time slices, and a loop of 100 us took 1-10 ms (an MLP step 2.1 ms on two threads, 0.9 ms on one). So at
 * most every RT_LOAD_PERIOD_NS this reads how busy the machine's CPUs were since the last reading
 * (/proc/stat, busy = everything but idle and iowait; stolen time counts, the hypervisor gave it to
 * others) and how much of it was this process (its CPU clock): the cores the others used are free for
 * nobody else. It uses as many threads as cores are left (rounded), at least one. Without /proc/stat it
 * returns `wanted`. Callers hold the GIL (the readings are plain statics). */
#define RT_LOAD_PERIOD_NS 50000000LL
#if defined(__linux__)
#include <time.h>
#include <unistd.h>
static int rt_available_threads(int wanted) {
    static int64_t last_wall = 0, last_self = 0, last_busy = 0, last_total = 0;
    static int threads = 0, cores = 0;
    struct timespec now, self;
    if (wanted <= 1) return wanted;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t wall = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
    if (threads > 0 && wall - last_wall < RT_LOAD_PERIOD_NS) return threads < wanted ? threads : wanted;
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int got = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                         &v[5], &v[6], &v[7]) : 0;
    if (f) fclose(f);
    if (got < 4) return wanted;
    if (cores == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cores = n > 0 ? (int)n : 1;
    }
    int64_t total = 0;
    for (int i = 0; i < 8; i++) total += (int64_t)v[i];
    int64_t busy = total - (int64_t)v[3] - (int64_t)v[4];
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &self);
    int64_t self_ns = (int64_t)self.tv_sec * 1000000000LL + self.tv_nsec;
    if (threads > 0 && total > last_total) {
        double ticks = (double)(total - last_total);            /* all CPUs' time, in clock ticks */
        double others = (double)(busy - last_busy) / ticks * cores   /* cores busy, ours included */
                        - (double)(self_ns - last_self) / (double)(wall - last_wall);
        int free_cores = (int)(cores - (others > 0 ? others : 0) + 0.5);
        threads = free_cores < 1 ? 1 : free_cores;
    } else {
        threads = cores;
    }
    last_wall = wall;
    last_self = self_ns;
    last_busy = busy;
    last_total = total;
    return threads < wanted ? threads : wanted;
}
#else
static int rt_available_threads(int wanted) { return wanted; }
#endif

/* Threads for one long parallel region of `work` multiply-adds (at least RT_LONG_REGION: tens of milliseconds on
 * a core): all the settings ask for, whatever the load. Under another busy process a short region waits for its
 * descheduled thread (hence rt_available_threads), but a long one's threads share the cores fairly with the
 * other process: a convolution of 360M multiply-adds took 97 ms on the one thread the load left, 74 ms on two
 * (two thirds of a 2-core machine instead of half; Zen 3, AVX2). */
#ifndef RT_LONG_REGION
#define RT_LONG_REGION ((int64_t)1 << 27)
#endif
static inline int rt_region_threads(const rt_ctx *ctx, int64_t work) {
    return work >= RT_LONG_REGION && ctx->max_threads > ctx->num_threads ? ctx->max_threads : ctx->num_threads;
}

/* ---- arena ------------------------------------------------------------------------------- */

/* Big buffers (>= RT_BIG_BYTES) come from a process-wide caching allocator in runtime._native
 * (huge pages from 2 MiB, blocks reused across calls: no fresh zeroed pages for every result). Arena
 * entries of big blocks carry a tag in the low bit. The hooks are NULL until the runtime sets them.
 * From 256 KiB: glibc serves such blocks from the top of its heap and gives the top back when a call
 * frees them, so every call of a CNN training step page-faulted its 1.4 MB activations in again. */
#define RT_BIG_BYTES ((size_t)256 << 10)
typedef void *(*rt_big_alloc_fn)(size_t nbytes);
typedef void (*rt_big_free_fn)(void *data);
static rt_big_alloc_fn rt_big_alloc = NULL;
static rt_big_free_fn rt_big_free = NULL;

static inline void *rt_untag(void *entry) { return (void *)((uintptr_t)entry & ~(uintptr_t)1); }

static inline void rt_free_entry(void *entry) {
    if ((uintptr_t)entry & 1) rt_big_free(rt_untag(entry)); else free(entry);
}

static inline void *rt_alloc(rt_ctx *ctx, size_t nbytes) {
    if (ctx->allocs == NULL) {
        ctx->allocs = ctx->inline_allocs;
        ctx->cap_allocs = RT_INLINE_ALLOCS;
    }
    if (ctx->n_allocs == ctx->cap_allocs) {
        int64_t cap = ctx->cap_allocs * 4;
        void **grown;
        if (ctx->allocs == ctx->inline_allocs) {
            grown = (void **)malloc((size_t)cap * sizeof(void *));
            if (grown) memcpy(grown, ctx->inline_allocs, sizeof(ctx->inline_allocs));
        } else {
            grown = (void **)realloc(ctx->allocs, (size_t)cap * sizeof(void *));
        }
        if (!grown) return NULL;
        ctx->allocs = grown;
        ctx->cap_allocs = cap;
    }
    if (nbytes >= RT_BIG_BYTES && rt_big_alloc != NULL) {
        void *p = rt_big_alloc(nbytes);
        if (p) ctx->allocs[ctx->n_allocs++] = (void *)((uintptr_t)p | 1);
        return p;
    }
    void *p = malloc(nbytes ? nbytes : 1);
    if (p) ctx->allocs[ctx->n_allocs++] = p;
    return p;
}

/* Stop tracking p (its ownership moves to the caller, e.g. a numpy array).
 * 0: the arena did not own it; 1: free it with free(); 2: free it with rt_big_free(). */
static inline int rt_detach(rt_ctx *ctx, void *p) {
    for (int64_t i = ctx->n_allocs - 1; i >= 0; i--)
        if (rt_untag(ctx->allocs[i]) == p) {
            int kind = ((uintptr_t)ctx->allocs[i] & 1) ? 2 : 1;
            ctx->allocs[i] = ctx->allocs[--ctx->n_allocs];
            return kind;
        }
    return 0;
}

/* Free an arena buffer before the call ends (a buffer outgrown, a Python callback's result). */
static inline void rt_drop(rt_ctx *ctx, void *p) {
    int kind = rt_detach(ctx, p);
    if (kind == 1) free(p); else if (kind == 2) rt_big_free(p);
}

static inline void rt_ctx_free(rt_ctx *ctx) {
    for (int64_t i = 0; i < ctx->n_allocs; i++) rt_free_entry(ctx->allocs[i]);
    ctx->n_allocs = 0;
    if (ctx->allocs != ctx->inline_allocs) free(ctx->allocs);
    ctx->allocs = NULL;
    ctx->cap_allocs = 0;
}

/* A context for one part of a graph run on another thread (its own arena). */
static inline void rt_ctx_part(rt_ctx *part, const rt_ctx *parent) {
    part->allocs = NULL;
    part->n_allocs = 0;
    part->cap_allocs = 0;
    part->msg[0] = 0;
    part->py_error = 0;
    part->callback = parent->callback;
    part->user = parent->user;
    part->num_threads = 1;
    part->inter_threads = 1;
    part->max_threads = 1;
}

/* Take over a part's allocations (they live until the whole call ends) and its error. */
static inline int rt_ctx_join(rt_ctx *ctx, rt_ctx *part, int rc) {
    int ok = 1;
    for (int64_t i = 0; i < part->n_allocs; i++) {
        void *p = part->allocs[i];
        if (ok && ctx->n_allocs == ctx->cap_allocs) {
            void *probe = rt_alloc(ctx, 0);      /* grows the table; then drop the probe */
            if (probe) { ctx->n_allocs--; free(probe); } else ok = 0;
        }
        if (ok && ctx->n_allocs < ctx->cap_allocs) ctx->allocs[ctx->n_allocs++] = p; else rt_free_entry(p);
    }
    if (part->allocs != part->inline_allocs) free(part->allocs);
    part->allocs = NULL;
    part->n_allocs = 0;
    if (rc != 0) {
        if (!ctx->msg[0]) memcpy(ctx->msg, part->msg, sizeof(ctx->msg));
        ctx->py_error |= part->py_error;
        return -1;
    }
    return ok ? 0 : -1;
}

static inline int rt_fail(rt_ctx *ctx, const char *msg) {
    if (!ctx->msg[0]) snprintf(ctx->msg, sizeof(ctx->msg), "%s", msg);
    return -1;
}

/* Element counts of run-time shapes: 1 when the product of dims[0..n) overflows, or is too many bytes
 * of `itemsize` to allocate, or a dim is negative (what numpy rejects as "array is too big"). */
static inline int rt_count_overflows(int n, const int64_t *dims, int64_t itemsize) {
    int64_t count = itemsize;
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0) return 1;
        if (dims[i] == 0) return 0;
    }
    for (int i = 0; i < n; i++)
        if (__builtin_mul_overflow(count, dims[i], &count)) return 1;
    return count > (int64_t)(PTRDIFF_MAX / 2);
}

/* An arena buffer of `count` elements of `itemsize` bytes (NULL, with a message, when it cannot be). Declared malloc-like, and not inlined so that the
 * declaration is what callers see: generated loops then know their result buffer aliases nothing they read
 * (through the caching allocator's function pointer GCC could not tell, reloaded a TensorArray's data pointer
 * after every store of a copy loop and left the loop scalar: an RNN ran 20% slower). */
static __attribute__((malloc, noinline)) void *rt_alloc_array(rt_ctx *ctx, int64_t count, int64_t itemsize) {
    int64_t nbytes;
    if (count < 0 || __builtin_mul_overflow(count, itemsize, &nbytes)) {
        rt_fail(ctx, "the result is too big to allocate");
        return NULL;
    }
    void *p = rt_alloc(ctx, (size_t)nbytes);
    if (!p) rt_fail(ctx, "out of memory");
    return p;
}

/* A buffer kept across loop iterations: grown (never shrunk, contents not kept) when `count` elements
 * of `itemsize` bytes do not fit in *capacity (bytes). Returns -1 with a message when it cannot be. */
static inline int rt_reserve(rt_ctx *ctx, void **p, int64_t *capacity, int64_t count, int64_t itemsize) {
    int64_t nbytes;
    if (count < 0 || __builtin_mul_overflow(count, itemsize, &nbytes)) return rt_fail(ctx, "the result is too big to allocate");
    if (nbytes <= *capacity && *p != NULL) return 0;
    if (*p != NULL) rt_drop(ctx, *p);
    *p = rt_alloc(ctx, (size_t)(nbytes > 0 ? nbytes : 1));
    *capacity = *p ? nbytes : 0;
    return *p ? 0 : rt_fail(ctx, "out of memory");
}

/* rt_reserve's value form, which generated code uses: the buffer itself (grown when too small), NULL with a
 * message when it cannot be. The pointer goes in by value: a buffer pointer whose address the code takes is
 * shared with OpenMP regions by reference, and GCC then reloads it after every store of a loop and leaves the loop
 * scalar (every loop of a kernel with run-time sizes, which gets a parallel copy, ran 5-10x slower). */
static inline void *rt_reserved(rt_ctx *ctx, void *p, int64_t *capacity, int64_t count, int64_t itemsize) {
    return rt_reserve(ctx, &p, capacity, count, itemsize) ? NULL : p;
}

/* Paddings: the position of an input of n elements that position j of the padded axis copies, j counted
 * from the first input element (negative in the padding before). mode 0 (constant): j itself inside, 0
 * outside (the caller selects the constant there); 1 (REFLECT): mirrored without the edge; 2 (SYMMETRIC):
 * with it. The paddings were checked: one reflection reaches inside. */
static inline int64_t rt_pad_source(int64_t j, int64_t n, int mode) {
    if (mode == 0) return (uint64_t)j < (uint64_t)n ? j : 0;
    const int64_t edge = mode == 2;
    if (j < 0) j = -j - edge;
    if (j >= n) j = 2 * n - 2 + edge - j;
    return j;
}

/* Python's slice(lo, hi, step).indices(n) after negative lo/hi had n added: the element count, and the
 * first index in *begin. */
static inline int64_t rt_slice_count(int64_t lo, int64_t hi, int64_t step, int64_t n, int64_t *begin) {
    int64_t count;
    if (step > 0) {
        lo = lo < 0 ? 0 : (lo > n ? n : lo);
        hi = hi < 0 ? 0 : (hi > n ? n : hi);
        count = hi > lo ? (hi - lo + step - 1) / step : 0;
    } else {
        lo = lo < -1 ? -1 : (lo > n - 1 ? n - 1 : lo);
        hi = hi < -1 ? -1 : (hi > n - 1 ? n - 1 : hi);
        count = lo > hi ? (lo - hi - step - 1) / -step : 0;
    }
    *begin = count ? lo : 0;
    return count;
}

/* ---- TensorArray lists ---------------------------------------------------------------------- */

/* The native value of a TensorArray whose every version is used once (generated code checks that
 * at build time): writes update it in place. Items are dense, `item_bytes` each; `written` marks the
 * items set. The element shape is known once an item is written (or from the attrs, `attr_ndim`). */
typedef struct {
    char *data;
    uint8_t *written;
    int64_t length, capacity, item_bytes, itemsize;
    int32_t ndim, dynamic, dtype;     /* dtype: the elements' rt_dtype code */
    int64_t shape[RT_MAX_DIMS];
} rt_list;

static inline int rt_list_error(rt_ctx *ctx, const char *op, const char *where, const char *what, int64_t a, int64_t b) {
    char text[256];
    snprintf(text, sizeof(text), what, (long long)a, (long long)b);
    snprintf(ctx->msg, sizeof(ctx->msg), "%s: %s\n  [[%s]]", op, text, where);
    return -1;
}

/* A list of n unwritten items of elements of rt_dtype `dtype` (NULL with a message on error). */
static inline rt_list *rt_list_new(rt_ctx *ctx, int64_t n, int dynamic, int dtype, const char *op,
                                   const char *where) {
    if (n < 0) { rt_list_error(ctx, op, where, "size must be non-negative, got %lld", n, 0); return NULL; }
    rt_list *l = (rt_list *)rt_alloc(ctx, sizeof(rt_list));
    if (!l) { rt_fail(ctx, "out of memory"); return NULL; }
    memset(l, 0, sizeof(rt_list));
    l->length = n;
    l->dynamic = dynamic;
    l->dtype = dtype;
    l->itemsize = (int64_t)rt_itemsize(dtype);
    l->ndim = -1;
    return l;
}

/* Room for `n` items of the known item size (contents kept). */
static inline int rt_list_grow(rt_ctx *ctx, rt_list *l, int64_t n) {
    if (n <= l->capacity && l->data) return 0;
    int64_t cap = l->capacity * 2 > n ? l->capacity * 2 : n, nbytes;
    if (cap < 1) cap = 1;
    if (__builtin_mul_overflow(cap, l->item_bytes > 0 ? l->item_bytes : 1, &nbytes)) return rt_fail(ctx, "the TensorArray is too big");
    char *data = (char *)rt_alloc(ctx, (size_t)nbytes);
    uint8_t *written = (uint8_t *)rt_alloc(ctx, (size_t)cap);
    if (!data || !written) return rt_fail(ctx, "out of memory");
    memset(written, 0, (size_t)cap);
    if (l->data) {
        memcpy(data, l->data, (size_t)(l->capacity * l->item_bytes));
        memcpy(written, l->written, (size_t)l->capacity);
        rt_drop(ctx, l->data);
        rt_drop(ctx, l->written);
    }
    l->data = data;
    l->written = written;
    l->capacity = cap;
    return 0;
}

/* Fix the element shape (the first written item's, or the attrs' when nothing was written). */
static inline int rt_list_shape(rt_ctx *ctx, rt_list *l, int ndim, const int64_t *shape, const char *op,
                                const char *where) {
    if (l->ndim >= 0) {
        int same = l->ndim == ndim;
        for (int d = 0; same && d < ndim; d++) same = l->shape[d] == shape[d];
        if (!same) return rt_list_error(ctx, op, where, "element of rank %lld does not match the earlier elements "
                                        "(rank %lld) in shape", ndim, l->ndim);
        return 0;
    }
    int64_t count = 1;
    for (int d = 0; d < ndim; d++) { l->shape[d] = shape[d]; count *= shape[d]; }
    l->ndim = ndim;
    l->item_bytes = count * l->itemsize;
    return 0;
}

/* Item `index` of a write: bounds (growing a dynamic list), shape; returns where to copy the item. */
static inline void *rt_list_set(rt_ctx *ctx, rt_list *l, int64_t index, int ndim, const int64_t *shape,
                                const char *op, const char *where) {
    if (index < 0) { rt_list_error(ctx, op, where, "index %lld is negative", index, 0); return NULL; }
    if (index >= l->length) {
        if (!l->dynamic) {
            rt_list_error(ctx, op, where, "index %lld is out of range for a TensorArray of size %lld (use "
                          "dynamic_size=True to grow it)", index, l->length);
            return NULL;
        }
        l->length = index + 1;
    }
    if (rt_list_shape(ctx, l, ndim, shape, op, where)) return NULL;
    if (rt_list_grow(ctx, l, l->length > index + 1 ? l->length : index + 1)) return NULL;
    l->written[index] = 1;
    return l->data + index * l->item_bytes;
}

/* Item `index` of a read in *item (NULL: never written, the caller reads zeros); -1 on a bad index. */
static inline int rt_list_get(rt_ctx *ctx, rt_list *l, int64_t index, const void **item, const char *op,
                              const char *where) {
    *item = NULL;
    if (index < 0 || index >= l->length)
        return rt_list_error(ctx, op, where, "index %lld is out of range for a TensorArray of size %lld",
                             index, l->length);
    if (index < l->capacity && l->written[index]) *item = l->data + index * l->item_bytes;
    return 0;
}

/* All items, dense (unwritten ones zero): the element shape must be known by now. */
static inline int rt_list_fill(rt_ctx *ctx, rt_list *l, const char *op, const char *where) {
    if (l->ndim < 0) return rt_list_error(ctx, op, where, "no element was written, the element shape is unknown",
                                          0, 0);
    if (rt_list_grow(ctx, l, l->length)) return -1;
    for (int64_t i = 0; i < l->length; i++)
        if (!l->written[i]) { memset(l->data + i * l->item_bytes, 0, (size_t)l->item_bytes); l->written[i] = 1; }
    return 0;
}

/* A list as long as `l` with no item written (the zero gradient of a TensorArray), its element shape kept. */
static inline rt_list *rt_list_zeros_like(rt_ctx *ctx, const rt_list *l, const char *op, const char *where) {
    rt_list *z = rt_list_new(ctx, l->length, l->dynamic, l->dtype, op, where);
    if (z && l->ndim >= 0 && rt_list_shape(ctx, z, l->ndim, l->shape, op, where)) return NULL;
    return z;
}

/* A copy of `l` (a list passed to several loop variables: each is written on its own). */
static inline rt_list *rt_list_copy(rt_ctx *ctx, const rt_list *l, const char *op, const char *where) {
    rt_list *c = rt_list_zeros_like(ctx, l, op, where);
    if (!c || !l->data) return c;
    if (rt_list_grow(ctx, c, l->capacity)) return NULL;
    memcpy(c->data, l->data, (size_t)(l->capacity * l->item_bytes));
    memcpy(c->written, l->written, (size_t)l->capacity);
    return c;
}

/* a += b item-wise (gradients of one TensorArray adding up): an item written in only one of them is taken as
 * it is; a grows to b's length. Floating elements only (gradients). */
static inline int rt_list_add(rt_ctx *ctx, rt_list *a, const rt_list *b, const char *op, const char *where) {
    if (b->ndim >= 0 && rt_list_shape(ctx, a, b->ndim, b->shape, op, where)) return -1;
    if (b->length > a->length) a->length = b->length;
    if (a->ndim < 0) return 0;                     /* nothing written in either */
    if (rt_list_grow(ctx, a, a->length)) return -1;
    const int64_t count = a->itemsize ? a->item_bytes / a->itemsize : 0;
    for (int64_t i = 0; i < b->length && i < b->capacity; i++) {
        if (!b->written[i]) continue;
        char *to = a->data + i * a->item_bytes;
        const char *from = b->data + i * b->item_bytes;
        if (!a->written[i]) { memcpy(to, from, (size_t)a->item_bytes); a->written[i] = 1; continue; }
        if (a->dtype == RT_FLOAT32) {
            float *restrict x = (float *)to; const float *restrict y = (const float *)from;
            _Pragma("omp simd")
            for (int64_t k = 0; k < count; k++) x[k] += y[k];
        } else if (a->dtype == RT_FLOAT64) {
            double *restrict x = (double *)to; const double *restrict y = (const double *)from;
            _Pragma("omp simd")
            for (int64_t k = 0; k < count; k++) x[k] += y[k];
        } else {
            return rt_list_error(ctx, op, where, "cannot add TensorArray items of dtype code %lld", a->dtype, 0);
        }
    }
    return 0;
}

/* ---- datasets ------------------------------------------------------------------------------- */

/* shuffle(window) over a pass of n indices, as a permutation (runtime/ops/dataset_ops.py's shuffle_positions
 * is the same algorithm): step t draws from the MINSTD state and swaps position t with t + draw mod
 * min(window, n - t). `out` may be `in`. Returns the state after the n draws (the next pass starts there). */
static inline int64_t rt_shuffle_indices(const int64_t *in, int64_t *out, int64_t n, int64_t window, int64_t rng) {
    if (out != in && n > 0) memcpy(out, in, (size_t)n * sizeof(int64_t));
    if (window < 1) window = 1;
    for (int64_t t = 0; t < n; t++) {
        rng = rng * 48271 % 2147483647;
        if (rng < 0) rng += 2147483647;            /* the floor modulo numpy takes */
        const int64_t left = n - t;
        const int64_t j = t + rng % (left < window ? left : window);
        const int64_t x = out[t];
        out[t] = out[j];
        out[j] = x;
    }
    return rng;
}

/* ---- scalar helpers used by elementwise expressions (one definition per C type) ---------- */

#define RT_DEFINE_INT_HELPERS(T, S) \
    static inline T rt_floordiv_##S(T a, T b) { if (b == 0) return 0; if ((T)-1 < 0 && b == (T)-1) return (T)(0 - (uint64_t)a); \
        T q = (T)(a / b); return (T)(q - (((a % b) != 0) && ((a < 0) != (b < 0)))); } \
    static inline T rt_floormod_##S(T a, T b) { if (b == 0 || ((T)-1 < 0 && b == (T)-1)) return 0; \
        T r = (T)(a % b); return (T)((r != 0 && ((r < 0) != (b < 0))) ? r + b : r); } \
    static inline T rt_pow_##S(T a, T b) { T r = 1; while (b > 0) { if (b & 1) r = (T)(r * a); a = (T)(a * a); b >>= 1; } return r; } \
    static inline T rt_max_##S(T a, T b) { return a > b ? a : b; } \
    static inline T rt_min_##S(T a, T b) { return a < b ? a : b; } \
    static inline T rt_abs_##S(T a) { return (T)(a < 0 ? -a : a); } \
    static inline T rt_sign_##S(T a) { return (T)((a > 0) - (a < 0)); } \
    static inline T rt_relu_##S(T a) { return a > 0 ? a : 0; } \
    static inline T rt_square_##S(T a) { return (T)(a * a); }

/* Floats follow numpy exactly, NaN and inf included (the eager kernels are numpy's): floor division
   and remainder are numpy's npy_divmod (so (-inf) // 1 is nan and -5 // inf is -1, as in Python),
   and sign, relu, max and min propagate NaN. */
#define RT_DEFINE_FLOAT_HELPERS(T, S, F) \
    static inline T rt_divmod_##S(T a, T b, T *modulus) { \
        T mod = fmod##F(a, b), div, floordiv; \
        if (!b) { *modulus = mod; return a / b; } \
        div = (a - mod) / b; \
        if (mod) { if (isless(b, 0) != isless(mod, 0)) { mod += b; div -= 1; } } \
        else mod = copysign##F(0, b); \
        if (div) { floordiv = floor##F(div); if (isgreater(div - floordiv, (T)0.5)) floordiv += 1; } \
        else floordiv = copysign##F(0, a / b); \
        *modulus = mod; \
        return floordiv; } \
    static inline T rt_floordiv_##S(T a, T b) { T mod; return b ? rt_divmod_##S(a, b, &mod) : a / b; } \
    static inline T rt_floormod_##S(T a, T b) { T mod; if (!b) return fmod##F(a, b); rt_divmod_##S(a, b, &mod); \
        return mod; } \
    static inline T rt_pow_##S(T a, T b) { return b == (T)2 ? a * a : pow##F(a, b); } /* x**2 is x*x (numpy) */ \
    static inline T rt_max_##S(T a, T b) { return (a > b || a != a) ? a : b; } \
    static inline T rt_min_##S(T a, T b) { return (a < b || a != a) ? a : b; } \
    static inline T rt_abs_##S(T a) { return fabs##F(a); } \
    static inline T rt_sign_##S(T a) { return a != a ? a : (T)((a > 0) - (a < 0)); } \
    static inline T rt_relu_##S(T a) { return (a > 0 || a != a) ? a : 0; } \
    static inline T rt_square_##S(T a) { return a * a; } \
    static inline T rt_sqrt_##S(T a) { return sqrt##F(a); } \
    static inline T rt_rsqrt_##S(T a) { return (T)1 / sqrt##F(a); } \
    static inline T rt_floor_##S(T a) { return floor##F(a); } \
    static inline T rt_ceil_##S(T a) { return ceil##F(a); } \
    static inline T rt_round_##S(T a) { return rint##F(a); } /* halves to even in the default rounding mode */ \
    static inline T rt_log_##S(T a) { return log##F(a); } \
    static inline T rt_sin_##S(T a) { return RT_SIN##F(a); } \
    static inline T rt_cos_##S(T a) { return RT_COS##F(a); } \
    static inline T rt_log1p_##S(T a) { return log1p##F(a); } \
    static inline T rt_expm1_##S(T a) { return expm1##F(a); } \
    static inline T rt_erf_##S(T a) { return (T)erf((double)a); } /* double's erf rounded, as eager code */ \
    static inline rt_bool rt_isnan_##S(T a) { return a != a; } \
    static inline rt_bool rt_isinf_##S(T a) { return isinf(a) != 0; } \
    static inline rt_bool rt_isfinite_##S(T a) { return isfinite(a) != 0; }

/* Row groups over big arrays (transpiler/lowering/rows.py). A row's first pass reads its inputs from memory and
 * its later passes (exp, the sums, the stores) compute from L1: while they do, rt_prefetch_bytes asks for the next
 * row of each input (into L2), so that the next first pass does not wait for memory. The result rows of an
 * output too big to stay in cache are written through rt_stream_copy, streaming (non-temporal) stores that skip
 * reading each line of the destination before writing it. Softmax over [4096, 1024] at AVX2 (Zen 3, 2 threads,
 * interleaved): generated code 2.53 ms before, 2.33 ms after (2.20 ms with None dims, from 2.55). A hand-written
 * variant storing the values straight with streaming stores (no row buffer) ran 3.7 -> 2.75 ms in another phase of
 * the VM: 3.35 with the prefetch alone, 3.65 with the streaming stores alone. */
static inline void rt_prefetch_bytes(const void *p, int64_t bytes) {
    const uintptr_t a = (uintptr_t)p;           /* addresses past the array's end (after its last row) are fine */
    if (bytes > 65536) bytes = 65536;           /* a row's start: the hardware prefetcher follows the rest */
    for (int64_t i = 0; i < bytes; i += 64) __builtin_prefetch((const void *)(a + (uintptr_t)i), 0, 2);
}

/* Outputs of at least this many bytes are written by streaming stores: half the last-level cache (written
 * through it, such an output and the input it is made from would not fit it together anyway); 16 MiB when the
 * system does not say; RT_STREAM_MIN_BYTES when set (tests stream every row with 0). */
static inline int64_t rt_stream_min_bytes(void) {
    static int64_t bytes = -1;
    int64_t b = __atomic_load_n(&bytes, __ATOMIC_RELAXED);
    if (b < 0) {
        const char *env = getenv("RT_STREAM_MIN_BYTES");
        long llc = -1;
#if defined(_SC_LEVEL3_CACHE_SIZE)
        llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
        b = env && *env ? (int64_t)strtoll(env, NULL, 10) : llc > 0 ? (int64_t)llc / 2 : (int64_t)16 << 20;
        if (b < 0) b = 0;
        __atomic_store_n(&bytes, b, __ATOMIC_RELAXED);
    }
    return b;
}

static inline int rt_streams(int64_t bytes) { return bytes >= rt_stream_min_bytes(); }

/* dst[0:bytes) = src[0:bytes): plain stores up to dst's first vector boundary and after its last, streaming
 * stores between. No fence per row (an sfence a row cost most of the gain: it waits for the write-combining
 * buffers): the thread reads its own stores in order, and other threads read the rows after the parallel loop's
 * barrier, whose locked instructions drain those buffers (Intel SDM 3A 11.3.1; AMD APM 2, 7.4.2). */
static inline void rt_stream_copy(void *dst, const void *src, int64_t bytes) {
    char *d = (char *)dst;
    const char *s = (const char *)src;
#if defined(__AVX__) || defined(__SSE2__)
#if defined(__AVX__)
    enum { width = 32 };
    typedef float rt_stream_vec __attribute__((vector_size(32), aligned(4), may_alias));
#define RT_STREAM_STORE(p, v) __builtin_ia32_movntps256((float *)(p), (v))
#else
    enum { width = 16 };
    typedef float rt_stream_vec __attribute__((vector_size(16), aligned(4), may_alias));
#define RT_STREAM_STORE(p, v) __builtin_ia32_movntps((float *)(p), (v))
#endif
    int64_t head = (int64_t)(-(uintptr_t)d & (width - 1));
    if (head > bytes) head = bytes;
    if (head) {                                 /* (rows on vector boundaries: no call to memcpy) */
        memcpy(d, s, (size_t)head);
        d += head;
        s += head;
        bytes -= head;
    }
    for (; bytes >= width; bytes -= width, d += width, s += width) RT_STREAM_STORE(d, *(const rt_stream_vec *)s);
#undef RT_STREAM_STORE
#endif
    if (bytes) memcpy(d, s, (size_t)bytes);
}

/* x, which the compiler cannot see through. The bound of a padded row loop (transpiler.lowering.kernels.pad_inner)
 * goes through it: with a literal bound GCC folded the masked load of a row's last, partly live vector into a
 * whole-vector load and a blend, reading up to a vector past the input. */
static inline int64_t rt_opaque_i64(int64_t x) {
    __asm__("" : "+r"(x));
    return x;
}

/* SelectV2: the chosen and the other value are both computed before choosing (arguments of a call;
 * every helper is total and every load reads an element that exists), so the compiler loads both
 * plainly and blends. From `c ? p[i] : 0`, a load only some lanes do, GCC made masked loads merging
 * into a vector it kept on the stack: a store-to-load chain through the iterations, 6x slower on a
 * ReLU gradient over 32K floats. */
#define RT_DEFINE_SELECT(T, S) \
    static inline T rt_select_##S(rt_bool c, T a, T b) { return c ? a : b; }
RT_DEFINE_SELECT(rt_bool, bool)
RT_DEFINE_SELECT(int8_t, int8)
RT_DEFINE_SELECT(int16_t, int16)
RT_DEFINE_SELECT(int32_t, int32)
RT_DEFINE_SELECT(int64_t, int64)
RT_DEFINE_SELECT(uint8_t, uint8)
RT_DEFINE_SELECT(float, float32)
RT_DEFINE_SELECT(double, float64)

/* The 16 lanes of a sum (transpiler/lowering/lanes.py) added pairwise, lane i and lane i + 8, then + 4, + 2,
 * + 1, as vector adds. Written as loops over the lanes, GCC made the array 16 scalars and added them one
 * shuffle at a time: softmax over rows of 16 columns lost most of what the tree gained. */
#define RT_DEFINE_TREE_SUM(T, S) \
    static inline T rt_tree_sum16_##S(const T *a) { \
        typedef T rt_half_##S __attribute__((vector_size(8 * sizeof(T)), aligned(sizeof(T)), may_alias)); \
        typedef T rt_quarter_##S __attribute__((vector_size(4 * sizeof(T)))); \
        rt_half_##S h = *(const rt_half_##S *)a + *(const rt_half_##S *)(a + 8); \
        rt_quarter_##S q = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7); \
        return (q[0] + q[2]) + (q[1] + q[3]); \
    }
RT_DEFINE_TREE_SUM(float, float)
RT_DEFINE_TREE_SUM(double, double)

/* The 16 lanes of a sum as vector registers (lanes.py, a row of run-time length): a block of 16 terms, stored
 * by the loop that computes them, is added as whole vectors; the sum is rt_tree_sum16's (the same additions
 * in the same order as a lane array's). Lane arrays that the blocks under the row's `if (16 * k < whole)`
 * update stayed on the stack, each block storing its vectors for the next one's merge: layer norm over rows
 * of 100 of unknown length took 1.24x (x86-64-v4) and 1.28x (x86-64-v3) the time of the static rows. */
#define RT_DEFINE_LANES16(T, S) \
    typedef T rt_lanevec_##S __attribute__((vector_size(RT_VEC_BYTES))); \
    typedef T rt_lanevec_u_##S __attribute__((vector_size(RT_VEC_BYTES), aligned(sizeof(T)), may_alias)); \
    typedef struct { rt_lanevec_##S v[16 * sizeof(T) / RT_VEC_BYTES]; } rt_lanes16_##S; \
    static inline rt_lanes16_##S rt_lanes16_zero_##S(void) { \
        rt_lanes16_##S a; \
        for (int i = 0; i < (int)(16 * sizeof(T) / RT_VEC_BYTES); i++) a.v[i] = (rt_lanevec_##S){0}; \
        return a; \
    } \
    static inline rt_lanes16_##S rt_lanes16_add_##S(rt_lanes16_##S a, const T *terms) { \
        for (int i = 0; i < (int)(16 * sizeof(T) / RT_VEC_BYTES); i++) a.v[i] += ((const rt_lanevec_u_##S *)terms)[i]; \
        return a; \
    } \
    static inline T rt_lanes16_sum_##S(rt_lanes16_##S a) { return rt_tree_sum16_##S((const T *)a.v); }

RT_DEFINE_INT_HELPERS(int8_t, int8)
RT_DEFINE_INT_HELPERS(int16_t, int16)
RT_DEFINE_INT_HELPERS(int32_t, int32)
RT_DEFINE_INT_HELPERS(int64_t, int64)
RT_DEFINE_INT_HELPERS(uint8_t, uint8)
RT_DEFINE_FLOAT_HELPERS(float, float32, f)
RT_DEFINE_FLOAT_HELPERS(double, float64, )

/* float32's exp, inline: in a `#pragma omp simd` loop it vectorises into the loop (no call per vector, no
 * special-case branch), where libmvec's expf is a call whose lanes out of its fast range go through a scalar
 * path. 2^n is applied as two halves s1 * s2 (each a normal float for every x in [-104, 89]), so overflow to inf,
 * denormal results and underflow to 0 come out of the same arithmetic as the rest. x is not clamped (GCC turns a
 * float clamp into nine compares, masks and blends per vector, not a max and a min): outside [-104, 89] the
 * arithmetic gives garbage, in unsigned integers where it could overflow, and two selects one after the other put
 * 0 (exp(-104) rounds to 0) and inf in its place (written as one nested ?:, GCC made them five compares, two
 * masks and three blends); NaN goes through the arithmetic as NaN. Cody-Waite reduction r = x - n ln2 (ln2's
 * high part has 16 bits: n * ln2_hi is exact), then exp(r) - 1 = r + r^2 q(r), q of degree 4 fitted to minimise
 * the relative error on [-ln2/2, ln2/2], evaluated in 3 dependent steps (Estrin), not 4 (Horner). Checked over
 * every float32 against exp in double: at most 1.01 ulp with FMA, 0.98 without (libmvec's expf: 1 ulp; numpy's
 * SIMD expf: 2.5). In L1 on one core of a Zen 5: 0.229 ns an element at x86-64-v3, 0.108 at x86-64-v4 (with the
 * nested ?: and Horner's q, 0.286 and 0.142; on a Zen 3 at x86-64-v3 that version took 0.50-0.59 ns, 0.81 with
 * the clamp, libmvec 0.86-0.89). */
#if defined(__FMA__)
#define RT_EXP_MADD(a, b, c) __builtin_fmaf(a, b, c)
#else
#define RT_EXP_MADD(a, b, c) ((a) * (b) + (c))
#endif
/* exp(x) but for x > 89, where it is garbage instead of inf */
static inline float rt_exp_below89_float32(float x) {
    const float shift = 0x1.8p23f + 254.0f;     /* z = x / ln2 + shift: n + 254 in z's low mantissa bits */
    const float z = RT_EXP_MADD(x, 0x1.715476p+0f, shift);
    const float n = z - shift;
    float r = RT_EXP_MADD(n, -0x1.62e4p-1f, x);
    r = RT_EXP_MADD(n, -0x1.7f7d1cp-20f, r);
    /* q(r) as (c0 + c1 r) + r^2 ((c2 + c3 r) + r^2 c4): 3 dependent steps, not 4 */
    const float r2 = r * r;
    const float lo = RT_EXP_MADD(0x1.555492p-3f, r, 0x1.fffffcp-2f);
    const float hi = RT_EXP_MADD(0x1.1239d6p-7f, r, 0x1.5558f0p-5f);
    const float q = RT_EXP_MADD(RT_EXP_MADD(0x1.6a24d0p-10f, r2, hi), r2, lo);
    const float em1 = RT_EXP_MADD(q, r2, r);     /* exp(r) - 1 */
    uint32_t zi;
    memcpy(&zi, &z, sizeof zi);
    /* 0x4b400000: 0x1.8p23f's bits. m = n + 254 and h = (n >> 1) + 127: the biased exponents of 2^(n >> 1) and
     * 2^(n - (n >> 1)) without an add each */
    const uint32_t m = zi - 0x4b400000u, h = m >> 1;
    const uint32_t s1i = h << 23, s2i = (m - h) << 23;
    float s1, s2;
    memcpy(&s1, &s1i, sizeof s1);
    memcpy(&s2, &s2i, sizeof s2);
    float e = s1 * RT_EXP_MADD(s2, em1, s2);
    return x < -104.0f ? 0.0f : e;              /* a compare and a mask (NaN keeps e, NaN) */
}
static inline float rt_exp_float32(float x) {
    const float e = rt_exp_below89_float32(x);
    return x > 89.0f ? (float)INFINITY : e;     /* a compare and a blend */
}
/* exp(x) for x <= 0 (or NaN): a softmax's exp(x - max(x)), whose argument the lowering knows is not positive
 * (transpiler/lowering/kernels.py). Without the overflow's compare and blend, and its two constants, which at
 * AVX2 are two of the 16 registers the loop around it needs: softmax over [8192, 100] 6% faster there. */
static inline float rt_exp_nonpositive_float32(float x) { return rt_exp_below89_float32(x); }
/* float32's tanh at AVX2 with FMA, inline for the same reasons as rt_exp_float32 (libmvec's AVX2 tanhf: 0.57 ns an
 * element in L1 on a Xeon at x86-64-v3, at most 2.16 ulp; this: 0.45 ns, 1.5 ulp; at AVX-512 libmvec's takes 0.23 ns
 * and stays, as it does without FMA). Odd, so computed on |x| and given x's sign bit. |x| >= 0.4: e / (e + 2) with
 * e = expm1(2|x|) = 2^n (e^r - 1) + 2^n - 1, r = 2|x| - n ln2, e^r - 1 = r + r^2 q(r) with q of degree 4 fitted to
 * the relative error of expm1 on [-ln2/2, ln2/2] (1.7e-8); 2|x| clamped to 20, where e / (e + 2) rounds to 1 (NaN
 * becomes 20 there, but its lane takes the other path). |x| < 0.4 (there e + 2 and the division would cost 2.5
 * ulp): |x| + |x|^3 p(x^2), p of degree 3 fitted to tanh's relative error (1.9e-9), NaN staying NaN. Checked over
 * every 61st float32 against tanh in double (tests/build/c/tanh_check.c). */
#if defined(__FMA__) && !defined(__AVX512F__)
static inline float rt_tanh_float32(float x) {
    const float ax = __builtin_fabsf(x);
    const float yc = ax < 10.0f ? ax : 10.0f;             /* a vminps: NaN gives 10 */
    const float y = yc + yc, shift = 0x1.8p23f;
    const float z = RT_EXP_MADD(y, 0x1.715476p+0f, shift);
    const float n = z - shift;
    const float r = RT_EXP_MADD(n, -0x1.62e430p-1f, y);   /* one step: n (ln2 - its float) < 5.6e-8 (n <= 29) */
    float q = RT_EXP_MADD(0x1.6bec04p-10f, r, 0x1.122768p-7f);
    q = RT_EXP_MADD(q, r, 0x1.555674p-5f);
    q = RT_EXP_MADD(q, r, 0x1.5554b0p-3f);
    q = RT_EXP_MADD(q, r, 0x1.fffffep-2f);
    const float em1 = RT_EXP_MADD(q, r * r, r);
    uint32_t zi;
    memcpy(&zi, &z, sizeof zi);
    const uint32_t si = (zi - 0x4b400000u + 127u) << 23;  /* 2^n */
    float s2n;
    memcpy(&s2n, &si, sizeof s2n);
    const float e = RT_EXP_MADD(s2n, em1, s2n - 1.0f);
    const float big = e / (e + 2.0f);
    const float u = ax * ax;
    float p = RT_EXP_MADD(0x1.331a40p-6f, u, -0x1.b6c784p-5f);
    p = RT_EXP_MADD(p, u, 0x1.1105f4p-3f);
    p = RT_EXP_MADD(p, u, -0x1.55553ep-2f);
    const float small = RT_EXP_MADD(ax * u, p, ax);
    const float t = ax >= 0.4f ? big : small;
    uint32_t ti, xi;
    memcpy(&ti, &t, sizeof ti);
    memcpy(&xi, &x, sizeof xi);
    ti |= xi & 0x80000000u;
    float out;
    memcpy(&out, &ti, sizeof out);
    return out;
}
#else
static inline float rt_tanh_float32(float a) { return tanhf(a); }
#endif
static inline double rt_tanh_float64(double a) { return tanh(a); }
#undef RT_EXP_MADD
static inline double rt_exp_float64(double a) { return exp(a); }
static inline float rt_sigmoid_float32(float a) { return 1.0f / (1.0f + rt_exp_float32(-a)); }
static inline double rt_sigmoid_float64(double a) { return 1.0 / (1.0 + exp(-a)); }

/* ---- matmul ---------------------------------------------------------------------------------
 *
 * Entry points (S is int8, int16, int32, int64, uint8, float32 or float64; T its C type):
 *   int rt_gemm_S(rt_ctx *ctx, const T *a, const T *b, T *c, int64_t m, int64_t k, int64_t n,
 *                 int transpose_a, int transpose_b);
 *       c[m, n] = op(a) @ op(b) with op(a) [m, k] (a is stored [k, m] when transpose_a) and op(b) [k, n]
 *       (b stored [n, k] when transpose_b); all row-major and contiguous, c aliasing neither.
 *   int rt_gemm_ld_S(rt_ctx *ctx, const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc,
 *                    int64_t m, int64_t k, int64_t n, int transpose_a, int transpose_b);
 *       the same on row-strided matrices: rows of a (as stored) are lda elements apart, of b ldb, of c ldc
 *       (a column block of a wider tensor, for instance).
 *   int rt_gemm_batch_S(rt_ctx *ctx, const T *a, const T *b, T *c, int batch_ndim, const int64_t *batch_shape,
 *                       const int64_t *a_batch_strides, const int64_t *b_batch_strides,
 *                       int64_t m, int64_t k, int64_t n, int transpose_a, int transpose_b);
 *       rt_gemm_S for every index of batch_shape[0:batch_ndim]: c is contiguous [*batch_shape, m, n]; matrix
 *       `idx` of a starts at sum(idx[d] * a_batch_strides[d]) elements (stride 0: a broadcasts along d).
 * They return 0, or -1 with ctx->msg set (out of memory). They use up to ctx->num_threads threads, only
 * for products of at least RT_GEMM_PARALLEL_MIN multiply-adds: smaller ones never start the thread pool.
 * Floats go through the blocked GEMM of rt_gemm.h (no BLAS library: its own thread pool would fight
 * OpenMP's); products of at most RT_GEMM_TINY multiply-adds, and integers, through plain loops that
 * the compiler specialises when the sizes are literals.
 *   void rt_matmul_S(const T *a, const T *b, T *c, int64_t m, int64_t k, int64_t n);
 *       the one-thread, untransposed form (older generated code).
 *   void rt_matmul_small_S(const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc,
 *                          int64_t m, int64_t k, int64_t n, int transpose_a, int transpose_b);
 *       rt_gemm_ld_S for small products whose sizes are literals at the call (the generated code calls it
 *       below transpiler.lowering.ops.SMALL_MATMUL): one thread, no packing, nothing to fail. It is not
 *       inlined (a chain of 100 products would not fit the instruction cache), but each set of literal
 *       arguments gets its own copy (GCC's interprocedural constant propagation clones it), in which the
 *       loops over the sizes are fully known.
 */
#if defined(__AVX512F__)
#define RT_VEC_BYTES 64
#define RT_GEMM_MR 8          /* 8 x 2 zmm accumulators of the 32 registers */
#elif defined(__AVX__)
#define RT_VEC_BYTES 32
#define RT_GEMM_MR 6          /* 6 x 2 ymm accumulators of the 16 registers */
#else
#define RT_VEC_BYTES 16
#define RT_GEMM_MR 4
#endif
/* Whether a short row's masked last block of 16 iterations (transpiler/lowering/lanes.py, ``_last_vector``) with
 * `rest` of them live runs as 8: where 8 floats fill a vector (AVX2 and below) and cover the rest. At AVX-512 a
 * constant 0: the compiler drops the 8-iteration copy. */
static inline int rt_tail_in_half(int64_t rest) { return RT_VEC_BYTES <= 32 && rest <= 8; }
RT_DEFINE_LANES16(float, float)
RT_DEFINE_LANES16(double, double)
/* ~80 us on one core: below it, waking a sleeping worker costs about what a second thread saves */
#ifndef RT_GEMM_PARALLEL_MIN
#define RT_GEMM_PARALLEL_MIN ((int64_t)1 << 22)
#endif
#define RT_GEMM_TINY 4096

/* Products called back to back (a recurrence's h @ w in a tensor loop, a Python loop over a built step) keep the
 * pool's workers spinning once a first one ran on them (GOMP_SPINCOUNT: ~0.1 ms), and a parallel region on
 * spinning workers costs about 1 us, not a 30-50 us wake-up. So a product of at least RT_GEMM_HOT_MIN
 * multiply-adds (about 2 us on one core: AVX2's 32x64x64 recurrence step) is split over threads when the
 * previous product of that size started less than RT_GEMM_HOT_NS ago: the first of a run of such products
 * runs on one thread, the rest on the pool (a 100-step RNN at AVX2 took 400 us, now 304 us). At AVX-512 the
 * same product takes half the time and a region would eat the gain: the bound doubles. */
#ifndef RT_GEMM_HOT_MIN
#if defined(__AVX512F__)
#define RT_GEMM_HOT_MIN ((int64_t)1 << 18)
#else
#define RT_GEMM_HOT_MIN ((int64_t)1 << 17)
#endif
#endif
#define RT_GEMM_HOT_NS 20000
#if defined(__linux__)
static int64_t rt_gemm_last_start = 0;
static inline int rt_gemm_back_to_back(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t t = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
    const int64_t last = __atomic_exchange_n(&rt_gemm_last_start, t, __ATOMIC_RELAXED);
    return t - last < RT_GEMM_HOT_NS;
}
#else
static inline int rt_gemm_back_to_back(void) { return 0; }
#endif

/* The register transposes serve rt_gemm.h's packing of a transposed B only, which a module linking the kernel
 * library (RT_KERNELS_EXTERN) does not compile: such a module does not parse immintrin.h either (55K of the 83K
 * lines gcc parsed for a three-function module: its compile took 1.45 s, now 0.5 s). */
#if defined(RT_KERNELS_EXTERN) && !defined(RT_KERNELS_LIBRARY)
#elif defined(__AVX512F__)
#include <immintrin.h>
/* dst[p * ldd + i] = src[i * lds + p] for a 16 x 16 block of floats, in registers (two unpack and two lane
 * shuffle stages): packing a transposed B one element at a time took 30 of the 97 us of a [64, 512] x
 * [512, 512]^T product (a layer's input gradient). */
static inline void rt_transpose16_float32(const float *src, int64_t lds, float *dst, int64_t ldd) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * lds);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {         /* lane L of r[i + c]: column 4L + c of rows i..i+3 */
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {             /* output row 4L + c: lane L of r[c], r[4 + c], r[8 + c], r[12 + c] */
        const __m512 v0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        const __m512 w0 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        const __m512 v1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
        const __m512 w1 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
        _mm512_storeu_ps(dst + c * ldd, _mm512_shuffle_f32x4(v0, w0, 0x88));
        _mm512_storeu_ps(dst + (8 + c) * ldd, _mm512_shuffle_f32x4(v0, w0, 0xDD));
        _mm512_storeu_ps(dst + (4 + c) * ldd, _mm512_shuffle_f32x4(v1, w1, 0x88));
        _mm512_storeu_ps(dst + (12 + c) * ldd, _mm512_shuffle_f32x4(v1, w1, 0xDD));
    }
}
#define RT_TRANSPOSE_float32 16
#define rt_transpose_block_float32 rt_transpose16_float32
#elif defined(__AVX2__)
#include <immintrin.h>
/* dst[p * ldd + i] = src[i * lds + p] for an 8 x 8 block of floats, in registers: at AVX2, packing a transposed B
 * one element at a time made a layer's input gradient [256, 128] @ [784, 128]^T take 310-320 us against the
 * forward product's 243-290 (2 threads, Zen 4). */
static inline void rt_transpose8_float32(const float *src, int64_t lds, float *dst, int64_t ldd) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * lds);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {          /* 128-bit lane L of r[i + c]: column 4L + c of rows i..i+3 */
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {             /* output row c: low lanes of r[c], r[4 + c]; row 4 + c: high lanes */
        _mm256_storeu_ps(dst + c * ldd, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
        _mm256_storeu_ps(dst + (4 + c) * ldd, _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
    }
}
#define RT_TRANSPOSE_float32 8
#define rt_transpose_block_float32 rt_transpose8_float32
#endif

/* The linkage of the kernel library's precompiled functions (rt_gemm.h): hidden globals in the library's archive
 * and in the modules that link it (RT_KERNELS_EXTERN), else `linkage` (static, static inline) as any kernel. */
#if defined(RT_KERNELS_EXTERN) || defined(RT_KERNELS_LIBRARY)
#define RT_KERNELS_LIBRARY_FN(linkage) __attribute__((visibility("hidden")))
#else
#define RT_KERNELS_LIBRARY_FN(linkage) linkage
#endif

/* Columns of an op(B) packed once (rt_gemm.h: rt_gemm_prepack_b) for vectors of `lanes` elements: slivers of two
 * vectors, the last one of one vector when the columns left fit in one (n = 100 at AVX-512: 32, 32, 32 and 16). */
static inline int64_t rt_gemm_packed_cols(int64_t n, int64_t lanes) {
    const int64_t wide = n / (2 * lanes) * (2 * lanes), rest = n - wide;
    return wide + (rest == 0 ? 0 : rest <= lanes ? lanes : 2 * lanes);
}

#define RT_G_T float
#define RT_G_S float32
#define RT_G_SIZE 4
#include "rt_gemm.h"
#undef RT_G_T
#undef RT_G_S
#undef RT_G_SIZE
#define RT_G_T double
#define RT_G_S float64
#define RT_G_SIZE 8
#include "rt_gemm.h"
#undef RT_G_T
#undef RT_G_S
#undef RT_G_SIZE

/* Plain loops: rows [i0, i1) of c = op(a) @ op(b). Integers multiply and add in the unsigned type U,
 * so overflow wraps as numpy's does (signed overflow would be undefined in C). */
#define RT_DEFINE_MATMUL_LOOP(T, U, S) \
    static inline void rt_matmul_loop_##S(const T *restrict a, int64_t lda, const T *restrict b, int64_t ldb, \
                                          T *restrict c, int64_t ldc, int64_t i0, int64_t i1, int64_t k, \
                                          int64_t n, int ta, int tb) { \
        for (int64_t i = i0; i < i1; i++) { \
            T *restrict crow = c + i * ldc; \
            if (tb) { \
                for (int64_t j = 0; j < n; j++) { \
                    const T *restrict bcol = b + j * ldb; \
                    U acc = 0; \
                    for (int64_t p = 0; p < k; p++) acc += (U)(ta ? a[p * lda + i] : a[i * lda + p]) * (U)bcol[p]; \
                    crow[j] = (T)acc; \
                } \
                continue; \
            } \
            for (int64_t j = 0; j < n; j++) crow[j] = 0; \
            for (int64_t p = 0; p < k; p++) { \
                const U av = (U)(ta ? a[p * lda + i] : a[i * lda + p]); \
                const T *restrict brow = b + p * ldb; \
                for (int64_t j = 0; j < n; j++) crow[j] = (T)((U)crow[j] + av * (U)brow[j]); \
            } \
        } \
    }

/* Small products at literal sizes: i-k-j with a block of RT_MATMUL_SMALL_ROWS rows of C, one vector of W bytes
 * each, in registers while p walks k (row p of B is one unaligned vector load, each element of A a broadcast).
 * The columns go in 64-byte vectors, then one of 32 and one of 16 bytes for what is left, then a last
 * 16-byte vector that ends at column n; that one, and the last block of rows (it ends at row m), may overlap
 * the block before them and compute those elements again (C is only written): no edge needs a scalar loop.
 * Integers multiply and add in the unsigned type U of the same size: overflow wraps as numpy's does.
 * Transposed B (its rows are C's columns) and rows of C narrower than 16 bytes take the plain loops. */
#if defined(__AVX512F__)
#define RT_MATMUL_SMALL_ROWS 8
#else
#define RT_MATMUL_SMALL_ROWS 4
#endif
#define RT_DEFINE_MATMUL_SMALL_W(T, U, S, W) \
    typedef U rt_small_vec##W##_##S __attribute__((vector_size(W), aligned(sizeof(T)), may_alias)); \
    /* columns [j0, j1) of c = op(a) @ b, in vectors starting at j0, j0 + vl, ... (j1 - j0 a multiple of vl) */ \
    static inline __attribute__((always_inline)) void rt_matmul_small##W##_##S( \
            const T *restrict a, int64_t lda, const T *restrict b, int64_t ldb, T *restrict c, int64_t ldc, \
            int64_t m, int64_t k, int64_t j0, int64_t j1, int ta) { \
        typedef rt_small_vec##W##_##S vec; \
        const int64_t vl = W / (int64_t)sizeof(T); \
        const int rows = m < RT_MATMUL_SMALL_ROWS ? (int)m : RT_MATMUL_SMALL_ROWS; \
        for (int64_t i0 = 0; i0 < m; i0 += rows) { \
            const int64_t i = i0 + rows <= m ? i0 : m - rows; \
            for (int64_t j = j0; j < j1; j += vl) { \
                vec acc[RT_MATMUL_SMALL_ROWS]; \
                _Pragma("GCC unroll 8") \
                for (int r = 0; r < RT_MATMUL_SMALL_ROWS; r++) acc[r] = (vec){0}; \
                for (int64_t p = 0; p < k; p++) { \
                    const vec bp = *(const vec *)(b + p * ldb + j); \
                    _Pragma("GCC unroll 8") \
                    for (int r = 0; r < rows; r++) \
                        acc[r] += (U)(ta ? a[p * lda + i + r] : a[(i + r) * lda + p]) * bp; \
                } \
                _Pragma("GCC unroll 8") \
                for (int r = 0; r < rows; r++) *(vec *)(c + (i + r) * ldc + j) = acc[r]; \
            } \
        } \
    }
#define RT_DEFINE_MATMUL_SMALL(T, U, S) \
    RT_DEFINE_MATMUL_SMALL_W(T, U, S, 64) \
    RT_DEFINE_MATMUL_SMALL_W(T, U, S, 32) \
    RT_DEFINE_MATMUL_SMALL_W(T, U, S, 16) \
    static RT_FMA_KERNEL void rt_matmul_small_vec_##S( \
            const T *restrict a, int64_t lda, const T *restrict b, int64_t ldb, T *restrict c, int64_t ldc, \
            int64_t m, int64_t k, int64_t n, int ta) { \
        const int64_t l64 = 64 / (int64_t)sizeof(T), l32 = l64 / 2, l16 = l64 / 4; \
        int64_t j = n / l64 * l64; \
        rt_matmul_small64_##S(a, lda, b, ldb, c, ldc, m, k, 0, j, ta); \
        if (n - j >= l32) { rt_matmul_small32_##S(a, lda, b, ldb, c, ldc, m, k, j, j + l32, ta); j += l32; } \
        if (n - j >= l16) { rt_matmul_small16_##S(a, lda, b, ldb, c, ldc, m, k, j, j + l16, ta); j += l16; } \
        if (j < n) rt_matmul_small16_##S(a, lda, b, ldb, c, ldc, m, k, n - l16, n, ta); \
    } \
    static inline __attribute__((always_inline)) void rt_matmul_small_##S( \
            const T *restrict a, int64_t lda, const T *restrict b, int64_t ldb, T *restrict c, int64_t ldc, \
            int64_t m, int64_t k, int64_t n, int ta, int tb) { \
        if (m <= 0 || n <= 0) return; \
        if ((m == 1 || n == 1) && rt_matvec_small_##S(a, lda, b, ldb, c, ldc, m, k, n, ta, tb)) return; \
        if (tb || n * (int64_t)sizeof(T) < 16) rt_matmul_loop_##S(a, lda, b, ldb, c, ldc, 0, m, k, n, ta, tb); \
        else rt_matmul_small_vec_##S(a, lda, b, ldb, c, ldc, m, k, n, ta); \
    }

/* Integer products: the loops, split by rows over threads when big enough. Returns 0. */
#define RT_DEFINE_GEMM_INT(T, S) \
    static inline int rt_gemm_run_##S(const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc, \
                                      int64_t m, int64_t k, int64_t n, int ta, int tb, int threads) { \
        if (m * k * n >= RT_GEMM_PARALLEL_MIN && m > 1 && threads > 1) { \
            _Pragma("omp parallel for schedule(static) num_threads(threads)") \
            for (int t = 0; t < threads; t++) \
                rt_matmul_loop_##S(a, lda, b, ldb, c, ldc, m * t / threads, m * (t + 1) / threads, k, n, ta, tb); \
        } else { \
            rt_matmul_loop_##S(a, lda, b, ldb, c, ldc, 0, m, k, n, ta, tb); \
        } \
        return 0; \
    }

/* Float products: tiny ones through the loops, the rest through the blocked GEMM. -1: out of memory. */
#define RT_DEFINE_GEMM_FLOAT(T, S) \
    static inline int rt_gemm_run_##S(const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc, \
                                      int64_t m, int64_t k, int64_t n, int ta, int tb, int threads) { \
        if (m * k * n <= RT_GEMM_TINY) { \
            rt_matmul_loop_##S(a, lda, b, ldb, c, ldc, 0, m, k, n, ta, tb); \
            return 0; \
        } \
        return rt_gemm_blocked_##S(a, lda, b, ldb, c, ldc, m, k, n, ta, tb, threads); \
    }

/* A float product whose blocks code runs on as they are computed (an epilogue): the generated code asks
 * rt_gemm_grid_S for the number of parts, runs rt_gemm_part_S for each part on its own thread, then its own
 * loops over the part's block C[*i0:*i1, *j0:*j1]. One part computes the whole product as rt_gemm_ld_S does on
 * one thread. The parts split C exactly as rt_gemm_ld_S does, so the results are the same bits. -1: out of
 * memory (the caller fails with ctx). */
#define RT_DEFINE_GEMM_PARTS(T, S) \
    static inline int rt_gemm_part_##S(const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc, \
                                       int64_t m, int64_t k, int64_t n, int ta, int tb, int parts, int tn, int part, \
                                       int64_t *i0, int64_t *i1, int64_t *j0, int64_t *j1) { \
        if (parts == 1) { \
            *i0 = 0; *i1 = m; *j0 = 0; *j1 = n; \
            return rt_gemm_run_##S(a, lda, b, ldb, c, ldc, m, k, n, ta, tb, 1); \
        } \
        return rt_gemm_block_part_##S(a, lda, b, ldb, c, ldc, m, k, n, ta, tb, parts, tn, part, i0, i1, j0, j1); \
    }

/* The entry points over rt_gemm_run_S (see the list above). */
#define RT_DEFINE_GEMM(T, S) \
    static inline int rt_gemm_ld_##S(rt_ctx *ctx, const T *a, int64_t lda, const T *b, int64_t ldb, T *c, \
                                     int64_t ldc, int64_t m, int64_t k, int64_t n, int transpose_a, int transpose_b) { \
        if (rt_gemm_run_##S(a, lda, b, ldb, c, ldc, m, k, n, transpose_a, transpose_b, ctx->num_threads)) \
            return rt_fail(ctx, "MatMul: out of memory for packing the operands"); \
        return 0; \
    } \
    static inline int rt_gemm_##S(rt_ctx *ctx, const T *a, const T *b, T *c, int64_t m, int64_t k, int64_t n, \
                                  int transpose_a, int transpose_b) { \
        return rt_gemm_ld_##S(ctx, a, transpose_a ? m : k, b, transpose_b ? k : n, c, n, m, k, n, transpose_a, \
                              transpose_b); \
    } \
    static inline void rt_matmul_##S(const T *a, const T *b, T *c, int64_t m, int64_t k, int64_t n) { \
        (void)rt_gemm_run_##S(a, k, b, n, c, n, m, k, n, 0, 0, 1); \
    }

/* Batches: small products spread over threads, one product each; big ones one after another, each on all.
 * The big ones' loop is outside any parallel construct: inside an inactive one (`if(0)`), each product's own
 * region was a nested team that libgomp starts afresh instead of waking its pool (4 x [512, 512] @ [512, 64]
 * took 380 us on two threads, 96 us a product where one alone takes 65 us). */
#define RT_DEFINE_GEMM_BATCH(T, S) \
    static inline int rt_gemm_batch_one_##S(const T *a, const T *b, T *c, int batch_ndim, \
                                            const int64_t *batch_shape, const int64_t *a_batch_strides, \
                                            const int64_t *b_batch_strides, int64_t t, int64_t m, int64_t k, \
                                            int64_t n, int transpose_a, int transpose_b, int threads) { \
        int64_t rest = t, off_a = 0, off_b = 0; \
        for (int d = batch_ndim - 1; d >= 0; d--) { \
            const int64_t i = rest % batch_shape[d]; \
            rest /= batch_shape[d]; \
            off_a += i * a_batch_strides[d]; \
            off_b += i * b_batch_strides[d]; \
        } \
        return rt_gemm_run_##S(a + off_a, transpose_a ? m : k, b + off_b, transpose_b ? k : n, c + t * m * n, n, \
                               m, k, n, transpose_a, transpose_b, threads); \
    } \
    static inline int rt_gemm_batch_##S(rt_ctx *ctx, const T *a, const T *b, T *c, int batch_ndim, \
                                        const int64_t *batch_shape, const int64_t *a_batch_strides, \
                                        const int64_t *b_batch_strides, int64_t m, int64_t k, int64_t n, \
                                        int transpose_a, int transpose_b) { \
        int64_t total = 1; \
        for (int d = 0; d < batch_ndim; d++) total *= batch_shape[d]; \
        const int64_t work = m * k * n; \
        int rc = 0; \
        const int spread = ctx->num_threads > 1 && total > 1 && work < RT_GEMM_PARALLEL_MIN \
            && work * total >= RT_GEMM_PARALLEL_MIN; \
        if (spread) { \
            _Pragma("omp parallel for schedule(static) num_threads(ctx->num_threads) reduction(|:rc)") \
            for (int64_t t = 0; t < total; t++) \
                rc |= rt_gemm_batch_one_##S(a, b, c, batch_ndim, batch_shape, a_batch_strides, b_batch_strides, t, \
                                            m, k, n, transpose_a, transpose_b, 1); \
        } else { \
            for (int64_t t = 0; t < total; t++) \
                rc |= rt_gemm_batch_one_##S(a, b, c, batch_ndim, batch_shape, a_batch_strides, b_batch_strides, t, \
                                            m, k, n, transpose_a, transpose_b, ctx->num_threads); \
        } \
        return rc ? rt_fail(ctx, "MatMul: out of memory for packing the operands") : 0; \
    }

RT_DEFINE_MATMUL_LOOP(int8_t, uint32_t, int8)
RT_DEFINE_MATMUL_LOOP(int16_t, uint32_t, int16)
RT_DEFINE_MATMUL_LOOP(int32_t, uint32_t, int32)
RT_DEFINE_MATMUL_LOOP(int64_t, uint64_t, int64)
RT_DEFINE_MATMUL_LOOP(uint8_t, uint32_t, uint8)
RT_DEFINE_MATMUL_LOOP(float, float, float32)
RT_DEFINE_MATMUL_LOOP(double, double, float64)
/* A small matrix-vector product: floats through rt_gemv_S (vectorised over whichever side is contiguous; the plain
 * loops ran a [2048, 32] @ [32, 1] product and its transposed gradient one element at a time, 27 us a step of
 * a regression trained in a tensor loop); integers through the loops (0). */
#define RT_DEFINE_MATVEC_SMALL_INT(T, S) \
    static inline int rt_matvec_small_##S(const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc, \
                                          int64_t m, int64_t k, int64_t n, int ta, int tb) { \
        (void)a; (void)lda; (void)b; (void)ldb; (void)c; (void)ldc; (void)m; (void)k; (void)n; (void)ta; (void)tb; \
        return 0; \
    }
#define RT_DEFINE_MATVEC_SMALL_FLOAT(T, S) \
    static inline int rt_matvec_small_##S(const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc, \
                                          int64_t m, int64_t k, int64_t n, int ta, int tb) { \
        rt_gemv_##S(a, lda, b, ldb, c, ldc, m, k, n, ta, tb, 1, 1); \
        return 1; \
    }
RT_DEFINE_MATVEC_SMALL_INT(int8_t, int8)
RT_DEFINE_MATVEC_SMALL_INT(int16_t, int16)
RT_DEFINE_MATVEC_SMALL_INT(int32_t, int32)
RT_DEFINE_MATVEC_SMALL_INT(int64_t, int64)
RT_DEFINE_MATVEC_SMALL_INT(uint8_t, uint8)
RT_DEFINE_MATVEC_SMALL_FLOAT(float, float32)
RT_DEFINE_MATVEC_SMALL_FLOAT(double, float64)
RT_DEFINE_MATMUL_SMALL(int8_t, uint8_t, int8)
RT_DEFINE_MATMUL_SMALL(int16_t, uint16_t, int16)
RT_DEFINE_MATMUL_SMALL(int32_t, uint32_t, int32)
RT_DEFINE_MATMUL_SMALL(int64_t, uint64_t, int64)
RT_DEFINE_MATMUL_SMALL(uint8_t, uint8_t, uint8)
RT_DEFINE_MATMUL_SMALL(float, float, float32)
RT_DEFINE_MATMUL_SMALL(double, double, float64)
RT_DEFINE_GEMM_INT(int8_t, int8)
RT_DEFINE_GEMM_INT(int16_t, int16)
RT_DEFINE_GEMM_INT(int32_t, int32)
RT_DEFINE_GEMM_INT(int64_t, int64)
RT_DEFINE_GEMM_INT(uint8_t, uint8)
RT_DEFINE_GEMM_FLOAT(float, float32)
RT_DEFINE_GEMM_FLOAT(double, float64)
RT_DEFINE_GEMM_PARTS(float, float32)
RT_DEFINE_GEMM_PARTS(double, float64)
RT_DEFINE_GEMM(int8_t, int8)
RT_DEFINE_GEMM(int16_t, int16)
RT_DEFINE_GEMM(int32_t, int32)
RT_DEFINE_GEMM(int64_t, int64)
RT_DEFINE_GEMM(uint8_t, uint8)
RT_DEFINE_GEMM(float, float32)
RT_DEFINE_GEMM(double, float64)
RT_DEFINE_GEMM_BATCH(int8_t, int8)
RT_DEFINE_GEMM_BATCH(int16_t, int16)
RT_DEFINE_GEMM_BATCH(int32_t, int32)
RT_DEFINE_GEMM_BATCH(int64_t, int64)
RT_DEFINE_GEMM_BATCH(uint8_t, uint8)
RT_DEFINE_GEMM_BATCH(float, float32)
RT_DEFINE_GEMM_BATCH(double, float64)

#endif /* RT_KERNELS_H */
