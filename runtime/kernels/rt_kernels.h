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
#endif

typedef uint8_t rt_bool;

enum rt_dtype {
    RT_BOOL = 0, RT_INT8 = 1, RT_INT16 = 2, RT_INT32 = 3, RT_INT64 = 4, RT_UINT8 = 5,
    RT_FLOAT16 = 6, RT_FLOAT32 = 7, RT_FLOAT64 = 8, RT_STRING = 9, RT_VARIANT = 10
};

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
    default: return 8;
    }
}

/* ---- arena ------------------------------------------------------------------------------- */

/* Big buffers (>= RT_BIG_BYTES) come from a process-wide caching allocator in runtime._native
 * (huge pages, blocks reused across calls: no fresh zeroed pages for every result). Arena entries of
 * big blocks carry a tag in the low bit. The hooks are NULL until the runtime sets them. */
#define RT_BIG_BYTES ((size_t)4 << 20)
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

static inline int64_t rt_mark(rt_ctx *ctx) { return ctx->n_allocs; }

/* Free every allocation made since `mark`, except the pointers listed in keep[0..n_keep). */
static inline void rt_release(rt_ctx *ctx, int64_t mark, void **keep, int n_keep) {
    int64_t w = mark;
    for (int64_t i = mark; i < ctx->n_allocs; i++) {
        void *p = ctx->allocs[i];
        int kept = 0;
        for (int k = 0; k < n_keep; k++) if (keep[k] == rt_untag(p)) { kept = 1; break; }
        if (kept) ctx->allocs[w++] = p; else rt_free_entry(p);
    }
    ctx->n_allocs = w;
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

/* Free an arena buffer before the scope ends (a loop variable replaced by its next value). */
static inline void rt_drop(rt_ctx *ctx, void *p) {
    int kind = rt_detach(ctx, p);
    if (kind == 1) free(p); else if (kind == 2) rt_big_free(p);
}

static inline void rt_ctx_free(rt_ctx *ctx) {
    rt_release(ctx, 0, NULL, 0);
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

/* Allocate t's buffer for its current shape and dtype (arena-owned). */
static inline int rt_alloc_tensor(rt_ctx *ctx, rt_tensor *t) {
    size_t n = (size_t)rt_numel(t) * rt_itemsize(t->dtype);
    t->data = rt_alloc(ctx, n);
    t->owner = NULL;
    if (!t->data) return rt_fail(ctx, "out of memory");
    return 0;
}

static inline int rt_same_shape(const rt_tensor *a, const rt_tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++) if (a->shape[i] != b->shape[i]) return 0;
    return 1;
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
    static inline T rt_relu_##S(T a) { return a > 0 ? a : 0; }

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
    static inline T rt_pow_##S(T a, T b) { return pow##F(a, b); } \
    static inline T rt_max_##S(T a, T b) { return (a > b || a != a) ? a : b; } \
    static inline T rt_min_##S(T a, T b) { return (a < b || a != a) ? a : b; } \
    static inline T rt_abs_##S(T a) { return fabs##F(a); } \
    static inline T rt_sign_##S(T a) { return a != a ? a : (T)((a > 0) - (a < 0)); } \
    static inline T rt_relu_##S(T a) { return (a > 0 || a != a) ? a : 0; } \
    static inline T rt_sqrt_##S(T a) { return sqrt##F(a); } \
    static inline T rt_exp_##S(T a) { return exp##F(a); } \
    static inline T rt_log_##S(T a) { return log##F(a); } \
    static inline T rt_tanh_##S(T a) { return tanh##F(a); } \
    static inline T rt_sin_##S(T a) { return sin##F(a); } \
    static inline T rt_cos_##S(T a) { return cos##F(a); } \
    static inline T rt_sigmoid_##S(T a) { return (T)1 / ((T)1 + exp##F(-a)); }

RT_DEFINE_INT_HELPERS(int8_t, int8)
RT_DEFINE_INT_HELPERS(int16_t, int16)
RT_DEFINE_INT_HELPERS(int32_t, int32)
RT_DEFINE_INT_HELPERS(int64_t, int64)
RT_DEFINE_INT_HELPERS(uint8_t, uint8)
RT_DEFINE_FLOAT_HELPERS(float, float32, f)
RT_DEFINE_FLOAT_HELPERS(double, float64, )

/* ---- matmul -------------------------------------------------------------------------------- */

typedef void (*rt_sgemm_fn)(char *transa, char *transb, int *m, int *n, int *k, float *alpha, float *a, int *lda,
                            float *b, int *ldb, float *beta, float *c, int *ldc);
typedef void (*rt_dgemm_fn)(char *transa, char *transb, int *m, int *n, int *k, double *alpha, double *a, int *lda,
                            double *b, int *ldb, double *beta, double *c, int *ldc);
/* Set once by the runtime from scipy.linalg.cython_blas (NULL: use the C loops). */
static rt_sgemm_fn rt_sgemm = NULL;
static rt_dgemm_fn rt_dgemm = NULL;
#define RT_BLAS_MIN_FLOPS 32768

/* c[m,n] = a[m,k] @ b[k,n] (row-major, c must not alias a or b). */
#define RT_DEFINE_MATMUL(T, S) \
    static inline void rt_matmul_##S(const T *restrict a, const T *restrict b, T *restrict c, \
                                     int64_t m, int64_t k, int64_t n) { \
        for (int64_t i = 0; i < m; i++) { \
            T *restrict crow = c + i * n; \
            for (int64_t j = 0; j < n; j++) crow[j] = 0; \
            for (int64_t p = 0; p < k; p++) { \
                const T av = a[i * k + p]; \
                const T *restrict brow = b + p * n; \
                for (int64_t j = 0; j < n; j++) crow[j] = (T)(crow[j] + av * brow[j]); \
            } \
        } \
    }

RT_DEFINE_MATMUL(int8_t, int8)
RT_DEFINE_MATMUL(int16_t, int16)
RT_DEFINE_MATMUL(int32_t, int32)
RT_DEFINE_MATMUL(int64_t, int64)
RT_DEFINE_MATMUL(uint8_t, uint8)
RT_DEFINE_MATMUL(float, float32_loop)
RT_DEFINE_MATMUL(double, float64_loop)

static inline void rt_matmul_float32(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n) {
    if (rt_sgemm && m * n * k >= RT_BLAS_MIN_FLOPS && m < 2147483647 && n < 2147483647 && k < 2147483647) {
        /* row-major C = A B is column-major C^T = B^T A^T */
        char t = 'N'; int M = (int)n, N = (int)m, K = (int)k; float one = 1.0f, zero = 0.0f;
        rt_sgemm(&t, &t, &M, &N, &K, &one, (float *)b, &M, (float *)a, &K, &zero, c, &M);
        return;
    }
    rt_matmul_float32_loop(a, b, c, m, k, n);
}

static inline void rt_matmul_float64(const double *a, const double *b, double *c, int64_t m, int64_t k, int64_t n) {
    if (rt_dgemm && m * n * k >= RT_BLAS_MIN_FLOPS && m < 2147483647 && n < 2147483647 && k < 2147483647) {
        char t = 'N'; int M = (int)n, N = (int)m, K = (int)k; double one = 1.0, zero = 0.0;
        rt_dgemm(&t, &t, &M, &N, &K, &one, (double *)b, &M, (double *)a, &K, &zero, c, &M);
        return;
    }
    rt_matmul_float64_loop(a, b, c, m, k, n);
}

/* ---- reductions over one axis: x viewed as [outer, n, inner] -> out [outer, inner] ----------- */

#define RT_DEFINE_REDUCE(T, S, ACC) \
    static inline void rt_reduce_sum_##S(const T *x, T *out, int64_t outer, int64_t n, int64_t inner) { \
        for (int64_t o = 0; o < outer; o++) { \
            if (inner == 1) { ACC acc = 0; const T *p = x + o * n; for (int64_t i = 0; i < n; i++) acc += p[i]; out[o] = (T)acc; continue; } \
            T *q = out + o * inner; for (int64_t j = 0; j < inner; j++) q[j] = 0; \
            for (int64_t i = 0; i < n; i++) { const T *p = x + (o * n + i) * inner; for (int64_t j = 0; j < inner; j++) q[j] = (T)(q[j] + p[j]); } \
        } \
    } \
    static inline void rt_reduce_prod_##S(const T *x, T *out, int64_t outer, int64_t n, int64_t inner) { \
        for (int64_t o = 0; o < outer; o++) { T *q = out + o * inner; for (int64_t j = 0; j < inner; j++) q[j] = 1; \
            for (int64_t i = 0; i < n; i++) { const T *p = x + (o * n + i) * inner; for (int64_t j = 0; j < inner; j++) q[j] = (T)(q[j] * p[j]); } } \
    } \
    static inline void rt_reduce_max_##S(const T *x, T *out, int64_t outer, int64_t n, int64_t inner) { \
        for (int64_t o = 0; o < outer; o++) { T *q = out + o * inner; const T *p0 = x + o * n * inner; for (int64_t j = 0; j < inner; j++) q[j] = p0[j]; \
            for (int64_t i = 1; i < n; i++) { const T *p = x + (o * n + i) * inner; for (int64_t j = 0; j < inner; j++) q[j] = (p[j] > q[j] || p[j] != p[j]) ? p[j] : q[j]; } } \
    } \
    static inline void rt_reduce_min_##S(const T *x, T *out, int64_t outer, int64_t n, int64_t inner) { \
        for (int64_t o = 0; o < outer; o++) { T *q = out + o * inner; const T *p0 = x + o * n * inner; for (int64_t j = 0; j < inner; j++) q[j] = p0[j]; \
            for (int64_t i = 1; i < n; i++) { const T *p = x + (o * n + i) * inner; for (int64_t j = 0; j < inner; j++) q[j] = (p[j] < q[j] || p[j] != p[j]) ? p[j] : q[j]; } } \
    }

/* Sums over contiguous rows: vectorised (`omp simd reduction` may reassociate, unlike plain -O3),
 * accumulated in ACC (double for floats), on several threads when large. */
#define RT_DEFINE_SUM_ROWS(T, S, ACC) \
    static inline ACC rt_sum_all_##S(const T *x, int64_t n, int threads) { \
        ACC acc = 0; \
        if (n >= 65536 && threads > 1) { \
            _Pragma("omp parallel for simd reduction(+:acc) schedule(static) num_threads(threads)") \
            for (int64_t i = 0; i < n; i++) acc += x[i]; \
        } else { \
            _Pragma("omp simd reduction(+:acc)") \
            for (int64_t i = 0; i < n; i++) acc += x[i]; \
        } \
        return acc; \
    } \
    static inline void rt_reduce_sum_rows_##S(const T *x, T *out, int64_t outer, int64_t n, int threads) { \
        if (outer == 1) { out[0] = (T)rt_sum_all_##S(x, n, threads); return; } \
        if (outer * n >= 65536 && threads > 1 && outer >= threads) { \
            _Pragma("omp parallel for schedule(static) num_threads(threads)") \
            for (int64_t o = 0; o < outer; o++) out[o] = (T)rt_sum_all_##S(x + o * n, n, 1); \
        } else { \
            for (int64_t o = 0; o < outer; o++) out[o] = (T)rt_sum_all_##S(x + o * n, n, 1); \
        } \
    }

RT_DEFINE_SUM_ROWS(int8_t, int8, int64_t)
RT_DEFINE_SUM_ROWS(int16_t, int16, int64_t)
RT_DEFINE_SUM_ROWS(int32_t, int32, int64_t)
RT_DEFINE_SUM_ROWS(int64_t, int64, int64_t)
RT_DEFINE_SUM_ROWS(uint8_t, uint8, int64_t)
RT_DEFINE_SUM_ROWS(float, float32, double)
RT_DEFINE_SUM_ROWS(double, float64, double)

RT_DEFINE_REDUCE(int8_t, int8, int64_t)
RT_DEFINE_REDUCE(int16_t, int16, int64_t)
RT_DEFINE_REDUCE(int32_t, int32, int64_t)
RT_DEFINE_REDUCE(int64_t, int64, int64_t)
RT_DEFINE_REDUCE(uint8_t, uint8, int64_t)
RT_DEFINE_REDUCE(float, float32, double)
RT_DEFINE_REDUCE(double, float64, double)

static inline void rt_reduce_any_bool(const rt_bool *x, rt_bool *out, int64_t outer, int64_t n, int64_t inner) {
    for (int64_t o = 0; o < outer; o++) { rt_bool *q = out + o * inner; for (int64_t j = 0; j < inner; j++) q[j] = 0;
        for (int64_t i = 0; i < n; i++) { const rt_bool *p = x + (o * n + i) * inner; for (int64_t j = 0; j < inner; j++) q[j] = q[j] || p[j]; } }
}

static inline void rt_reduce_all_bool(const rt_bool *x, rt_bool *out, int64_t outer, int64_t n, int64_t inner) {
    for (int64_t o = 0; o < outer; o++) { rt_bool *q = out + o * inner; for (int64_t j = 0; j < inner; j++) q[j] = 1;
        for (int64_t i = 0; i < n; i++) { const rt_bool *p = x + (o * n + i) * inner; for (int64_t j = 0; j < inner; j++) q[j] = q[j] && p[j]; } }
}

/* ---- data movement (dtype-agnostic, by element size) --------------------------------------------- */

/* out = transpose(x, perm) for a C-contiguous x. */
static inline void rt_transpose(const rt_tensor *x, rt_tensor *out, const int *perm) {
    const int nd = x->ndim;
    const size_t es = rt_itemsize(x->dtype);
    int64_t in_strides[RT_MAX_DIMS], idx[RT_MAX_DIMS];
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) { in_strides[i] = s; s *= x->shape[i]; }
    const int64_t total = rt_numel(out);
    for (int i = 0; i < nd; i++) idx[i] = 0;
    const char *src = (const char *)x->data;
    char *dst = (char *)out->data;
    for (int64_t k = 0; k < total; k++) {
        int64_t off = 0;
        for (int i = 0; i < nd; i++) off += idx[i] * in_strides[perm[i]];
        memcpy(dst + k * es, src + off * es, es);
        for (int i = nd - 1; i >= 0; i--) { if (++idx[i] < out->shape[i]) break; idx[i] = 0; }
    }
}

/* Gather along `axis`; indices of dtype int32 or int64. Returns -1 on an out-of-range index. */
static inline int rt_gather(rt_ctx *ctx, const rt_tensor *params, const rt_tensor *indices, int axis, rt_tensor *out) {
    const size_t es = rt_itemsize(params->dtype);
    int64_t outer = 1, inner = 1, n = params->shape[axis];
    for (int i = 0; i < axis; i++) outer *= params->shape[i];
    for (int i = axis + 1; i < params->ndim; i++) inner *= params->shape[i];
    const int64_t ni = rt_numel(indices);
    for (int64_t j = 0; j < ni; j++) {
        int64_t v = indices->dtype == RT_INT64 ? ((const int64_t *)indices->data)[j] : ((const int32_t *)indices->data)[j];
        if (v < 0 || v >= n) {
            snprintf(ctx->msg, sizeof(ctx->msg), "GatherV2: indices[%lld] = %lld is not in [0, %lld)",
                     (long long)j, (long long)v, (long long)n);
            return -1;
        }
    }
    const char *src = (const char *)params->data;
    char *dst = (char *)out->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t v = indices->dtype == RT_INT64 ? ((const int64_t *)indices->data)[j] : ((const int32_t *)indices->data)[j];
            memcpy(dst + (o * ni + j) * inner * es, src + (o * n + v) * inner * es, (size_t)inner * es);
        }
    return 0;
}

/* Concatenate inputs along axis into out (all C-contiguous, same dtype). */
static inline void rt_concat(const rt_tensor *const *inputs, int n_inputs, int axis, rt_tensor *out) {
    const size_t es = rt_itemsize(out->dtype);
    int64_t outer = 1;
    for (int i = 0; i < axis; i++) outer *= out->shape[i];
    int64_t out_chunk = 1;
    for (int i = axis; i < out->ndim; i++) out_chunk *= out->shape[i];
    char *dst = (char *)out->data;
    int64_t offset = 0;
    for (int t = 0; t < n_inputs; t++) {
        const rt_tensor *x = inputs[t];
        int64_t chunk = 1;
        for (int i = axis; i < x->ndim; i++) chunk *= x->shape[i];
        for (int64_t o = 0; o < outer; o++)
            memcpy(dst + (o * out_chunk + offset) * es, (const char *)x->data + o * chunk * es, (size_t)chunk * es);
        offset += chunk;
    }
}

/* Strided slice: per input dim d, out index i reads x at begin[d] + i * step[d]; dims with
 * keep[d] == 0 are indexed (removed from out). out's shape is set by the caller. */
static inline void rt_strided_copy(const rt_tensor *x, const int64_t *begin, const int64_t *step,
                                   const int64_t *count, rt_tensor *out) {
    const int nd = x->ndim;
    const size_t es = rt_itemsize(x->dtype);
    int64_t strides[RT_MAX_DIMS], idx[RT_MAX_DIMS];
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) { strides[i] = s; s *= x->shape[i]; }
    int64_t total = 1;
    for (int i = 0; i < nd; i++) { total *= count[i]; idx[i] = 0; }
    const char *src = (const char *)x->data;
    char *dst = (char *)out->data;
    for (int64_t k = 0; k < total; k++) {
        int64_t off = 0;
        for (int i = 0; i < nd; i++) off += (begin[i] + idx[i] * step[i]) * strides[i];
        memcpy(dst + k * es, src + off * es, es);
        for (int i = nd - 1; i >= 0; i--) { if (++idx[i] < count[i]) break; idx[i] = 0; }
    }
}

#endif /* RT_KERNELS_H */
