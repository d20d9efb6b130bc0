/* Sorting: a stable merge sort of positions by value (runtime/ops/sort_ops.py's order: ascending or
 * descending, equal values by position, NaN after every number when ascending, before them when descending),
 * and the Sort and TopKV2 ops on it. Rows are sorted in parallel, each thread with scratch of its own. */
#ifndef RT_SORT_H
#define RT_SORT_H

#include "rt_kernels.h"
#include <stdarg.h>
#ifdef _OPENMP
#include <omp.h>
static inline int rt_library_thread(void) { return omp_get_thread_num(); }
#else
static inline int rt_library_thread(void) { return 0; }
#endif

/* An error of op `op` created at `where` (a printf format and its arguments): -1 with ctx->msg set. */
static int rt_library_error(rt_ctx *ctx, const char *op, const char *where, const char *format, ...) {
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    snprintf(ctx->msg, sizeof(ctx->msg), "%s: %s\n  [[%s]]", op, text, where);
    return -1;
}

/* Scratch of `count` int64 per thread for `threads` threads (the call's arena), or NULL with an error. */
static int64_t *rt_library_scratch(rt_ctx *ctx, int threads, int64_t count, const char *op, const char *where) {
    int64_t *p = (int64_t *)rt_alloc(ctx, (size_t)threads * (size_t)(count > 0 ? count : 1) * sizeof(int64_t));
    if (!p) rt_library_error(ctx, op, where, "out of memory");
    return p;
}

#define RT_LESS_FLOAT(a, b) ((a) < (b) || ((b) != (b) && (a) == (a)))   /* NaN after every number */
#define RT_LESS_PLAIN(a, b) ((a) < (b))
#define RT_SORT_RUN 16

/* order[0..n) := the positions of x[0], x[stride], ... x[(n - 1) stride] in sorted order; tmp: n int64. */
#define RT_DEFINE_ARGSORT(T, S, LESS) \
static void rt_argsort_##S(const T *x, int64_t stride, int64_t n, int descending, int64_t *order, int64_t *tmp) { \
    for (int64_t i = 0; i < n; i++) order[i] = i; \
    for (int64_t lo = 0; lo < n; lo += RT_SORT_RUN) { \
        int64_t hi = lo + RT_SORT_RUN < n ? lo + RT_SORT_RUN : n; \
        for (int64_t i = lo + 1; i < hi; i++) { \
            int64_t v = order[i]; \
            T xv = x[v * stride]; \
            int64_t j = i; \
            while (j > lo) { \
                T xj = x[order[j - 1] * stride]; \
                if (!(descending ? LESS(xj, xv) : LESS(xv, xj))) break; \
                order[j] = order[j - 1]; \
                j--; \
            } \
            order[j] = v; \
        } \
    } \
    int64_t *src = order, *dst = tmp; \
    for (int64_t width = RT_SORT_RUN; width < n; width *= 2) { \
        for (int64_t lo = 0; lo < n; lo += 2 * width) { \
            int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n; \
            int64_t i = lo, j = mid, k = lo; \
            while (i < mid && j < hi) { \
                T a = x[src[i] * stride], b = x[src[j] * stride]; \
                dst[k++] = (descending ? LESS(a, b) : LESS(b, a)) ? src[j++] : src[i++]; \
            } \
            while (i < mid) dst[k++] = src[i++]; \
            while (j < hi) dst[k++] = src[j++]; \
        } \
        int64_t *swap = src; src = dst; dst = swap; \
    } \
    if (src != order) memcpy(order, src, (size_t)n * sizeof(int64_t)); \
}

/* Sort: x viewed as [outer, n, inner], sorted along n: values and int32 positions (either may be NULL). */
#define RT_DEFINE_SORT_OP(T, S) \
static int rt_sort_##S(rt_ctx *ctx, const T *x, T *values, int32_t *indices, int64_t outer, int64_t n, \
                       int64_t inner, int descending, const char *where) { \
    int64_t rows = outer * inner; \
    if (rows == 0 || n == 0) return 0; \
    int used = ctx->num_threads > 1 && rows > 1 && rows * n >= RT_PARALLEL_MIN ? ctx->num_threads : 1; \
    int64_t *scratch = rt_library_scratch(ctx, used, 2 * n, "Sort", where); \
    if (!scratch) return -1; \
    _Pragma("omp parallel for schedule(static) num_threads(used) if(used > 1)") \
    for (int64_t r = 0; r < rows; r++) { \
        int64_t *order = scratch + (int64_t)rt_library_thread() * 2 * n, *tmp = order + n; \
        int64_t base = (r / inner) * n * inner + r % inner; \
        rt_argsort_##S(x + base, inner, n, descending, order, tmp); \
        for (int64_t k = 0; k < n; k++) { \
            if (values) values[base + k * inner] = x[base + order[k] * inner]; \
            if (indices) indices[base + k * inner] = (int32_t)order[k]; \
        } \
    } \
    return 0; \
}

/* The k largest of x[0..n) (k <= n), largest first, ties by position, into values/indices, by one pass keeping
 * them in order: an element displaces the current k-th only when it comes before it (LESS(kth, x), strictly), so
 * most elements cost one comparison. For a few of many (top_k(x, 5) over rows of 100) sorting every row took
 * 3x jax.jit's time. */
#define RT_DEFINE_SELECT_TOP(T, S, LESS) \
static void rt_select_top_##S(const T *x, int64_t n, int64_t k, T *values, int32_t *indices) { \
    int64_t count = 0; \
    for (int64_t i = 0; i < n; i++) { \
        const T v = x[i]; \
        if (count == k && !LESS(values[k - 1], v)) continue; \
        int64_t j = count < k ? count++ : k - 1; \
        while (j > 0 && LESS(values[j - 1], v)) { \
            values[j] = values[j - 1]; \
            indices[j] = indices[j - 1]; \
            j--; \
        } \
        values[j] = v; \
        indices[j] = (int32_t)i; \
    } \
}
#define RT_TOP_K_SELECT_MAX 32      /* k up to this (and at most n / 4) select in one pass; more sort the row */

/* TopKV2: the k largest of each row of x [rows, n] (largest first, ties by position): values and int32
 * positions [rows, k]. */
#define RT_DEFINE_TOP_K(T, S) \
static int rt_top_k_##S(rt_ctx *ctx, const T *x, T *values, int32_t *indices, int64_t rows, int64_t n, int64_t k, \
                        const char *where) { \
    if (k < 0 || k > n) return rt_library_error(ctx, "TopKV2", where, "k = %lld must be in [0, %lld] (the last " \
                                                "dimension of the input)", (long long)k, (long long)n); \
    if (rows == 0 || k == 0) return 0; \
    int used = ctx->num_threads > 1 && rows > 1 && rows * n >= RT_PARALLEL_MIN ? ctx->num_threads : 1; \
    int64_t *scratch = rt_library_scratch(ctx, used, 2 * n, "TopKV2", where); \
    if (!scratch) return -1; \
    const int select = k <= RT_TOP_K_SELECT_MAX && k * 4 <= n; \
    _Pragma("omp parallel for schedule(static) num_threads(used) if(used > 1)") \
    for (int64_t r = 0; r < rows; r++) { \
        if (select) { \
            rt_select_top_##S(x + r * n, n, k, values + r * k, indices + r * k); \
            continue; \
        } \
        int64_t *order = scratch + (int64_t)rt_library_thread() * 2 * n, *tmp = order + n; \
        rt_argsort_##S(x + r * n, 1, n, 1, order, tmp); \
        for (int64_t j = 0; j < k; j++) { \
            values[r * k + j] = x[r * n + order[j]]; \
            indices[r * k + j] = (int32_t)order[j]; \
        } \
    } \
    return 0; \
}

#define RT_DEFINE_SORTING(T, S, LESS) RT_DEFINE_ARGSORT(T, S, LESS) RT_DEFINE_SORT_OP(T, S) \
    RT_DEFINE_SELECT_TOP(T, S, LESS) RT_DEFINE_TOP_K(T, S)
RT_DEFINE_SORTING(int8_t, int8, RT_LESS_PLAIN)
RT_DEFINE_SORTING(int16_t, int16, RT_LESS_PLAIN)
RT_DEFINE_SORTING(int32_t, int32, RT_LESS_PLAIN)
RT_DEFINE_SORTING(int64_t, int64, RT_LESS_PLAIN)
RT_DEFINE_SORTING(uint8_t, uint8, RT_LESS_PLAIN)
RT_DEFINE_SORTING(float, float32, RT_LESS_FLOAT)
RT_DEFINE_SORTING(double, float64, RT_LESS_FLOAT)
RT_DEFINE_ARGSORT(uint64_t, uint64, RT_LESS_PLAIN)

#endif
