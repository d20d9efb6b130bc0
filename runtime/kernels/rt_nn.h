/* Neural-network kernels: 2-D convolution, its two gradients, max pooling and its gradient.
 *
 * Tensors are contiguous NHWC (inputs [n, h, w, c]), filters [kh, kw, c, f]. Padding follows
 * TensorFlow: VALID keeps whole windows; SAME gives ceil(size / stride) outputs and pads the excess,
 * the smaller half before (rt_window_init computes it once for every kernel here).
 *
 * Convolutions are GEMMs over panels of output pixels: a panel (about 8 MB, reused; never the
 * whole im2col matrix) holds, for each pixel of the panel, the kh * kw * c input values
 * its window sees, and one GEMM with the filters ([kh * kw * c, f] as stored) gives those pixels'
 * outputs; the filter gradient is the panels' transposes times the output gradient, the input
 * gradient the output gradient times the filters' transpose, added back window by window (col2im).
 * GEMMs go to the kernel library's blocked GEMM (rt_gemm.h; threads from OpenMP's one pool). Pooling is
 * a direct loop, parallel over (image, output row), vectorised over channels.
 */
#ifndef RT_NN_H
#define RT_NN_H

#include "rt_kernels.h"

typedef struct {
    int64_t n, h, w, c;          /* input */
    int64_t kh, kw, f;           /* window and output channels (pooling: f == c) */
    int64_t sh, sw;              /* strides */
    int64_t top, left;           /* padding before the first row / column */
    int64_t oh, ow;              /* output rows and columns */
} rt_window;

static inline int64_t rt_window_out(int64_t size, int64_t k, int64_t s, int same) {
    if (same) return (size + s - 1) / s;
    return size >= k ? (size - k) / s + 1 : 0;
}

/* Fill g from the input shape, window, strides and padding (same = 1 for SAME); 0, or -1 when a VALID
 * window does not fit. */
static inline int rt_window_init(rt_window *g, int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,
                                 int64_t f, int64_t sh, int64_t sw, int same) {
    g->n = n; g->h = h; g->w = w; g->c = c; g->kh = kh; g->kw = kw; g->f = f; g->sh = sh; g->sw = sw;
    g->oh = rt_window_out(h, kh, sh, same);
    g->ow = rt_window_out(w, kw, sw, same);
    g->top = g->left = 0;
    if (same) {
        int64_t ph = (g->oh - 1) * sh + kh - h, pw = (g->ow - 1) * sw + kw - w;
        g->top = ph > 0 ? ph / 2 : 0;
        g->left = pw > 0 ? pw / 2 : 0;
    }
    return (g->oh <= 0 || g->ow <= 0) ? -1 : 0;
}

/* ---- row-major GEMM: C[m, n] (+)= op(A)[m, k] op(B)[k, n], on the kernel library's blocked GEMM ------ */

#define RT_DEFINE_NN_GEMM(T, S) \
    static int rt_nn_gemm_##S(int ta, int tb, int64_t m, int64_t n, int64_t k, const T *a, int64_t lda, \
                              const T *b, int64_t ldb, int accumulate, T *c, int64_t ldc, int threads) { \
        if (m <= 0 || n <= 0) return 0; \
        if (!accumulate) return rt_gemm_run_##S(a, lda, b, ldb, c, ldc, m, k, n, ta, tb, threads); \
        T *part = (T *)malloc((size_t)(m * n) * sizeof(T)); \
        if (!part || rt_gemm_run_##S(a, lda, b, ldb, part, n, m, k, n, ta, tb, threads)) { free(part); return -1; } \
        for (int64_t i = 0; i < m; i++) { \
            T *restrict crow = c + i * ldc; \
            const T *restrict prow = part + i * n; \
            _Pragma("omp simd") \
            for (int64_t j = 0; j < n; j++) crow[j] += prow[j]; \
        } \
        free(part); \
        return 0; \
    }

RT_DEFINE_NN_GEMM(float, float32)
RT_DEFINE_NN_GEMM(double, float64)

/* ---- convolution ------------------------------------------------------------------------------ */

/* Output pixels per panel: a panel of im2col rows holds about RT_PANEL_BYTES (reused). Larger panels mean
 * fewer, larger GEMMs: fewer synchronisations of the GEMM's threads, which costs most on a busy machine. */
#define RT_PANEL_BYTES ((int64_t)8 << 20)

static inline int64_t rt_panel_rows(const rt_window *g, size_t itemsize) {
    int64_t k = g->kh * g->kw * g->c, rows = RT_PANEL_BYTES / (k * (int64_t)itemsize);
    int64_t total = g->n * g->oh * g->ow;
    if (rows < 32) rows = 32;
    return rows < total ? rows : total;
}

#define RT_DEFINE_CONV(T, S) \
    /* Rows [start, start + rows) of the im2col matrix: one row per output pixel, the kh * kw * c input \
     * values its window sees (zeros where it reaches into the padding). */ \
    static void rt_im2col_##S(const T *x, const rt_window *g, int64_t start, int64_t rows, T *panel) { \
        const int64_t c = g->c, k = g->kh * g->kw * c; \
        for (int64_t p = 0; p < rows; p++) { \
            const int64_t pixel = start + p, o = pixel % g->ow; \
            const int64_t r = (pixel / g->ow) % g->oh, b = pixel / (g->ow * g->oh); \
            const int64_t iw0 = o * g->sw - g->left; \
            T *row = panel + p * k; \
            for (int64_t i = 0; i < g->kh; i++) { \
                const int64_t ih = r * g->sh + i - g->top; \
                T *seg = row + i * g->kw * c; \
                if (ih < 0 || ih >= g->h) { memset(seg, 0, (size_t)(g->kw * c) * sizeof(T)); continue; } \
                const T *src = x + ((b * g->h + ih) * g->w) * c; \
                if (iw0 >= 0 && iw0 + g->kw <= g->w) {          /* the whole window row is inside */ \
                    memcpy(seg, src + iw0 * c, (size_t)(g->kw * c) * sizeof(T)); \
                    continue; \
                } \
                for (int64_t j = 0; j < g->kw; j++) { \
                    const int64_t iw = iw0 + j; \
                    if (iw < 0 || iw >= g->w) memset(seg + j * c, 0, (size_t)c * sizeof(T)); \
                    else memcpy(seg + j * c, src + iw * c, (size_t)c * sizeof(T)); \
                } \
            } \
        } \
    } \
    \
    /* The adjoint of rt_im2col: add the panel's rows back to the input positions they came from. */ \
    static void rt_col2im_##S(const T *panel, const rt_window *g, int64_t start, int64_t rows, T *dx) { \
        const int64_t c = g->c, k = g->kh * g->kw * c; \
        for (int64_t p = 0; p < rows; p++) { \
            const int64_t pixel = start + p, o = pixel % g->ow; \
            const int64_t r = (pixel / g->ow) % g->oh, b = pixel / (g->ow * g->oh); \
            const T *row = panel + p * k; \
            for (int64_t i = 0; i < g->kh; i++) { \
                const int64_t ih = r * g->sh + i - g->top; \
                if (ih < 0 || ih >= g->h) continue; \
                for (int64_t j = 0; j < g->kw; j++) { \
                    const int64_t iw = o * g->sw + j - g->left; \
                    if (iw < 0 || iw >= g->w) continue; \
                    T *restrict dst = dx + ((b * g->h + ih) * g->w + iw) * c; \
                    const T *restrict src = row + (i * g->kw + j) * c; \
                    _Pragma("omp simd") \
                    for (int64_t q = 0; q < c; q++) dst[q] += src[q]; \
                } \
            } \
        } \
    } \
    \
    /* y[n, oh, ow, f] = sum over (kh, kw, c) of x[n, oh*sh + kh - top, ow*sw + kw - left, c] * filt[kh, kw, c, f]: \
     * per panel of output pixels, y[pixels] = im2col(pixels) @ filt (filt is [kh*kw*c, f] as stored). */ \
    static int rt_conv2d_##S(const T *x, const T *filt, T *y, const rt_window *g, int threads) { \
        const int64_t k = g->kh * g->kw * g->c, total = g->n * g->oh * g->ow, step = rt_panel_rows(g, sizeof(T)); \
        T *panel = (T *)malloc((size_t)(step * k) * sizeof(T)); \
        if (!panel) return -1; \
        for (int64_t start = 0; start < total; start += step) { \
            const int64_t rows = total - start < step ? total - start : step; \
            rt_im2col_##S(x, g, start, rows, panel); \
            if (rt_nn_gemm_##S(0, 0, rows, g->f, k, panel, k, filt, g->f, 0, y + start * g->f, g->f, threads)) \
                { free(panel); return -1; } \
        } \
        free(panel); \
        return 0; \
    } \
    \
    /* dx = the adjoint of rt_conv2d with respect to x: col2im(dy[pixels] @ filt^T) */ \
    static int rt_conv2d_backprop_input_##S(const T *filt, const T *dy, T *dx, const rt_window *g, int threads) { \
        const int64_t k = g->kh * g->kw * g->c, total = g->n * g->oh * g->ow, step = rt_panel_rows(g, sizeof(T)); \
        T *panel = (T *)malloc((size_t)(step * k) * sizeof(T)); \
        if (!panel) return -1; \
        memset(dx, 0, (size_t)(g->n * g->h * g->w * g->c) * sizeof(T)); \
        for (int64_t start = 0; start < total; start += step) { \
            const int64_t rows = total - start < step ? total - start : step; \
            if (rt_nn_gemm_##S(0, 1, rows, k, g->f, dy + start * g->f, g->f, filt, g->f, 0, panel, k, threads)) \
                { free(panel); return -1; } \
            rt_col2im_##S(panel, g, start, rows, dx); \
        } \
        free(panel); \
        return 0; \
    } \
    \
    /* dfilt = the adjoint of rt_conv2d with respect to the filters: sum over panels of im2col^T @ dy[pixels] */ \
    static int rt_conv2d_backprop_filter_##S(const T *x, const T *dy, T *dfilt, const rt_window *g, int threads) { \
        const int64_t k = g->kh * g->kw * g->c, total = g->n * g->oh * g->ow, step = rt_panel_rows(g, sizeof(T)); \
        T *panel = (T *)malloc((size_t)(step * k) * sizeof(T)); \
        if (!panel) return -1; \
        for (int64_t start = 0; start < total; start += step) { \
            const int64_t rows = total - start < step ? total - start : step; \
            rt_im2col_##S(x, g, start, rows, panel); \
            if (rt_nn_gemm_##S(1, 0, k, g->f, rows, panel, k, dy + start * g->f, g->f, start > 0, dfilt, g->f, \
                                threads)) { free(panel); return -1; } \
        } \
        if (total == 0) memset(dfilt, 0, (size_t)(k * g->f) * sizeof(T)); \
        free(panel); \
        return 0; \
    }

RT_DEFINE_CONV(float, float32)
RT_DEFINE_CONV(double, float64)

/* ---- max pooling ------------------------------------------------------------------------------ */

#define RT_DEFINE_POOL(T, S) \
    /* y[n, oh, ow, c] = the maximum of the window (NaN if the window has one, as numpy's maximum) */ \
    static void rt_max_pool_##S(const T *x, T *y, const rt_window *g, int threads) { \
        const int64_t c = g->c; \
        const int parallel = threads > 1 && g->n * g->oh * g->ow * c >= RT_PARALLEL_MIN; \
        _Pragma("omp parallel for schedule(static) num_threads(threads) if(parallel)") \
        for (int64_t row = 0; row < g->n * g->oh; row++) { \
            const int64_t b = row / g->oh, r = row % g->oh; \
            for (int64_t o = 0; o < g->ow; o++) { \
                T *restrict out = y + (row * g->ow + o) * c; \
                int first = 1; \
                for (int64_t i = 0; i < g->kh; i++) { \
                    const int64_t ih = r * g->sh + i - g->top; \
                    if (ih < 0 || ih >= g->h) continue; \
                    for (int64_t j = 0; j < g->kw; j++) { \
                        const int64_t iw = o * g->sw + j - g->left; \
                        if (iw < 0 || iw >= g->w) continue; \
                        const T *restrict in = x + ((b * g->h + ih) * g->w + iw) * c; \
                        if (first) { memcpy(out, in, (size_t)c * sizeof(T)); first = 0; continue; } \
                        _Pragma("omp simd") \
                        for (int64_t k = 0; k < c; k++) out[k] = (in[k] > out[k] || in[k] != in[k]) ? in[k] : out[k]; \
                    } \
                } \
            } \
        } \
    } \
    \
    /* dx: each window's gradient goes to its first maximum (row-major in the window); windows may overlap, \
     * so threads split the channels. */ \
    static void rt_max_pool_grad_##S(const T *x, const T *y, const T *dy, T *dx, const rt_window *g, int threads) { \
        const int64_t c = g->c; \
        memset(dx, 0, (size_t)(g->n * g->h * g->w * c) * sizeof(T)); \
        const int parallel = threads > 1 && g->n * g->oh * g->ow * c >= RT_PARALLEL_MIN; \
        _Pragma("omp parallel for schedule(static) num_threads(threads) if(parallel)") \
        for (int64_t part = 0; part < g->n * c; part++) { \
            const int64_t b = part / c, k = part % c; \
            for (int64_t r = 0; r < g->oh; r++) \
                for (int64_t o = 0; o < g->ow; o++) { \
                    const int64_t at = ((b * g->oh + r) * g->ow + o) * c + k; \
                    const T best = y[at]; \
                    int done = 0; \
                    for (int64_t i = 0; i < g->kh && !done; i++) { \
                        const int64_t ih = r * g->sh + i - g->top; \
                        if (ih < 0 || ih >= g->h) continue; \
                        for (int64_t j = 0; j < g->kw; j++) { \
                            const int64_t iw = o * g->sw + j - g->left; \
                            if (iw < 0 || iw >= g->w) continue; \
                            const int64_t src = ((b * g->h + ih) * g->w + iw) * c + k; \
                            if (x[src] == best) { dx[src] += dy[at]; done = 1; break; } \
                        } \
                    } \
                } \
        } \
    }

RT_DEFINE_POOL(float, float32)
RT_DEFINE_POOL(double, float64)

#endif
