/* Neural-network kernels: 2-D convolution, its two gradients, max pooling and its gradient.
 *
 * Tensors are contiguous NHWC (inputs [n, h, w, c]), filters [kh, kw, c, f]. Padding follows
 * TensorFlow: VALID keeps whole windows; SAME gives ceil(size / stride) outputs and pads the excess,
 * the smaller half before (rt_window_init computes it once for every kernel here).
 *
 * Convolutions are GEMMs over panels of output pixels (windows of few values, a first layer's, convolve
 * directly: RT_CONV_DIRECT_K): a panel (never the whole im2col matrix) holds,
 * for each pixel of the panel, the kh * kw * c input values its window sees, and one GEMM with the
 * filters ([kh * kw * c, f] as stored) gives those pixels' outputs. The forward convolution and the
 * filter gradient give each thread panels of its own, small enough to stay in its core's L2 cache
 * between im2col writing them and the GEMM reading them (one parallel region, no synchronisation
 * inside; the filter gradient sums each thread's partial sums at the end). The input gradient at stride 1 is
 * the forward convolution of the output gradient with the filters turned around (rt_conv_input_as_forward); at
 * other strides (the output gradient times the filters' transpose, added back window by window: col2im, whose
 * windows overlap between panels) it runs panel after panel, each GEMM on all threads. GEMMs go to the kernel
 * library's blocked GEMM (rt_gemm.h; threads from OpenMP's one pool). Pooling (max and average) is a direct loop,
 * parallel over (image, output row), vectorised over channels; its gradient too (over images when the
 * windows of two output rows overlap).
 */
#ifndef RT_NN_H
#define RT_NN_H

#include "rt_kernels.h"
#ifdef _OPENMP
#include <omp.h>
#define RT_THREAD_NUM() omp_get_thread_num()
#else
#define RT_THREAD_NUM() 0
#endif

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

/* Output pixels per panel: a panel of im2col rows holds about `bytes`. A thread's own panels (forward,
 * filter gradient) stay in its L2 cache (RT_THREAD_PANEL_BYTES); the input gradient's panels are big
 * (RT_PANEL_BYTES): fewer, larger GEMMs, each on every thread. */
#define RT_PANEL_BYTES ((int64_t)8 << 20)
#define RT_THREAD_PANEL_BYTES ((int64_t)512 << 10)

static inline int64_t rt_panel_rows(const rt_window *g, size_t itemsize, int64_t bytes) {
    int64_t k = g->kh * g->kw * g->c, total = g->n * g->oh * g->ow;
    int64_t rows = k > 0 ? bytes / (k * (int64_t)itemsize) : total;
    rows = rows < 16 ? 16 : rows / 16 * 16;
    return rows < total ? rows : (total > 0 ? total : 1);
}

/* Windows of at most RT_CONV_DIRECT_K values (a first layer's 3x3 or 5x5 over 1 or 3 channels) and at most
 * RT_CONV_DIRECT_F filters convolve directly: a GEMM over im2col panels of 9 columns spent its time writing
 * the panels (memcpy of 12 bytes a window row) and starting micro-kernels that ran 9 steps. */
#ifdef RT_CONV_DIRECT_K_OVERRIDE
#define RT_CONV_DIRECT_K RT_CONV_DIRECT_K_OVERRIDE
#else
#define RT_CONV_DIRECT_K 64
#endif
#define RT_CONV_DIRECT_F 256
#define RT_CONV_CHUNKS 16           /* a direct filter gradient's fixed chunks of output rows, summed in order */
#define RT_CONV_EDGE_ROWS 64        /* pixels of an output column whose windows reach into the padding, at once */

static inline int rt_conv_direct(const rt_window *g) {
    return g->kh * g->kw * g->c <= RT_CONV_DIRECT_K && g->f <= RT_CONV_DIRECT_F;
}

/* The filter gradient goes directly when its blocks of registers (8 window values x 1 vector of filters) take
 * at most 4 passes over the pixels. */
static inline int rt_conv_direct_filter(const rt_window *g, size_t itemsize) {
    const int64_t lanes = RT_VEC_BYTES / (int64_t)itemsize, k = g->kh * g->kw * g->c;
    return rt_conv_direct(g) && (k + 7) / 8 * ((g->f + lanes - 1) / lanes) <= 4;
}

/* The output columns [*lo, *hi) whose windows lie inside the input sideways (the others reach into the padding). */
static inline void rt_conv_inside(const rt_window *g, int64_t *lo, int64_t *hi) {
    const int64_t last = g->w - g->kw + g->left;            /* o * sw - left >= 0 and o * sw - left + kw <= w */
    int64_t a = (g->left + g->sw - 1) / g->sw, b = last >= 0 ? last / g->sw + 1 : 0;
    a = a < g->ow ? a : g->ow;
    b = b < g->ow ? b : g->ow;
    *lo = a;
    *hi = b > a ? b : a;
}

/* A stride-1 input gradient is a forward convolution: dx[a, b] = sum over (i, j) of dy[a - i + top, b - j + left]
 * W[i, j]^T is, with i' = kh - 1 - i, the correlation of dy (rows and columns outside it zero) with the filters
 * turned around, W'[i', j', f, c] = W[kh - 1 - i', kw - 1 - j', c, f], padded kh - 1 - top rows before and
 * kw - 1 - left columns, giving the input's h x w pixels. *gi is that convolution's geometry; 0 for other strides
 * (their input gradient goes through col2im panels). As panels, a [16, 32, 32, 64] layer's input gradient ran each
 * GEMM on all threads, then added its panel back window by window on one. */
static inline int rt_conv_input_as_forward(const rt_window *g, rt_window *gi) {
    if (g->sh != 1 || g->sw != 1) return 0;
    gi->n = g->n; gi->h = g->oh; gi->w = g->ow; gi->c = g->f;
    gi->kh = g->kh; gi->kw = g->kw; gi->f = g->c; gi->sh = 1; gi->sw = 1;
    gi->top = g->kh - 1 - g->top; gi->left = g->kw - 1 - g->left;
    gi->oh = g->h; gi->ow = g->w;
    return 1;
}

/* Bytes of workspace a convolution kernel (kind 0: forward, 1: input gradient, 2: filter gradient) needs with
 * `threads` threads. */
static inline size_t rt_conv_workspace_bytes(const rt_window *g, int kind, int threads, size_t itemsize) {
    rt_window gi;
    if (kind == 1 && rt_conv_input_as_forward(g, &gi))       /* the turned filters, then the forward's workspace */
        return (size_t)(g->kh * g->kw * g->c * g->f) * itemsize + 64
               + rt_conv_workspace_bytes(&gi, 0, threads, itemsize);
    const int64_t k = g->kh * g->kw * g->c;
    const int64_t lanes = RT_VEC_BYTES / (int64_t)itemsize, fp = (g->f + 2 * lanes - 1) / (2 * lanes) * 2 * lanes;
    if (kind == 0 && rt_conv_direct(g)) return (size_t)(k * fp) * itemsize + 64;     /* the padded filters */
    if (kind == 2 && rt_conv_direct_filter(g, itemsize)) return (size_t)(RT_CONV_CHUNKS * k * g->f) * itemsize + 64;
    if (kind == 1) return (size_t)(rt_panel_rows(g, itemsize, RT_PANEL_BYTES) * k) * itemsize + 64;
    if (kind == 0) {                /* the packed filters, then each thread's im2col rows of an output row's edges */
        int64_t lo, hi;
        rt_conv_inside(g, &lo, &hi);
        const int64_t panel = lo + g->ow - hi > 0 ? RT_CONV_EDGE_ROWS * k : 0;
        return (size_t)(k * rt_gemm_packed_cols(g->f, lanes) + panel * (threads > 0 ? threads : 1)) * itemsize + 64;
    }
    int64_t per_thread = rt_panel_rows(g, itemsize, RT_THREAD_PANEL_BYTES) * k;
    if (kind == 2) per_thread += 2 * k * g->f;             /* a GEMM's result and the thread's running sum */
    return (size_t)(per_thread * (threads > 0 ? threads : 1)) * itemsize + 64;
}

/* The multiply-adds of a convolution (of each of its gradients too). */
static inline int64_t rt_conv_multiply_adds(const rt_window *g) {
    return g->n * g->oh * g->ow * g->kh * g->kw * g->c * g->f;
}

/* Threads worth starting for a convolution (kind 0: forward, 1: input gradient, 2: filter gradient) of this size:
 * each should get a few panels (a filter gradient's), or output rows (forward, and an input gradient run as one);
 * an input gradient through col2im panels runs each panel's GEMM on all of them. */
static inline int rt_conv_threads(const rt_window *g, int kind, int threads, size_t itemsize) {
    rt_window gi;
    if (kind == 1) return rt_conv_input_as_forward(g, &gi) ? rt_conv_threads(&gi, 0, threads, itemsize) : threads;
    const int64_t total = g->n * g->oh * g->ow, rows = rt_panel_rows(g, itemsize, RT_THREAD_PANEL_BYTES);
    const int64_t panels = kind == 0 || rt_conv_direct(g) ? g->n * g->oh : (total + rows - 1) / rows;
    /* direct convolutions run at a quarter of the GEMM's multiply-adds per second or less */
    if (rt_conv_multiply_adds(g) < (rt_conv_direct(g) ? RT_GEMM_PARALLEL_MIN / 4 : RT_GEMM_PARALLEL_MIN))
        return 1;
    return panels < threads ? (int)(panels > 0 ? panels : 1) : threads;
}

#define RT_DEFINE_CONV_DIRECT(T, S) \
    /* A tile of output pixels (MR consecutive pixels of an output row, all with their windows inside the input \
     * horizontally) times NV vectors of filters, in registers: for each window row i in [ki0, ki1) and each \
     * value t of it (kw * c contiguous values in NHWC), one vector of filters (wp: the packed filters, fp \
     * columns apart) and MR broadcasts of the pixels' values (rsx apart). The sum runs in the im2col GEMM's \
     * order (kh, kw, c), so the same bits. mr <= MR pixels and nr <= NV * VL columns are stored. */ \
    static inline __attribute__((always_inline)) void rt_conv_tile_##S( \
            const int MR, const int NV, const T *xr, int64_t rsx, int64_t rowstep, int64_t ki0, int64_t ki1, \
            int64_t kwc, const T *wp, int64_t fp, T *out, int64_t f, int mr, int nr) { \
        typedef rt_vec_##S vec; \
        enum { VL = RT_VEC_BYTES / (int)sizeof(T) }; \
        vec acc0[16], acc1[16]; \
        _Pragma("GCC unroll 16") \
        for (int p = 0; p < MR; p++) { acc0[p] = (vec){0}; acc1[p] = (vec){0}; } \
        for (int64_t i = ki0; i < ki1; i++) { \
            const T *restrict xi = xr + i * rowstep; \
            const T *restrict wi = wp + i * kwc * fp; \
            for (int64_t t = 0; t < kwc; t++) { \
                const vec b0 = *(const vec *)(wi + t * fp); \
                const vec b1 = NV == 2 ? *(const vec *)(wi + t * fp + VL) : b0; \
                _Pragma("GCC unroll 16") \
                for (int p = 0; p < MR; p++) { \
                    const T a = xi[p * rsx + t]; \
                    acc0[p] += a * b0; \
                    if (NV == 2) acc1[p] += a * b1; \
                } \
            } \
        } \
        if (mr == MR && nr == NV * VL) { \
            _Pragma("GCC unroll 16") \
            for (int p = 0; p < MR; p++) { \
                *(vec *)(out + p * f) = acc0[p]; \
                if (NV == 2) *(vec *)(out + p * f + VL) = acc1[p]; \
            } \
            return; \
        } \
        T tile[16][2 * VL] __attribute__((aligned(64))); \
        _Pragma("GCC unroll 16") \
        for (int p = 0; p < MR; p++) { *(vec *)&tile[p][0] = acc0[p]; *(vec *)&tile[p][VL] = acc1[p]; } \
        for (int p = 0; p < mr; p++) \
            for (int q = 0; q < nr; q++) out[p * f + q] = tile[p][q]; \
    } \
    \
    /* One output pixel whose window reaches into the padding: the taps inside, in the same order. */ \
    static RT_CONTRACT void rt_conv_edge_pixel_##S(const T *x, const T *wp, int64_t fp, T *out, const rt_window *g, \
                                                   int64_t b, int64_t r, int64_t o) { \
        const int64_t c = g->c, f = g->f; \
        T acc[RT_CONV_DIRECT_F]; \
        for (int64_t q = 0; q < f; q++) acc[q] = 0; \
        for (int64_t i = 0; i < g->kh; i++) { \
            const int64_t ih = r * g->sh + i - g->top; \
            if (ih < 0 || ih >= g->h) continue; \
            for (int64_t j = 0; j < g->kw; j++) { \
                const int64_t iw = o * g->sw + j - g->left; \
                if (iw < 0 || iw >= g->w) continue; \
                const T *xs = x + ((b * g->h + ih) * g->w + iw) * c; \
                for (int64_t ch = 0; ch < c; ch++) { \
                    const T v = xs[ch]; \
                    const T *restrict wr = wp + ((i * g->kw + j) * c + ch) * fp; \
                    _Pragma("omp simd") \
                    for (int64_t q = 0; q < f; q++) acc[q] += v * wr[q]; \
                } \
            } \
        } \
        for (int64_t q = 0; q < f; q++) out[q] = acc[q]; \
    } \
    \
    /* y = conv2d(x, filt) for rt_conv_direct windows (no im2col): the filters packed into `work` with rows \
     * padded to whole vectors (fp columns), then per output row (rows on threads) tiles of pixels whose \
     * windows are inside horizontally, and the pixels at the edges one by one. */ \
    static RT_FMA_KERNEL void rt_conv2d_direct_##S(const T *x, const T *filt, T *y, const rt_window *g, int threads, \
                                                   T *work) { \
        enum { VL = RT_VEC_BYTES / (int)sizeof(T) }; \
        const int64_t c = g->c, f = g->f, k = g->kh * g->kw * c, kwc = g->kw * c; \
        const int64_t fp = f <= VL ? VL : (f + 2 * VL - 1) / (2 * VL) * (2 * VL); \
        T *wp = (T *)(((uintptr_t)work + 63) & ~(uintptr_t)63); \
        for (int64_t t = 0; t < k; t++) \
            for (int64_t q = 0; q < fp; q++) wp[t * fp + q] = q < f ? filt[t * f + q] : 0; \
        /* pixels o in [oa, ob) have their whole window inside horizontally */ \
        const int64_t span = g->w - g->kw + g->left; \
        int64_t oa = (g->left + g->sw - 1) / g->sw, ob = span >= 0 ? span / g->sw + 1 : 0; \
        if (ob > g->ow) ob = g->ow; \
        if (oa > ob) oa = ob; \
        _Pragma("omp parallel for schedule(static) num_threads(threads) if(threads > 1)") \
        for (int64_t row = 0; row < g->n * g->oh; row++) { \
            const int64_t b = row / g->oh, r = row % g->oh, ih0 = r * g->sh - g->top; \
            const int64_t ki0 = ih0 < 0 ? -ih0 : 0, ki1 = ih0 + g->kh > g->h ? g->h - ih0 : g->kh; \
            T *yrow = y + row * g->ow * f; \
            for (int64_t o = 0; o < g->ow; o = o + 1 == oa ? ob : o + 1) \
                if (o < oa || o >= ob) rt_conv_edge_pixel_##S(x, wp, fp, yrow + o * f, g, b, r, o); \
            if (oa == ob || ki0 >= ki1) { \
                for (int64_t o = oa; o < ob; o++) rt_conv_edge_pixel_##S(x, wp, fp, yrow + o * f, g, b, r, o); \
                continue; \
            } \
            /* window row ki0 of pixel oa, and the filters from row ki0 */ \
            const T *xr = x + ((b * g->h + ih0 + ki0) * g->w + oa * g->sw - g->left) * c; \
            const T *wk = wp + ki0 * kwc * fp; \
            const int64_t rsx = g->sw * c, rowstep = g->w * c, kn = ki1 - ki0; \
            for (int64_t f0 = 0; f0 < f; f0 += f <= VL ? VL : 2 * VL) { \
                const int nr = (int)(f - f0 < (f <= VL ? VL : 2 * VL) ? f - f0 : (f <= VL ? VL : 2 * VL)); \
                int64_t o = oa; \
                if (f <= VL) { \
                    for (; o + 16 <= ob; o += 16) \
                        rt_conv_tile_##S(16, 1, xr + (o - oa) * rsx, rsx, rowstep, 0, kn, kwc, wk + f0, fp, \
                                         yrow + o * f + f0, f, 16, nr); \
                } else { \
                    for (; o + 8 <= ob; o += 8) \
                        rt_conv_tile_##S(8, 2, xr + (o - oa) * rsx, rsx, rowstep, 0, kn, kwc, wk + f0, fp, \
                                         yrow + o * f + f0, f, 8, nr); \
                } \
                for (; o < ob; o++) \
                    rt_conv_tile_##S(1, f <= VL ? 1 : 2, xr + (o - oa) * rsx, rsx, rowstep, 0, kn, kwc, wk + f0, \
                                     fp, yrow + o * f + f0, f, 1, nr); \
            } \
        } \
    } \
    \
    /* dfilt for rt_conv_direct_filter windows: RT_CONV_CHUNKS fixed chunks of output rows (on threads) each sum, \
     * into their own [k, f] partial in `work`, x's window values times dy's rows: per block of up to 8 window \
     * values and one vector of filters, 8 accumulators in registers while the chunk's pixels go by (a window \
     * reaching into the padding takes its values one by one). The partials are added in chunk order (the same \
     * bits on any number of threads). */ \
    static RT_FMA_KERNEL void rt_conv2d_filter_direct_##S(const T *x, const T *dy, T *dfilt, const rt_window *g, \
                                                          int threads, T *work) { \
        typedef rt_vec_##S vec; \
        enum { VL = RT_VEC_BYTES / (int)sizeof(T), TB = 8 }; \
        const int64_t c = g->c, f = g->f, k = g->kh * g->kw * c, kwc = g->kw * c, kf = k * f, rows = g->n * g->oh; \
        T *base = (T *)(((uintptr_t)work + 63) & ~(uintptr_t)63); \
        _Pragma("omp parallel for schedule(static) num_threads(threads) if(threads > 1)") \
        for (int64_t part = 0; part < RT_CONV_CHUNKS; part++) { \
            T *restrict sum = base + part * kf; \
            const int64_t row0 = rows * part / RT_CONV_CHUNKS, row1 = rows * (part + 1) / RT_CONV_CHUNKS; \
            for (int64_t f0 = 0; f0 < f; f0 += VL) { \
                const int nr = (int)(f - f0 < VL ? f - f0 : VL); \
                for (int64_t t0 = 0; t0 < k; t0 += TB) { \
                    const int tb = (int)(k - t0 < TB ? k - t0 : TB); \
                    int64_t ti[TB], tj[TB], toff[TB]; \
                    for (int u = 0; u < TB; u++) {       /* window row, column and offset of each value */ \
                        const int64_t t = t0 + (u < tb ? u : 0), jc = t % kwc; \
                        ti[u] = t / kwc; tj[u] = jc / c; toff[u] = ti[u] * g->w * c + jc; \
                    } \
                    vec acc[TB]; \
                    _Pragma("GCC unroll 8") \
                    for (int u = 0; u < TB; u++) acc[u] = (vec){0}; \
                    for (int64_t row = row0; row < row1; row++) { \
                        const int64_t b = row / g->oh, r = row % g->oh, ih0 = r * g->sh - g->top; \
                        for (int64_t o = 0; o < g->ow; o++) { \
                            const T *d = dy + (row * g->ow + o) * f + f0; \
                            T lanes[VL] __attribute__((aligned(64))); \
                            vec dv; \
                            if (nr == VL) dv = *(const vec *)d; \
                            else { \
                                for (int q = 0; q < VL; q++) lanes[q] = q < nr ? d[q] : 0; \
                                dv = *(const vec *)lanes; \
                            } \
                            const int64_t iw0 = o * g->sw - g->left; \
                            const int64_t at = ((b * g->h + ih0) * g->w + iw0) * c;  /* an index, maybe outside */ \
                            const int inside = ih0 >= 0 && ih0 + g->kh <= g->h && iw0 >= 0 && iw0 + g->kw <= g->w; \
                            _Pragma("GCC unroll 8") \
                            for (int u = 0; u < TB; u++) { \
                                if (u >= tb) break; \
                                T v; \
                                if (inside) v = x[at + toff[u]]; \
                                else { \
                                    const int64_t ih = ih0 + ti[u], iw = iw0 + tj[u]; \
                                    v = ih >= 0 && ih < g->h && iw >= 0 && iw < g->w ? x[at + toff[u]] : 0; \
                                } \
                                acc[u] += v * dv; \
                            } \
                        } \
                    } \
                    for (int u = 0; u < tb; u++) { \
                        T tile[VL] __attribute__((aligned(64))); \
                        *(vec *)tile = acc[u]; \
                        for (int q = 0; q < nr; q++) sum[(t0 + u) * f + f0 + q] = tile[q]; \
                    } \
                } \
            } \
        } \
        memcpy(dfilt, base, (size_t)kf * sizeof(T)); \
        for (int64_t part = 1; part < RT_CONV_CHUNKS; part++) { \
            const T *restrict sum = base + part * kf; \
            _Pragma("omp simd") \
            for (int64_t q = 0; q < kf; q++) dfilt[q] += sum[q]; \
        } \
    }

RT_DEFINE_CONV_DIRECT(float, float32)
RT_DEFINE_CONV_DIRECT(double, float64)

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
    /* y[n, oh, ow, f] = sum over (kh, kw, c) of x[n, oh*sh + kh - top, ow*sw + kw - left, c] * filt[kh, kw, c, f], \
     * with the filters' window rows packed once (rt_gemm_prepack_b) at the start of `work` \
     * (rt_conv_workspace_bytes). The pixels whose windows lie inside the input sideways go an output row at a \
     * time (threads take rows in turn): for each window row i inside the input, the product of the pixels' i-th \
     * window rows (kw * c values each, contiguous in NHWC, sw * c apart: a matrix read where it is) and the \
     * filters' i-th rows. The others (windows reaching into the padding sideways) go an output column at a time, \
     * RT_CONV_EDGE_ROWS pixels of it after another: their im2col rows (zeros in the padding) in the thread's part \
     * of `work`, the products written ow * f apart. */ \
    static int rt_conv2d_ws_##S(const T *x, const T *filt, T *y, const rt_window *g, int threads, T *work) { \
        if (rt_conv_direct(g)) { rt_conv2d_direct_##S(x, filt, y, g, threads, work); return 0; } \
        const int64_t kwc = g->kw * g->c, k = g->kh * kwc, f = g->f, np = rt_gemm_packed_n_##S(f); \
        const int64_t rows = g->n * g->oh; \
        int64_t lo, hi; \
        rt_conv_inside(g, &lo, &hi); \
        const int64_t chunks = (rows + RT_CONV_EDGE_ROWS - 1) / RT_CONV_EDGE_ROWS, edges = (lo + g->ow - hi) * chunks; \
        T *packed = (T *)(((uintptr_t)work + 63) & ~(uintptr_t)63), *panels = packed + k * np; \
        for (int64_t i = 0; i < g->kh; i++) \
            rt_gemm_prepack_b_##S(filt + i * kwc * f, f, 0, kwc, f, packed + i * kwc * np); \
        _Pragma("omp parallel num_threads(threads) if(threads > 1)") \
        { \
            _Pragma("omp for schedule(dynamic, 1) nowait") \
            for (int64_t row = 0; row < rows; row++) { \
                const int64_t b = row / g->oh, r = row % g->oh; \
                T *out = y + (row * g->ow + lo) * f; \
                int first = 1; \
                for (int64_t i = 0; i < g->kh && hi > lo; i++) { \
                    const int64_t ih = r * g->sh + i - g->top; \
                    if (ih < 0 || ih >= g->h) continue;                /* a window row in the padding */ \
                    rt_gemm_block_prepacked_##S(x + ((b * g->h + ih) * g->w + lo * g->sw - g->left) * g->c, \
                                                g->sw * g->c, packed + i * kwc * np, out, f, hi - lo, kwc, f, !first); \
                    first = 0; \
                } \
                if (first && hi > lo) memset(out, 0, (size_t)((hi - lo) * f) * sizeof(T)); \
            } \
            _Pragma("omp for schedule(dynamic, 1)") \
            for (int64_t task = 0; task < edges; task++) { \
                const int64_t e = task / chunks, o = e < lo ? e : hi + (e - lo); \
                const int64_t row0 = task % chunks * RT_CONV_EDGE_ROWS; \
                const int64_t count = rows - row0 < RT_CONV_EDGE_ROWS ? rows - row0 : RT_CONV_EDGE_ROWS; \
                T *panel = panels + (int64_t)RT_THREAD_NUM() * RT_CONV_EDGE_ROWS * k; \
                for (int64_t p = 0; p < count; p++) rt_im2col_##S(x, g, (row0 + p) * g->ow + o, 1, panel + p * k); \
                for (int64_t i = 0; i < g->kh; i++) \
                    rt_gemm_block_prepacked_##S(panel + i * kwc, k, packed + i * kwc * np, \
                                                y + (row0 * g->ow + o) * f, g->ow * f, count, kwc, f, i > 0); \
            } \
        } \
        return 0; \
    } \
    \
    /* dx = the adjoint of rt_conv2d with respect to x: col2im(dy[pixels] @ filt^T), panel after panel. */ \
    static int rt_conv2d_backprop_input_ws_##S(const T *filt, const T *dy, T *dx, const rt_window *g, int threads, \
                                               T *panel) { \
        rt_window gi; \
        if (rt_conv_input_as_forward(g, &gi)) { \
            T *turned = (T *)(((uintptr_t)panel + 63) & ~(uintptr_t)63); \
            const int64_t c = g->c, f = g->f; \
            for (int64_t i = 0; i < g->kh; i++) \
                for (int64_t j = 0; j < g->kw; j++) { \
                    const T *src = filt + ((g->kh - 1 - i) * g->kw + (g->kw - 1 - j)) * c * f; \
                    T *dst = turned + (i * g->kw + j) * f * c; \
                    for (int64_t q = 0; q < f; q++) \
                        for (int64_t p = 0; p < c; p++) dst[q * c + p] = src[p * f + q]; \
                } \
            return rt_conv2d_ws_##S(dy, turned, dx, &gi, threads, turned + g->kh * g->kw * c * f); \
        } \
        const int64_t k = g->kh * g->kw * g->c, total = g->n * g->oh * g->ow; \
        const int64_t step = rt_panel_rows(g, sizeof(T), RT_PANEL_BYTES); \
        memset(dx, 0, (size_t)(g->n * g->h * g->w * g->c) * sizeof(T)); \
        for (int64_t start = 0; start < total; start += step) { \
            const int64_t rows = total - start < step ? total - start : step; \
            if (rt_nn_gemm_##S(0, 1, rows, k, g->f, dy + start * g->f, g->f, filt, g->f, 0, panel, k, threads)) \
                return -1; \
            rt_col2im_##S(panel, g, start, rows, dx); \
        } \
        return 0; \
    } \
    \
    /* dfilt = the adjoint of rt_conv2d with respect to the filters: the sum over panels of im2col^T @ dy[pixels]; \
     * each thread sums its panels' products, then the threads' sums are added. */ \
    static int rt_conv2d_backprop_filter_ws_##S(const T *x, const T *dy, T *dfilt, const rt_window *g, int threads, \
                                                T *work) { \
        if (rt_conv_direct_filter(g, sizeof(T))) { \
            rt_conv2d_filter_direct_##S(x, dy, dfilt, g, threads, work); \
            return 0; \
        } \
        const int64_t k = g->kh * g->kw * g->c, kf = k * g->f, total = g->n * g->oh * g->ow; \
        const int64_t step = rt_panel_rows(g, sizeof(T), RT_THREAD_PANEL_BYTES), panels = (total + step - 1) / step; \
        const int64_t each = step * k + 2 * kf; \
        int used = threads > 1 && panels > 1 ? threads : 1, rc = 0; \
        for (int t = 0; t < used; t++) memset(work + t * each + step * k + kf, 0, (size_t)kf * sizeof(T)); \
        _Pragma("omp parallel for schedule(static) num_threads(used) if(used > 1) reduction(|:rc)") \
        for (int64_t part = 0; part < panels; part++) { \
            T *panel = work + (int64_t)RT_THREAD_NUM() * each, *product = panel + step * k, *sum = product + kf; \
            const int64_t start = part * step, rows = total - start < step ? total - start : step; \
            rt_im2col_##S(x, g, start, rows, panel); \
            rc |= rt_nn_gemm_##S(1, 0, k, g->f, rows, panel, k, dy + start * g->f, g->f, 0, product, g->f, 1); \
            _Pragma("omp simd") \
            for (int64_t q = 0; q < kf; q++) sum[q] += product[q]; \
        } \
        memcpy(dfilt, work + step * k + kf, (size_t)kf * sizeof(T)); \
        for (int t = 1; t < used; t++) { \
            const T *sum = work + t * each + step * k + kf; \
            _Pragma("omp simd") \
            for (int64_t q = 0; q < kf; q++) dfilt[q] += sum[q]; \
        } \
        return rc ? -1 : 0; \
    } \
    \
    /* The same with a workspace of their own (the generic executor's entry points). */ \
    static int rt_conv2d_run_plain_##S(int kind, const T *a, const T *b, T *out, const rt_window *g, int threads) { \
        threads = rt_conv_threads(g, kind, threads, sizeof(T)); \
        T *work = (T *)malloc(rt_conv_workspace_bytes(g, kind, threads, sizeof(T))); \
        int rc = -1; \
        if (!work) return -1; \
        if (kind == 0) rc = rt_conv2d_ws_##S(a, b, out, g, threads, work); \
        else if (kind == 1) rc = rt_conv2d_backprop_input_ws_##S(a, b, out, g, threads, work); \
        else rc = rt_conv2d_backprop_filter_ws_##S(a, b, out, g, threads, work); \
        free(work); \
        return rc; \
    } \
    static int rt_conv2d_##S(const T *x, const T *filt, T *y, const rt_window *g, int threads) { \
        return rt_conv2d_run_plain_##S(0, x, filt, y, g, threads); \
    } \
    static int rt_conv2d_backprop_input_##S(const T *filt, const T *dy, T *dx, const rt_window *g, int threads) { \
        return rt_conv2d_run_plain_##S(1, filt, dy, dx, g, threads); \
    } \
    static int rt_conv2d_backprop_filter_##S(const T *x, const T *dy, T *dfilt, const rt_window *g, int threads) { \
        return rt_conv2d_run_plain_##S(2, x, dy, dfilt, g, threads); \
    }

RT_DEFINE_CONV(float, float32)
RT_DEFINE_CONV(double, float64)

/* ---- max pooling ------------------------------------------------------------------------------ */

/* Pooling splits its work into units that write disjoint parts of the output (and of dx): output rows when
 * the windows of two output rows share no input row (stride >= window), else whole images. */
static inline int64_t rt_pool_units(const rt_window *g) {
    return g->sh >= g->kh ? g->n * g->oh : g->n;
}

/* Input rows [*r0, *r1) of image *b that unit u of rt_pool_units owns: its windows' rows and the rows up to
 * the next unit's (so that the units' rows cover every input row once), and its output rows [*o0, *o1). */
static inline void rt_pool_unit(const rt_window *g, int64_t u, int64_t *b, int64_t *o0, int64_t *o1, int64_t *r0,
                                int64_t *r1) {
    if (g->sh < g->kh) {
        *b = u; *o0 = 0; *o1 = g->oh; *r0 = 0; *r1 = g->h;
        return;
    }
    const int64_t r = u % g->oh;
    *b = u / g->oh; *o0 = r; *o1 = r + 1;
    *r0 = r == 0 ? 0 : r * g->sh - g->top;
    *r1 = r == g->oh - 1 ? g->h : (r + 1) * g->sh - g->top;
    if (*r0 < 0) *r0 = 0;
    if (*r1 > g->h) *r1 = g->h;
    if (*r1 < *r0) *r1 = *r0;
}

/* The input rows [*h0, *h1) and columns [*w0, *w1) that output (r, o)'s window covers (padding left out). */
static inline void rt_window_span(const rt_window *g, int64_t r, int64_t o, int64_t *h0, int64_t *h1, int64_t *w0,
                                  int64_t *w1) {
    const int64_t top = r * g->sh - g->top, left = o * g->sw - g->left;
    *h0 = top > 0 ? top : 0;
    *h1 = top + g->kh < g->h ? top + g->kh : g->h;
    *w0 = left > 0 ? left : 0;
    *w1 = left + g->kw < g->w ? left + g->kw : g->w;
}

#define RT_POOL_BLOCK 64          /* channels whose "already taken" flags a gradient keeps at once */

#define RT_DEFINE_POOL(T, S) \
    /* y[n, oh, ow, c] = the maximum of the window (NaN if the window has one, as numpy's maximum), vectorised \
     * over channels, output rows in parallel. */ \
    static void rt_max_pool_##S(const T *x, T *y, const rt_window *g, int threads) { \
        const int64_t c = g->c; \
        const int parallel = threads > 1 && g->n * g->h * g->w * c >= RT_PARALLEL_MIN; \
        _Pragma("omp parallel for schedule(static) num_threads(threads) if(parallel)") \
        for (int64_t row = 0; row < g->n * g->oh; row++) { \
            const int64_t b = row / g->oh, r = row % g->oh; \
            for (int64_t o = 0; o < g->ow; o++) { \
                T *restrict out = y + (row * g->ow + o) * c; \
                int first = 1; \
                int64_t h0, h1, w0, w1; \
                rt_window_span(g, r, o, &h0, &h1, &w0, &w1); \
                for (int64_t ih = h0; ih < h1; ih++) { \
                    for (int64_t iw = w0; iw < w1; iw++) { \
                        const T *restrict in = x + ((b * g->h + ih) * g->w + iw) * c; \
                        if (first) { \
                            _Pragma("omp simd") \
                            for (int64_t k = 0; k < c; k++) out[k] = in[k]; \
                            first = 0; \
                            continue; \
                        } \
                        _Pragma("omp simd") \
                        for (int64_t k = 0; k < c; k++) out[k] = (in[k] > out[k] || in[k] != in[k]) ? in[k] : out[k]; \
                    } \
                } \
            } \
        } \
    } \
    \
    /* dx: each window's gradient goes to its first maximum (row-major in the window), vectorised over channels \
     * (a flag per channel says its maximum was taken). Units (rt_pool_units) zero their input rows, then add \
     * their windows' gradients: windows overlapping inside a unit add in order, units never share a row. */ \
    static void rt_max_pool_grad_##S(const T *x, const T *y, const T *dy, T *dx, const rt_window *g, int threads) { \
        const int64_t c = g->c, units = rt_pool_units(g); \
        const int parallel = threads > 1 && units > 1 && g->n * g->h * g->w * c >= RT_PARALLEL_MIN; \
        _Pragma("omp parallel for schedule(static) num_threads(threads) if(parallel)") \
        for (int64_t u = 0; u < units; u++) { \
            int64_t b, o0, o1, r0, r1; \
            rt_pool_unit(g, u, &b, &o0, &o1, &r0, &r1); \
            memset(dx + (b * g->h + r0) * g->w * c, 0, (size_t)((r1 - r0) * g->w * c) * sizeof(T)); \
            for (int64_t r = o0; r < o1; r++) \
                for (int64_t o = 0; o < g->ow; o++) { \
                    const int64_t at = ((b * g->oh + r) * g->ow + o) * c; \
                    for (int64_t k0 = 0; k0 < c; k0 += RT_POOL_BLOCK) { \
                        const int64_t kn = c - k0 < RT_POOL_BLOCK ? c - k0 : RT_POOL_BLOCK; \
                        const T *restrict best = y + at + k0, *restrict grad = dy + at + k0; \
                        int taken[RT_POOL_BLOCK] = {0}; \
                        int64_t h0, h1, w0, w1; \
                        rt_window_span(g, r, o, &h0, &h1, &w0, &w1); \
                        for (int64_t ih = h0; ih < h1; ih++) { \
                            for (int64_t iw = w0; iw < w1; iw++) { \
                                const int64_t src = ((b * g->h + ih) * g->w + iw) * c + k0; \
                                const T *restrict xs = x + src; \
                                T *restrict out = dx + src; \
                                _Pragma("omp simd") \
                                for (int64_t k = 0; k < kn; k++) { \
                                    const int hit = (xs[k] == best[k]) & (taken[k] == 0); \
                                    const T g = grad[k]; \
                                    out[k] += hit ? g : (T)0; \
                                    taken[k] |= hit; \
                                } \
                            } \
                        } \
                    } \
                } \
        } \
    } \
    \
    /* The adjoint of rt_max_pool_grad: each output takes ddx at its window's first maximum (0 if none). */ \
    static void rt_max_pool_grad_grad_##S(const T *x, const T *y, const T *ddx, T *out, const rt_window *g, \
                                          int threads) { \
        const int64_t c = g->c; \
        const int parallel = threads > 1 && g->n * g->h * g->w * c >= RT_PARALLEL_MIN; \
        _Pragma("omp parallel for schedule(static) num_threads(threads) if(parallel)") \
        for (int64_t row = 0; row < g->n * g->oh; row++) { \
            const int64_t b = row / g->oh, r = row % g->oh; \
            for (int64_t o = 0; o < g->ow; o++) { \
                const int64_t at = (row * g->ow + o) * c; \
                for (int64_t k0 = 0; k0 < c; k0 += RT_POOL_BLOCK) { \
                    const int64_t kn = c - k0 < RT_POOL_BLOCK ? c - k0 : RT_POOL_BLOCK; \
                    const T *restrict best = y + at + k0; \
                    T *restrict value = out + at + k0; \
                    int taken[RT_POOL_BLOCK] = {0}; \
                    _Pragma("omp simd") \
                    for (int64_t k = 0; k < kn; k++) value[k] = 0; \
                    int64_t h0, h1, w0, w1; \
                    rt_window_span(g, r, o, &h0, &h1, &w0, &w1); \
                    for (int64_t ih = h0; ih < h1; ih++) { \
                        for (int64_t iw = w0; iw < w1; iw++) { \
                            const int64_t src = ((b * g->h + ih) * g->w + iw) * c + k0; \
                            const T *restrict xs = x + src, *restrict grads = ddx + src; \
                            _Pragma("omp simd") \
                            for (int64_t k = 0; k < kn; k++) { \
                                const int hit = (xs[k] == best[k]) & (taken[k] == 0); \
                                const T g = grads[k]; \
                                value[k] = hit ? g : value[k]; \
                                taken[k] |= hit; \
                            } \
                        } \
                    } \
                } \
            } \
        } \
    }

/* Average pooling: the window's real elements (the padding of SAME not counted) summed in row-major window
 * order and divided by their count, vectorised over channels, output rows in parallel; the gradient gives each
 * window's element dy / count, by rt_pool_units as the max pool's does. A window that does not fit a VALID
 * input leaves no output (and a zero gradient). */
#define RT_DEFINE_AVG_POOL(T, S) \
    static void rt_avg_pool_##S(const T *x, T *y, const rt_window *g, int threads) { \
        const int64_t c = g->c; \
        const int parallel = threads > 1 && g->n * g->h * g->w * c >= RT_PARALLEL_MIN; \
        _Pragma("omp parallel for schedule(static) num_threads(threads) if(parallel)") \
        for (int64_t row = 0; row < g->n * g->oh; row++) { \
            const int64_t b = row / g->oh, r = row % g->oh; \
            for (int64_t o = 0; o < g->ow; o++) { \
                T *restrict out = y + (row * g->ow + o) * c; \
                _Pragma("omp simd") \
                for (int64_t k = 0; k < c; k++) out[k] = 0; \
                int64_t h0, h1, w0, w1; \
                rt_window_span(g, r, o, &h0, &h1, &w0, &w1); \
                for (int64_t ih = h0; ih < h1; ih++) { \
                    for (int64_t iw = w0; iw < w1; iw++) { \
                        const T *restrict in = x + ((b * g->h + ih) * g->w + iw) * c; \
                        _Pragma("omp simd") \
                        for (int64_t k = 0; k < c; k++) out[k] += in[k]; \
                    } \
                } \
                const T n = (T)((h1 - h0) * (w1 - w0)); \
                _Pragma("omp simd") \
                for (int64_t k = 0; k < c; k++) out[k] = out[k] / n; \
            } \
        } \
    } \
    \
    static void rt_avg_pool_grad_##S(const T *x, const T *dy, T *dx, const rt_window *g, int threads) { \
        const int64_t c = g->c, units = g->oh > 0 && g->ow > 0 ? rt_pool_units(g) : 0; \
        (void)x; \
        if (units == 0) { \
            memset(dx, 0, (size_t)(g->n * g->h * g->w * c) * sizeof(T)); \
            return; \
        } \
        const int parallel = threads > 1 && units > 1 && g->n * g->h * g->w * c >= RT_PARALLEL_MIN; \
        _Pragma("omp parallel for schedule(static) num_threads(threads) if(parallel)") \
        for (int64_t u = 0; u < units; u++) { \
            int64_t b, o0, o1, r0, r1; \
            rt_pool_unit(g, u, &b, &o0, &o1, &r0, &r1); \
            memset(dx + (b * g->h + r0) * g->w * c, 0, (size_t)((r1 - r0) * g->w * c) * sizeof(T)); \
            for (int64_t r = o0; r < o1; r++) \
                for (int64_t o = 0; o < g->ow; o++) { \
                    const T *restrict grad = dy + ((b * g->oh + r) * g->ow + o) * c; \
                    int64_t h0, h1, w0, w1; \
                    rt_window_span(g, r, o, &h0, &h1, &w0, &w1); \
                    const T n = (T)((h1 - h0) * (w1 - w0)); \
                    for (int64_t ih = h0; ih < h1; ih++) { \
                        for (int64_t iw = w0; iw < w1; iw++) { \
                            T *restrict out = dx + ((b * g->h + ih) * g->w + iw) * c; \
                            _Pragma("omp simd") \
                            for (int64_t k = 0; k < c; k++) out[k] += grad[k] / n; \
                        } \
                    } \
                } \
        } \
    }

RT_DEFINE_POOL(float, float32)
RT_DEFINE_POOL(double, float64)
RT_DEFINE_AVG_POOL(float, float32)
RT_DEFINE_AVG_POOL(double, float64)

/* ---- entry points of generated code ---------------------------------------------------------------
 * The geometry comes from rt_window_init (the generated code checks its result and the operands' shapes);
 * threads from ctx (one pool: OpenMP's), and the im2col panel from the call's arena, so a big panel is a
 * block of the caching allocator reused call after call. They return 0, or -1 with ctx->msg set. */

#define RT_DEFINE_NN_ENTRIES(T, S) \
    static int rt_conv2d_run_##S(rt_ctx *ctx, int kind, const T *a, const T *b, T *out, const rt_window *g) { \
        const int wanted = rt_region_threads(ctx, rt_conv_multiply_adds(g)); \
        const int threads = rt_conv_threads(g, kind, wanted, sizeof(T)); \
        T *work = (T *)rt_alloc(ctx, rt_conv_workspace_bytes(g, kind, threads, sizeof(T))); \
        int rc = -1; \
        if (!work) return rt_fail(ctx, "out of memory for the convolution's panels"); \
        if (kind == 0) rc = rt_conv2d_ws_##S(a, b, out, g, threads, work); \
        else if (kind == 1) rc = rt_conv2d_backprop_input_ws_##S(a, b, out, g, threads, work); \
        else rc = rt_conv2d_backprop_filter_ws_##S(a, b, out, g, threads, work); \
        rt_drop(ctx, work); \
        return rc ? rt_fail(ctx, "out of memory for the convolution's GEMM") : 0; \
    }

RT_DEFINE_NN_ENTRIES(float, float32)
RT_DEFINE_NN_ENTRIES(double, float64)

#endif
