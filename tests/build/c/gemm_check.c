/* The kernel library's GEMM entry points against a double-precision reference, for one ISA level
 * (tests/build/test_gemm_isa.py compiles this file once per -march), and the fixed-size kernel
 * rt_matmul_small_S of every type. Operands are small integers, so float sums are exact and every entry
 * must match. Prints "ok" or the first mismatches; exit status 1
 * on any. */
#include "rt_kernels.h"
#include <stdio.h>

static int fails = 0;
static int b_shift = 0;       /* B starts this many elements past a 64-byte boundary (in place or packed) */

static void *alloc_line(size_t bytes) { return aligned_alloc(64, (bytes + 64 + 63) / 64 * 64); }

#define CHECK_T(T, S, TOL) \
    static void check_##S(int64_t m, int64_t k, int64_t n, int ta, int tb, int threads) { \
        T *a = malloc(sizeof(T) * (size_t)(m * k + 1)), *b_line = alloc_line(sizeof(T) * (size_t)(k * n + 1)); \
        T *b = b_line + b_shift, *c = malloc(sizeof(T) * (size_t)(m * n + 1)); \
        for (int64_t i = 0; i < m * k; i++) a[i] = (T)((i * 7 + 3) % 13 - 6); \
        for (int64_t i = 0; i < k * n; i++) b[i] = (T)((i * 5 + 1) % 11 - 5); \
        rt_ctx ctx; \
        memset(&ctx, 0, sizeof ctx); \
        ctx.num_threads = threads; \
        if (rt_gemm_##S(&ctx, a, b, c, m, k, n, ta, tb)) fails++; \
        double worst = 0; \
        for (int64_t i = 0; i < m; i++) \
            for (int64_t j = 0; j < n; j++) { \
                double s = 0; \
                for (int64_t p = 0; p < k; p++) \
                    s += (double)(ta ? a[p * m + i] : a[i * k + p]) * (double)(tb ? b[j * k + p] : b[p * n + j]); \
                double d = fabs(s - (double)c[i * n + j]); \
                if (d > worst) worst = d; \
            } \
        if (worst > TOL && fails++ < 10) \
            printf(#S " %lldx%lldx%lld ta%d tb%d threads %d: error %g\n", (long long)m, (long long)k, (long long)n, \
                   ta, tb, threads, worst); \
        free(a); free(b_line); free(c); \
    }

CHECK_T(float, float32, 0)
CHECK_T(double, float64, 0)
CHECK_T(int32_t, int32, 0)

/* rt_matmul_small_S on row-strided operands (ld = size + 3): every element of C against a reference computed
 * in W (uint32/uint64 for integers: the products wrap as numpy's do, so the operands are big enough to
 * overflow; double for floats, exact on small integers); nothing outside C's [m, n] block is written. */
#define CHECK_SMALL(T, W, S, BIG) \
    static void check_small_##S(int64_t m, int64_t k, int64_t n, int ta, int tb) { \
        const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 3, ldc = n + 3; \
        T *a = malloc(sizeof(T) * (size_t)(lda * (ta ? k : m))), *b = malloc(sizeof(T) * (size_t)(ldb * (tb ? n : k))); \
        T *c = malloc(sizeof(T) * (size_t)(ldc * m)); \
        for (int64_t i = 0; i < lda * (ta ? k : m); i++) a[i] = (T)(((i * 7 + 3) % 13 - 6) * (BIG)); \
        for (int64_t i = 0; i < ldb * (tb ? n : k); i++) b[i] = (T)(((i * 5 + 1) % 11 - 5) * (BIG)); \
        for (int64_t i = 0; i < ldc * m; i++) c[i] = (T)77; \
        rt_matmul_small_##S(a, lda, b, ldb, c, ldc, m, k, n, ta, tb); \
        for (int64_t i = 0; i < m; i++) \
            for (int64_t j = 0; j < ldc; j++) { \
                W s = 77; \
                if (j < n) { \
                    s = 0; \
                    for (int64_t p = 0; p < k; p++) \
                        s += (W)(ta ? a[p * lda + i] : a[i * lda + p]) * (W)(tb ? b[j * ldb + p] : b[p * ldb + j]); \
                } \
                if ((T)s != c[i * ldc + j] && fails++ < 10) \
                    printf("small " #S " %lldx%lldx%lld ta%d tb%d: c[%lld][%lld] wrong\n", (long long)m, \
                           (long long)k, (long long)n, ta, tb, (long long)i, (long long)j); \
            } \
        free(a); free(b); free(c); \
    }

CHECK_SMALL(float, double, float32, 1)
CHECK_SMALL(double, double, float64, 1)
CHECK_SMALL(int32_t, uint32_t, int32, 40000)
CHECK_SMALL(int64_t, uint64_t, int64, 3000000000LL)
CHECK_SMALL(int16_t, uint32_t, int16, 300)
CHECK_SMALL(int8_t, uint32_t, int8, 20)
CHECK_SMALL(uint8_t, uint32_t, uint8, 20)

static void check_strided(int ta, int tb) {
    const int64_t m = 37, k = 45, n = 70, lda = 100, ldb = 90, ldc = 80;
    float *a = calloc(lda * 100, sizeof(float)), *b = calloc(ldb * 100, sizeof(float));
    float *c = malloc(ldc * 100 * sizeof(float));
    for (int64_t i = 0; i < lda * 100; i++) a[i] = (float)(i % 23) - 11;
    for (int64_t i = 0; i < ldb * 100; i++) b[i] = (float)(i % 29) - 14;
    for (int64_t i = 0; i < ldc * 100; i++) c[i] = 12345.f;
    rt_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.num_threads = 2;
    rt_gemm_ld_float32(&ctx, a, lda, b, ldb, c, ldc, m, k, n, ta, tb);
    for (int64_t i = 0; i < 100; i++)
        for (int64_t j = 0; j < ldc; j++) {
            double s = 12345.;        /* outside the [m, n] block nothing is written */
            if (i < m && j < n) {
                s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += (double)(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
            }
            if (s != c[i * ldc + j] && fails++ < 10)
                printf("strided ta%d tb%d: c[%lld][%lld] = %g, expected %g\n", ta, tb, (long long)i, (long long)j,
                       c[i * ldc + j], s);
        }
    free(a); free(b); free(c);
}

static void check_batch(void) {
    const int64_t m = 9, k = 20, n = 35;        /* a [2, 1, m, k] @ b [1, 3, k, n] */
    float *a = malloc(sizeof(float) * 2 * m * k), *b = malloc(sizeof(float) * 3 * k * n);
    float *c = malloc(sizeof(float) * 6 * m * n), *r = malloc(sizeof(float) * m * n);
    for (int64_t i = 0; i < 2 * m * k; i++) a[i] = (float)(i % 17) - 8;
    for (int64_t i = 0; i < 3 * k * n; i++) b[i] = (float)(i % 19) - 9;
    const int64_t shape[2] = {2, 3}, a_strides[2] = {m * k, 0}, b_strides[2] = {0, k * n};
    rt_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.num_threads = 2;
    rt_gemm_batch_float32(&ctx, a, b, c, 2, shape, a_strides, b_strides, m, k, n, 0, 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            rt_matmul_float32(a + i * m * k, b + j * k * n, r, m, k, n);
            if (memcmp(r, c + (i * 3 + j) * m * n, sizeof(float) * m * n) != 0 && fails++ < 10)
                printf("batch [%d, %d] differs from its single product\n", i, j);
        }
    free(a); free(b); free(c); free(r);
}

/* A product of RT_GEMM_HOT_MIN multiply-adds runs on one thread after a pause, and on threads when it follows
 * another closely (rt_gemm_back_to_back); smaller ones stay on one thread however close they come. */
static void check_back_to_back(void) {
    const struct timespec pause = {0, 2000000};
    const int64_t m = 64, k = 64, n = RT_GEMM_HOT_MIN / (64 * 64);
    int tn, split = 0, small_split = 0;
    nanosleep(&pause, NULL);
    if (rt_gemm_grid_float32(m, k, n, 0, 0, 2, &tn) != 1 && fails++ < 10) printf("a product after a pause was split\n");
    for (int i = 0; i < 10; i++) split += rt_gemm_grid_float32(m, k, n, 0, 0, 2, &tn) > 1;
    for (int i = 0; i < 10; i++) small_split += rt_gemm_grid_float32(m, k, n / 2, 0, 0, 2, &tn) > 1;
    if (split < 5 && fails++ < 10) printf("back-to-back products split %d times of 10\n", split);
    if (small_split && fails++ < 10) printf("products under RT_GEMM_HOT_MIN split %d times\n", small_split);
    if (rt_gemm_grid_float32(m, k, n, 0, 0, 1, &tn) != 1 && fails++ < 10) printf("split with one thread\n");
}

int main(void) {
    check_back_to_back();
    const int64_t sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 100, 257, 300};
    const int count = sizeof sizes / sizeof sizes[0];
    for (int x = 0; x < count; x++)
        for (int y = 0; y < count; y += 3)
            for (int z = 0; z < count; z += 2)
                for (int t = 0; t < 4; t++) {
                    const int64_t m = sizes[x], k = sizes[y], n = sizes[z];
                    check_float32(m, k, n, t & 1, t >> 1, 1 + (x & 1));
                    check_float64(m, k, n, t & 1, t >> 1, 2);
                    if (m * k * n < 100000) check_int32(m, k, n, t & 1, t >> 1, 2);
                }
    /* big: several KC panels, NC panels, both threads' blocks */
    check_float32(40, 600, 2100, 0, 0, 2);
    check_float32(300, 600, 530, 1, 1, 3);
    check_float64(513, 300, 70, 1, 0, 2);
    check_float32(256, 784, 10, 0, 0, 2);
    check_float32(256, 784, 128, 0, 0, 2);      /* B read in place (rows 512 bytes apart), several KC panels */
    check_float32(70, 600, 512, 0, 0, 2);       /* the widest B read in place */
    check_float32(70, 600, 520, 0, 0, 2);       /* packed: rows too far apart */
    check_float64(90, 300, 250, 0, 0, 2);       /* in place, a ragged last sliver packed */
    check_float32(4096, 5, 3, 0, 1, 2);
    for (b_shift = 1; b_shift <= 4; b_shift += 3) {     /* B's rows off vector boundaries: packed */
        check_float32(256, 784, 128, 0, 0, 2);
        check_float32(70, 600, 512, 0, 0, 1);
        check_float64(90, 300, 250, 0, 0, 2);
        check_float32(33, 100, 40, 0, 0, 1);             /* the small path's slivers */
    }
    b_shift = 0;
    for (int t = 0; t < 4; t++) check_strided(t & 1, t >> 1);
    const int64_t small[] = {1, 2, 3, 4, 5, 7, 8, 9, 10, 15, 16, 17, 20, 24, 31, 33, 40, 65};
    const int small_count = sizeof small / sizeof small[0];
    for (int x = 0; x < small_count; x++)
        for (int y = 0; y < small_count; y += 2)
            for (int z = 0; z < small_count; z++)
                for (int t = 0; t < 4; t++) {
                    const int64_t m = small[x], k = small[y], n = small[z];
                    check_small_float32(m, k, n, t & 1, t >> 1);
                    check_small_int32(m, k, n, t & 1, t >> 1);
                    if ((x + z) % 3 == 0) {
                        check_small_float64(m, k, n, t & 1, t >> 1);
                        check_small_int64(m, k, n, t & 1, t >> 1);
                        check_small_int16(m, k, n, t & 1, t >> 1);
                        check_small_int8(m, k, n, t & 1, t >> 1);
                        check_small_uint8(m, k, n, t & 1, t >> 1);
                    }
                }
    check_batch();
    printf("%s (%d failures)\n", fails ? "FAIL" : "ok", fails);
    return fails != 0;
}
