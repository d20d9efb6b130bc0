/* Linear algebra of small dense matrices: inverse, solve and determinant by LU decomposition with partial
 * pivoting (the row of the largest magnitude, the first on ties), in double for float32 and float64 alike.
 * Batches of matrices ([..., n, n], contiguous) are spread over threads when there is enough work.
 * Eager code uses numpy's LAPACK (the same algorithm, blocked): results agree to rounding. */
#ifndef RT_LINALG_H
#define RT_LINALG_H

#include "rt_sort.h"     /* rt_library_error, rt_library_scratch, rt_library_thread */

/* LU of a (n x n, row-major, in place) with row permutation perm: 0 when every pivot is nonzero, else 1
 * (elimination goes on past a zero column: the determinant is then 0). *sign: the permutation's sign. */
static int rt_lu(double *a, int64_t n, int64_t *perm, int *sign) {
    int singular = 0;
    *sign = 1;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t k = 0; k < n; k++) {
        int64_t p = k;
        double best = fabs(a[k * n + k]);
        for (int64_t i = k + 1; i < n; i++) {
            double v = fabs(a[i * n + k]);
            if (v > best) { best = v; p = i; }
        }
        if (p != k) {
            for (int64_t j = 0; j < n; j++) { double t = a[k * n + j]; a[k * n + j] = a[p * n + j]; a[p * n + j] = t; }
            int64_t t = perm[k]; perm[k] = perm[p]; perm[p] = t;
            *sign = -*sign;
        }
        double pivot = a[k * n + k];
        if (pivot == 0.0) { singular = 1; continue; }
        for (int64_t i = k + 1; i < n; i++) {
            double f = a[i * n + k] / pivot;
            a[i * n + k] = f;
            if (f != 0.0)
                for (int64_t j = k + 1; j < n; j++) a[i * n + j] -= f * a[k * n + j];
        }
    }
    return singular;
}

/* x[n, m] := A^-1 b for the LU of A (b's rows taken through perm). */
static void rt_lu_solve(const double *lu, const int64_t *perm, int64_t n, const double *b, int64_t m, double *x) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < m; c++) x[i * m + c] = b[perm[i] * m + c];
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < i; k++) {
            double f = lu[i * n + k];
            if (f != 0.0) for (int64_t c = 0; c < m; c++) x[i * m + c] -= f * x[k * m + c];
        }
    for (int64_t i = n - 1; i >= 0; i--) {
        for (int64_t k = i + 1; k < n; k++) {
            double f = lu[i * n + k];
            if (f != 0.0) for (int64_t c = 0; c < m; c++) x[i * m + c] -= f * x[k * m + c];
        }
        for (int64_t c = 0; c < m; c++) x[i * m + c] /= lu[i * n + i];
    }
}

/* Per thread: the LU (n * n), b (n * m), x (n * m) in double and perm (n). */
#define RT_LINALG_SCRATCH(n, m) ((n) * (n) + 2 * (n) * (m) + (n))

#define RT_LINALG_THREADS(ctx, batch, work) \
    ((ctx)->num_threads > 1 && (batch) > 1 && (batch) * (work) >= RT_PARALLEL_MIN ? (ctx)->num_threads : 1)

/* MatrixInverse (adjoint: of the transpose), MatrixSolve (adjoint: A^T x = b) and MatrixDeterminant of batch
 * matrices a [batch, n, n], right-hand sides b [batch, n, m]. */
#define RT_DEFINE_LINALG(T, S) \
static int rt_matrix_solve_##S(rt_ctx *ctx, const char *op, const T *a, const T *b, T *x, int64_t batch, int64_t n, \
                               int64_t m, int adjoint, const char *where) { \
    if (batch == 0 || n == 0 || m == 0) return 0; \
    int used = RT_LINALG_THREADS(ctx, batch, n * n * (n + m)); \
    int64_t per = RT_LINALG_SCRATCH(n, m); \
    int64_t *scratch = rt_library_scratch(ctx, used, per, op, where); \
    if (!scratch) return -1; \
    int failed = 0; \
    _Pragma("omp parallel for schedule(static) num_threads(used) if(used > 1) reduction(|:failed)") \
    for (int64_t q = 0; q < batch; q++) { \
        double *lu = (double *)(scratch + (int64_t)rt_library_thread() * per), *rhs = lu + n * n, *sol = rhs + n * m; \
        int64_t *perm = (int64_t *)(sol + n * m); \
        const T *aq = a + q * n * n; \
        for (int64_t i = 0; i < n; i++) \
            for (int64_t j = 0; j < n; j++) lu[i * n + j] = (double)(adjoint ? aq[j * n + i] : aq[i * n + j]); \
        for (int64_t i = 0; i < n * m; i++) rhs[i] = b ? (double)b[q * n * m + i] : 0.0; \
        if (!b) for (int64_t i = 0; i < n; i++) rhs[i * m + i] = 1.0; \
        int sign; \
        if (rt_lu(lu, n, perm, &sign)) { failed = 1; continue; } \
        rt_lu_solve(lu, perm, n, rhs, m, sol); \
        for (int64_t i = 0; i < n * m; i++) x[q * n * m + i] = (T)sol[i]; \
    } \
    if (failed) return rt_library_error(ctx, op, where, b ? "the matrix is not invertible" : \
                                        "the input is not invertible"); \
    return 0; \
} \
static int rt_matrix_inverse_##S(rt_ctx *ctx, const T *a, T *x, int64_t batch, int64_t n, int adjoint, \
                                 const char *where) { \
    return rt_matrix_solve_##S(ctx, "MatrixInverse", a, NULL, x, batch, n, n, adjoint, where); \
} \
static int rt_matrix_determinant_##S(rt_ctx *ctx, const T *a, T *det, int64_t batch, int64_t n, const char *where) { \
    if (batch == 0) return 0; \
    int used = RT_LINALG_THREADS(ctx, batch, n * n * n); \
    int64_t per = RT_LINALG_SCRATCH(n, 0); \
    int64_t *scratch = rt_library_scratch(ctx, used, per, "MatrixDeterminant", where); \
    if (!scratch) return -1; \
    _Pragma("omp parallel for schedule(static) num_threads(used) if(used > 1)") \
    for (int64_t q = 0; q < batch; q++) { \
        double *lu = (double *)(scratch + (int64_t)rt_library_thread() * per); \
        int64_t *perm = (int64_t *)(lu + n * n); \
        for (int64_t i = 0; i < n * n; i++) lu[i] = (double)a[q * n * n + i]; \
        int sign; \
        rt_lu(lu, n, perm, &sign); \
        double value = (double)sign; \
        for (int64_t i = 0; i < n; i++) value *= lu[i * n + i]; \
        det[q] = (T)value; \
    } \
    return 0; \
}
RT_DEFINE_LINALG(float, float32)
RT_DEFINE_LINALG(double, float64)

#endif
