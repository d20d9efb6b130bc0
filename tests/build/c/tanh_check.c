/* rt_tanh_float32 (rt_kernels.h: inline at AVX2 with FMA, libmvec's tanhf otherwise) against tanh in double, for one
 * ISA level (tests/build/test_exp_accuracy.py compiles this file once per -march): every 61st float32 bit pattern
 * through a vectorised loop and through scalar calls (the inline one: the same result either way), at most
 * MAX_ULPS of the correctly rounded result (ulps of the smallest denormal below it) and x's sign, and the special
 * cases exactly: NaN stays NaN, +-0 and denormals keep their sign, +-inf and large |x| give +-1. Prints "ok" and
 * the worst error, or the first failures; exit status 1 on any. */
#include "rt_kernels.h"
#include "ulp_check.h"

/* the inline version: vector and scalar calls give the same bits, within 1.5 ulp; libmvec's vector tanhf and
 * libm's scalar one differ (within 2.2 ulp of each other's reference) */
#if defined(__FMA__) && !defined(__AVX512F__)
#define RT_TANH_INLINE 1
#define MAX_ULPS 1.5
#else
#define RT_TANH_INLINE 0
#define MAX_ULPS 2.5
#endif
static double ulps(float x, float y) {
    const double ref = tanh((double)x);
    return ref == 0 ? (y == 0 ? 0 : 1e9) : ulps_of(ref, y);
}

static void expect(const char *what, float x, float got, float want) {
    const int same = (got != got && want != want) || (got == want && signbit(got) == signbit(want));
    if (!same && fails++ < 10) printf("tanh(%a) [%s]: %a, want %a\n", x, what, got, want);
}

int main(void) {
    static float xs[CHUNK], vec[CHUNK];
    double worst = 0;
    float worst_x = 0;
    uint64_t u = 0;
    for (int n; (n = next_chunk(&u, xs)) > 0;) {
#pragma omp simd
        for (int i = 0; i < n; i++) vec[i] = rt_tanh_float32(xs[i]);
        for (int i = 0; i < n; i++) {
            const float x = xs[i], scalar = rt_tanh_float32(x);
            if (x != x) {
                if (vec[i] == vec[i] || scalar == scalar) expect("NaN", x, vec[i], NAN);
                continue;
            }
#if RT_TANH_INLINE
            expect("vector == scalar", x, vec[i], scalar);
#endif
            for (int v = 0; v < 2; v++) {
                const float y = v ? vec[i] : scalar;
                if (signbit(y) != signbit(x) && fails++ < 10) printf("tanh(%a): %a has the wrong sign\n", x, y);
                const double err = ulps(x, y);
                if (err > worst) { worst = err; worst_x = x; }
                if (err > MAX_ULPS && fails++ < 10) printf("tanh(%a): %a, %.3f ulp\n", x, y, err);
            }
        }
    }
    const float special[][2] = {
        {0.0f, 0.0f}, {-0.0f, -0.0f}, {0x1p-149f, 0x1p-149f}, {-0x1p-140f, -0x1p-140f}, {INFINITY, 1.0f},
        {-INFINITY, -1.0f}, {10.0f, 1.0f}, {-25.0f, -1.0f}, {1e30f, 1.0f}, {-3e38f, -1.0f},
    };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        expect("special", special[i][0], rt_tanh_float32(special[i][0]), special[i][1]);
    expect("special", NAN, rt_tanh_float32(NAN), NAN);
    expect("special", -NAN, rt_tanh_float32(-NAN), NAN);
    return finish(worst, worst_x);
}
