/* The 2-D convolution kernels (rt_nn.h) against an integer reference, for one ISA level
 * (tests/build/test_gemm_isa.py compiles this file once per -march, the GEMM inlined or linked from the kernel
 * library's archive): the forward pass through its direct tiles (windows of at most RT_CONV_DIRECT_K values) and
 * through packed filters with windows read in place and im2col rows at the edges, strides 1-3, SAME and VALID,
 * windows larger than the input, filter counts under, at and over one and two vectors, batches, output columns of
 * more than RT_CONV_EDGE_ROWS rows, 1-3 threads; both gradients too. Operands are small integers, so float sums
 * are exact and every element must match; and with rounding sums, the gradients give the same bits call after
 * call. Prints "ok" or the first mismatches; exit status 1 on any. */
#include "rt_kernels.h"
#include "rt_nn.h"
#include <stdio.h>

static int fails = 0;

typedef struct { int64_t n, h, w, c, kh, kw, f, sh, sw; int same; } shape;

static int64_t at(const rt_window *g, const int64_t *x, int64_t b, int64_t ih, int64_t iw, int64_t c) {
    if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w) return 0;
    return x[((b * g->h + ih) * g->w + iw) * g->c + c];
}

#define CHECK_T(T, S) \
    static void check_##S(shape s, int threads) { \
        rt_window g; \
        if (rt_window_init(&g, s.n, s.h, s.w, s.c, s.kh, s.kw, s.f, s.sh, s.sw, s.same)) return; \
        const int64_t nx = g.n * g.h * g.w * g.c, nw = g.kh * g.kw * g.c * g.f, ny = g.n * g.oh * g.ow * g.f; \
        int64_t *xi = malloc(sizeof(int64_t) * nx), *wi = malloc(sizeof(int64_t) * nw); \
        int64_t *dyi = malloc(sizeof(int64_t) * ny); \
        T *x = malloc(sizeof(T) * nx), *w = malloc(sizeof(T) * nw), *y = malloc(sizeof(T) * ny); \
        T *dy = malloc(sizeof(T) * ny), *dx = malloc(sizeof(T) * nx), *dw = malloc(sizeof(T) * nw); \
        for (int64_t i = 0; i < nx; i++) x[i] = (T)(xi[i] = (i * 7 + 3) % 13 - 6); \
        for (int64_t i = 0; i < nw; i++) w[i] = (T)(wi[i] = (i * 5 + 1) % 11 - 5); \
        for (int64_t i = 0; i < ny; i++) dy[i] = (T)(dyi[i] = (i * 3 + 2) % 7 - 3); \
        if (rt_conv2d_##S(x, w, y, &g, threads) || rt_conv2d_backprop_input_##S(w, dy, dx, &g, threads) || \
            rt_conv2d_backprop_filter_##S(x, dy, dw, &g, threads)) { \
            printf(#S ": a kernel failed\n"); \
            fails++; \
        } \
        int64_t *dxr = calloc(nx, sizeof(int64_t)), *dwr = calloc(nw, sizeof(int64_t)); \
        int64_t wrong = 0; \
        for (int64_t b = 0; b < g.n; b++) \
            for (int64_t r = 0; r < g.oh; r++) \
                for (int64_t o = 0; o < g.ow; o++) \
                    for (int64_t f = 0; f < g.f; f++) { \
                        const int64_t yi = ((b * g.oh + r) * g.ow + o) * g.f + f; \
                        int64_t sum = 0; \
                        for (int64_t i = 0; i < g.kh; i++) \
                            for (int64_t j = 0; j < g.kw; j++) { \
                                const int64_t ih = r * g.sh + i - g.top, iw = o * g.sw + j - g.left; \
                                for (int64_t c = 0; c < g.c; c++) { \
                                    const int64_t wk = ((i * g.kw + j) * g.c + c) * g.f + f; \
                                    sum += at(&g, xi, b, ih, iw, c) * wi[wk]; \
                                    dwr[wk] += at(&g, xi, b, ih, iw, c) * dyi[yi]; \
                                    if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w) \
                                        dxr[((b * g.h + ih) * g.w + iw) * g.c + c] += wi[wk] * dyi[yi]; \
                                } \
                            } \
                        if ((T)sum != y[yi] && wrong++ < 3) \
                            printf(#S " forward: pixel (%lld, %lld, %lld) filter %lld: %g, not %lld\n", (long long)b, \
                                   (long long)r, (long long)o, (long long)f, (double)y[yi], (long long)sum); \
                    } \
        for (int64_t i = 0; i < nx; i++) \
            if ((T)dxr[i] != dx[i] && wrong++ < 3) printf(#S " input gradient %lld wrong\n", (long long)i); \
        for (int64_t i = 0; i < nw; i++) \
            if ((T)dwr[i] != dw[i] && wrong++ < 3) printf(#S " filter gradient %lld wrong\n", (long long)i); \
        if (wrong) { \
            printf("  in [%lld, %lld, %lld, %lld] * [%lld, %lld, %lld, %lld], strides %lld, %lld, %s, %d threads\n", \
                   (long long)s.n, (long long)s.h, (long long)s.w, (long long)s.c, (long long)s.kh, (long long)s.kw, \
                   (long long)s.c, (long long)s.f, (long long)s.sh, (long long)s.sw, s.same ? "SAME" : "VALID", \
                   threads); \
            fails++; \
        } \
        free(xi); free(wi); free(dyi); free(x); free(w); free(y); free(dy); free(dx); free(dw); free(dxr); free(dwr); \
    }

CHECK_T(float, float32)
CHECK_T(double, float64)

/* The gradients of float operands whose sums round, computed again: the same bits every time (the filter
 * gradient's threads sum their panels' products; with panels handed out as threads came free, 40 of 40 calls
 * differed from the first). */
static void check_deterministic(int threads) {
    rt_window g;
    rt_window_init(&g, 4, 24, 24, 32, 3, 3, 32, 1, 1, 1);
    const int64_t nx = g.n * g.h * g.w * g.c, nw = g.kh * g.kw * g.c * g.f, ny = g.n * g.oh * g.ow * g.f;
    float *x = malloc(sizeof(float) * nx), *dy = malloc(sizeof(float) * ny), *w = malloc(sizeof(float) * nw);
    float *dw = malloc(sizeof(float) * nw), *again = malloc(sizeof(float) * nw);
    float *dx = malloc(sizeof(float) * nx), *dx_again = malloc(sizeof(float) * nx);
    for (int64_t i = 0; i < nx; i++) x[i] = (float)((i * 7919) % 1000) * 0.00137f - 0.61f;
    for (int64_t i = 0; i < ny; i++) dy[i] = (float)((i * 104729) % 997) * 0.00211f - 1.03f;
    for (int64_t i = 0; i < nw; i++) w[i] = (float)((i * 31) % 101) * 0.0173f - 0.87f;
    rt_conv2d_backprop_filter_float32(x, dy, dw, &g, threads);
    rt_conv2d_backprop_input_float32(w, dy, dx, &g, threads);
    for (int run = 0; run < 8; run++) {
        rt_conv2d_backprop_filter_float32(x, dy, again, &g, threads);
        rt_conv2d_backprop_input_float32(w, dy, dx_again, &g, threads);
        if ((memcmp(dw, again, sizeof(float) * nw) || memcmp(dx, dx_again, sizeof(float) * nx)) && fails++ < 10)
            printf("the gradients changed from one call to the next (%d threads)\n", threads);
    }
    free(x); free(dy); free(w); free(dw); free(again); free(dx); free(dx_again);
}

int main(void) {
    (void)rt_interrupt;                         /* the Ctrl-C flag generated loops read */
    static const shape shapes[] = {
        {1, 12, 13, 3, 3, 3, 70, 1, 1, 1},     /* direct: a first layer's 27-value windows */
        {2, 9, 7, 1, 3, 3, 16, 2, 2, 1},
        {1, 12, 13, 8, 3, 3, 20, 1, 1, 1},     /* 72 values: packed filters, windows in place, edges */
        {2, 9, 11, 30, 3, 3, 100, 1, 1, 0},    /* VALID: no edges; 100 filters: a narrow last sliver */
        {1, 7, 70, 12, 5, 5, 33, 2, 2, 1},     /* two padded columns on each side, stride 2 */
        {3, 6, 6, 16, 3, 3, 7, 1, 1, 1},       /* fewer filters than a vector */
        {1, 70, 5, 10, 3, 3, 48, 1, 3, 1},     /* 70 output rows: an edge column in two chunks; stride 3 */
        {1, 4, 4, 20, 5, 5, 16, 1, 1, 1},      /* the window wider than the input: every pixel an edge */
        {2, 3, 3, 9, 3, 3, 64, 2, 2, 0},       /* one output pixel */
        {1, 5, 6, 7, 1, 9, 40, 1, 1, 1},       /* a 1x9 window */
        {1, 10, 10, 12, 3, 3, 32, 3, 1, 1},    /* stride 3 down the rows: some window rows in the padding */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int threads = 1; threads <= 3; threads++) {
            check_float32(shapes[i], threads);
            check_float64(shapes[i], threads);
        }
    for (int threads = 2; threads <= 3; threads++) check_deterministic(threads);
    if (fails) return 1;
    printf("ok\n");
    return 0;
}
