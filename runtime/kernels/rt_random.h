/* Random numbers in native code: Philox4x32-10 and the distributions of runtime/ops/random_ops.py, whose
 * module docstring specifies the stream (numpy computes the same numbers there).
 *
 * Every element is a function of (key, call, element index) alone: the fill loops split elements over
 * threads freely. A stateful op's call count lives in a static counter of the built function
 * (rt_random_next_call), its key in the graph (seeds) or, without seeds, in a static drawn at the first
 * call (rt_random_fresh_key); stateless ops and Generators pass both as values.
 */
#ifndef RT_RANDOM_H
#define RT_RANDOM_H

#include "rt_kernels.h"
#include "rt_sort.h"
#include <time.h>
#include <unistd.h>

typedef struct { uint32_t w[4]; } rt_philox4;

static inline uint64_t rt_splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The key of two seeds (random_ops.mix). */
static inline uint64_t rt_random_key(int64_t a, int64_t b) {
    return rt_splitmix64(rt_splitmix64((uint64_t)a) ^ (uint64_t)b);
}

/* Block `block` of draw `call` (attempt: a truncated normal's redraw). */
static inline rt_philox4 rt_philox(uint64_t key, uint64_t block, uint64_t call, uint32_t attempt) {
    uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = (uint32_t)call;
    uint32_t c3 = (uint32_t)((call >> 32) & 0xFFFFFFu) | (attempt << 24);
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    rt_philox4 out = {{c0, c1, c2, c3}};
    return out;
}

/* The run count of a stateful op: its value before this run (one counter per op of a built function). */
static inline uint64_t rt_random_next_call(uint64_t *calls) {
    return __atomic_fetch_add(calls, 1, __ATOMIC_RELAXED);
}

/* The key of an op without seeds: drawn from the clock, the process and the slot's address at its first run. */
static inline uint64_t rt_random_fresh_key(uint64_t *slot) {
    uint64_t key = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (key) return key;
    struct timespec a, b;
    clock_gettime(CLOCK_REALTIME, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t fresh = rt_splitmix64((uint64_t)a.tv_sec * 1000000007ull ^ (uint64_t)a.tv_nsec);
    fresh = rt_splitmix64(fresh ^ (uint64_t)b.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)slot);
    fresh |= 1;     /* 0 means "not drawn yet" */
    uint64_t expected = 0;
    __atomic_compare_exchange_n(slot, &expected, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
}

static inline float rt_random_unit_float32(uint32_t w) {
    uint32_t bits = (w >> 9) | 0x3F800000u;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f - 1.0f;
}

static inline double rt_random_unit_float64(uint64_t u) {
    uint64_t bits = (u >> 12) | 0x3FF0000000000000ull;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d - 1.0;
}

static inline uint64_t rt_random_u64(uint32_t hi, uint32_t lo) { return ((uint64_t)hi << 32) | lo; }

static inline double rt_random_box_muller(double u1, double u2) {
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Standard normals from 32-bit words (float32) and from 52-bit fractions of a whole block (float64). */
static inline double rt_random_normal32(uint32_t w0, uint32_t w1) {
    return rt_random_box_muller(((double)w0 + 0.5) * 0x1p-32, (double)w1 * 0x1p-32);
}

static inline double rt_random_normal64(rt_philox4 r) {
    uint64_t m0 = rt_random_u64(r.w[0], r.w[1]) >> 12, m1 = rt_random_u64(r.w[2], r.w[3]) >> 12;
    return rt_random_box_muller(((double)m0 + 0.5) * 0x1p-52, (double)m1 * 0x1p-52);
}

#define RT_RANDOM_PARALLEL(n, threads) ((threads) > 1 && (n) >= RT_PARALLEL_MIN)

/* ---- uniform ---------------------------------------------------------------------------------------- */

static void rt_random_uniform_float32(float *out, int64_t n, uint64_t key, uint64_t call, float lo, float hi,
                                      int threads) {
    int64_t nblocks = (n + 3) / 4;
    float span = hi - lo;
    #pragma omp parallel for schedule(static) num_threads(threads) if(RT_RANDOM_PARALLEL(n, threads))
    for (int64_t b = 0; b < nblocks; b++) {
        rt_philox4 r = rt_philox(key, (uint64_t)b, call, 0);
        for (int j = 0; j < 4; j++) {
            int64_t e = 4 * b + j;
            if (e < n) out[e] = rt_random_unit_float32(r.w[j]) * span + lo;
        }
    }
}

static void rt_random_uniform_float64(double *out, int64_t n, uint64_t key, uint64_t call, double lo, double hi,
                                      int threads) {
    int64_t nblocks = (n + 1) / 2;
    double span = hi - lo;
    #pragma omp parallel for schedule(static) num_threads(threads) if(RT_RANDOM_PARALLEL(n, threads))
    for (int64_t b = 0; b < nblocks; b++) {
        rt_philox4 r = rt_philox(key, (uint64_t)b, call, 0);
        for (int j = 0; j < 2; j++) {
            int64_t e = 2 * b + j;
            if (e < n) out[e] = rt_random_unit_float64(rt_random_u64(r.w[2 * j], r.w[2 * j + 1])) * span + lo;
        }
    }
}

#define RT_DEFINE_RANDOM_INT(T, S) \
static void rt_random_uniform_##S(T *out, int64_t n, uint64_t key, uint64_t call, int64_t lo, int64_t hi, \
                                  int threads) { \
    int64_t nblocks = (n + 1) / 2; \
    uint64_t span = (uint64_t)hi - (uint64_t)lo; \
    _Pragma("omp parallel for schedule(static) num_threads(threads) if(RT_RANDOM_PARALLEL(n, threads))") \
    for (int64_t b = 0; b < nblocks; b++) { \
        rt_philox4 r = rt_philox(key, (uint64_t)b, call, 0); \
        for (int j = 0; j < 2; j++) { \
            int64_t e = 2 * b + j; \
            if (e < n) out[e] = (T)(int64_t)((uint64_t)lo + rt_random_u64(r.w[2 * j], r.w[2 * j + 1]) % span); \
        } \
    } \
}
RT_DEFINE_RANDOM_INT(int8_t, int8)
RT_DEFINE_RANDOM_INT(int16_t, int16)
RT_DEFINE_RANDOM_INT(int32_t, int32)
RT_DEFINE_RANDOM_INT(int64_t, int64)
RT_DEFINE_RANDOM_INT(uint8_t, uint8)

/* ---- normal and truncated normal -------------------------------------------------------------------- */

static void rt_random_normal_float32(float *out, int64_t n, uint64_t key, uint64_t call, int threads) {
    int64_t nblocks = (n + 1) / 2;
    #pragma omp parallel for schedule(static) num_threads(threads) if(RT_RANDOM_PARALLEL(n, threads))
    for (int64_t b = 0; b < nblocks; b++) {
        rt_philox4 r = rt_philox(key, (uint64_t)b, call, 0);
        for (int j = 0; j < 2; j++) {
            int64_t e = 2 * b + j;
            if (e < n) out[e] = (float)rt_random_normal32(r.w[2 * j], r.w[2 * j + 1]);
        }
    }
}

static void rt_random_normal_float64(double *out, int64_t n, uint64_t key, uint64_t call, int threads) {
    #pragma omp parallel for schedule(static) num_threads(threads) if(RT_RANDOM_PARALLEL(n, threads))
    for (int64_t e = 0; e < n; e++) out[e] = rt_random_normal64(rt_philox(key, (uint64_t)e, call, 0));
}

#define RT_RANDOM_TRUNCATE 2.0
#define RT_RANDOM_ATTEMPTS 256

static void rt_random_truncated_float32(float *out, int64_t n, uint64_t key, uint64_t call, int threads) {
    #pragma omp parallel for schedule(static) num_threads(threads) if(RT_RANDOM_PARALLEL(n, threads))
    for (int64_t e = 0; e < n; e++) {
        double z = 0.0;
        for (uint32_t a = 0; a < RT_RANDOM_ATTEMPTS; a++) {
            rt_philox4 r = rt_philox(key, (uint64_t)e, call, a);
            double first = rt_random_normal32(r.w[0], r.w[1]);
            if (fabs(first) <= RT_RANDOM_TRUNCATE) { z = first; break; }
            double second = rt_random_normal32(r.w[2], r.w[3]);
            if (fabs(second) <= RT_RANDOM_TRUNCATE) { z = second; break; }
        }
        out[e] = (float)z;
    }
}

static void rt_random_truncated_float64(double *out, int64_t n, uint64_t key, uint64_t call, int threads) {
    #pragma omp parallel for schedule(static) num_threads(threads) if(RT_RANDOM_PARALLEL(n, threads))
    for (int64_t e = 0; e < n; e++) {
        double z = 0.0;
        for (uint32_t a = 0; a < RT_RANDOM_ATTEMPTS; a++) {
            double candidate = rt_random_normal64(rt_philox(key, (uint64_t)e, call, a));
            if (fabs(candidate) <= RT_RANDOM_TRUNCATE) { z = candidate; break; }
        }
        out[e] = z;
    }
}

/* ---- categorical: samples [rows, samples] of class indices with probabilities softmax(logits) ---------- */

#define RT_DEFINE_RANDOM_CATEGORICAL(T, S, I, IS) \
static void rt_random_categorical_##S##_##IS(const T *logits, int64_t rows, int64_t classes, int64_t samples, \
                                             I *out, uint64_t key, uint64_t call, int threads) { \
    _Pragma("omp parallel for schedule(static) num_threads(threads) if(threads > 1 && rows * classes * samples >= RT_PARALLEL_MIN)") \
    for (int64_t row = 0; row < rows; row++) { \
        const T *x = logits + row * classes; \
        double peak = (double)x[0], total = 0.0; \
        for (int64_t k = 1; k < classes; k++) \
            if (!((double)x[k] <= peak)) peak = (peak != peak) ? peak : (double)x[k]; \
        for (int64_t k = 0; k < classes; k++) total += exp((double)x[k] - peak); \
        for (int64_t s = 0; s < samples; s++) { \
            int64_t e = row * samples + s; \
            rt_philox4 r = rt_philox(key, (uint64_t)(e / 2), call, 0); \
            int j = (int)(e % 2); \
            double target = rt_random_unit_float64(rt_random_u64(r.w[2 * j], r.w[2 * j + 1])) * total; \
            double running = 0.0; \
            int64_t k = 0; \
            for (; k < classes; k++) { \
                running += exp((double)x[k] - peak); \
                if (running > target) break; \
            } \
            out[e] = (I)(k < classes ? k : classes - 1); \
        } \
    } \
}
RT_DEFINE_RANDOM_CATEGORICAL(float, float32, int32_t, int32)
RT_DEFINE_RANDOM_CATEGORICAL(float, float32, int64_t, int64)
RT_DEFINE_RANDOM_CATEGORICAL(double, float64, int32_t, int32)
RT_DEFINE_RANDOM_CATEGORICAL(double, float64, int64_t, int64)

/* ---- shuffle: rows of src (row_bytes each) into dst in the order of their 64-bit keys (ties by position) --- */

static int rt_random_shuffle(rt_ctx *ctx, const char *src, char *dst, int64_t rows, int64_t row_bytes, uint64_t key,
                             uint64_t call, const char *where) {
    if (rows <= 0) return 0;
    int64_t *order = rt_library_scratch(ctx, 1, 3 * rows, "RandomShuffle", where);
    if (!order) return -1;
    int64_t *tmp = order + rows;
    uint64_t *keys = (uint64_t *)(order + 2 * rows);
    for (int64_t b = 0; b < (rows + 1) / 2; b++) {
        rt_philox4 r = rt_philox(key, (uint64_t)b, call, 0);
        for (int j = 0; j < 2; j++)
            if (2 * b + j < rows) keys[2 * b + j] = rt_random_u64(r.w[2 * j], r.w[2 * j + 1]);
    }
    rt_argsort_uint64(keys, 1, rows, 0, order, tmp);
    for (int64_t i = 0; i < rows; i++) memcpy(dst + i * row_bytes, src + order[i] * row_bytes, (size_t)row_bytes);
    return 0;
}

#endif
