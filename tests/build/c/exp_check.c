/* rt_exp_float32 (rt_kernels.h, inline, vectorised in `#pragma omp simd` loops) against exp in double, for one
 * ISA level (tests/build/test_exp_accuracy.py compiles this file once per -march): every 61st float32 bit pattern
 * through a vectorised loop and through scalar calls, at most 1.05 ulp of the correctly rounded result (ulps of
 * the smallest denormal below it), and the special cases exactly: NaN stays NaN, +-inf, overflow to inf past
 * 88.7228, results rounding to 0 below -103.97, denormal results. Prints "ok" and the worst error, or the first
 * failures; exit status 1 on any. rt_exp_nonpositive_float32 (a softmax's exp) gives the same bits for x <= 0 and NaN,
 * vectorised too. */
#include "rt_kernels.h"
#include "ulp_check.h"

/* the error of y in ulps of exp(x) rounded to float32 (for results below FLT_MIN, ulps of the smallest denormal) */
static double ulps(float x, float y) {
    const double ref = exp((double)x);
    if (isinf((float)ref)) return isinf(y) && y > 0 ? 0 : 1e9;
    return ulps_of(ref, y);
}

static void expect(const char *what, float x, float got, float want) {
    const int same = (got != got && want != want) || got == want;
    if (!same && fails++ < 10) printf("exp(%a) [%s]: %a, want %a\n", x, what, got, want);
}

int main(void) {
    static float xs[CHUNK], vec[CHUNK], nonpositive[CHUNK];
    double worst = 0;
    float worst_x = 0;
    uint64_t u = 0;
    for (int n; (n = next_chunk(&u, xs)) > 0;) {
#pragma omp simd
        for (int i = 0; i < n; i++) vec[i] = rt_exp_float32(xs[i]);
#pragma omp simd
        for (int i = 0; i < n; i++) nonpositive[i] = rt_exp_nonpositive_float32(xs[i]);
        for (int i = 0; i < n; i++) {
            const float x = xs[i], scalar = rt_exp_float32(x);
            if (x != x) {
                expect("NaN, vectorised", x, vec[i], NAN);
                expect("NaN, scalar", x, scalar, NAN);
                expect("NaN, nonpositive", x, nonpositive[i], NAN);
                continue;
            }
            if (x <= 0) expect("nonpositive == exp", x, nonpositive[i], scalar);
            expect("vector == scalar", x, vec[i], scalar);
            const double err = ulps(x, scalar);
            if (err > worst) { worst = err; worst_x = x; }
            if (err > 1.05 && fails++ < 10) printf("exp(%a): %a, %.3f ulp\n", x, scalar, err);
        }
    }
    const float special[][2] = {
        {0.0f, 1.0f}, {-0.0f, 1.0f}, {1.0f, 0x1.5bf0a8p+1f}, {INFINITY, INFINITY}, {-INFINITY, 0.0f},
        {88.72f, 0x1.fe8c9p+127f}, {88.73f, INFINITY}, {1000.0f, INFINITY}, {-87.5f, 0x1.b2cafp-127f},
        {-100.0f, 0x1.bp-145f}, {-103.9f, 0x1p-149f}, {-104.0f, 0.0f}, {-1000.0f, 0.0f},
    };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        expect("special", special[i][0], rt_exp_float32(special[i][0]), special[i][1]);
    expect("special", NAN, rt_exp_float32(NAN), NAN);
    return finish(worst, worst_x);
}
