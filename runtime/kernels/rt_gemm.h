/* The blocked GEMM of one floating type. rt_kernels.h includes this file once per type, with
 *   RT_G_T  the element type (float, double) and
 *   RT_G_S  the name suffix (float32, float64)
 *   RT_G_SIZE  sizeof(RT_G_T), for the preprocessor (4, 8)
 * defined; it defines rt_gemm_blocked_<S>: C[m,n] = op(A)[m,k] @ op(B)[k,n], row-major, op(X) = X or X^T,
 * with any row strides.
 *
 * The algorithm is GotoBLAS/BLIS's: B is packed KC x NC at a time into slivers NR columns wide, and a
 * micro-kernel keeps an MR x NR tile of C in vector registers while it walks KC rank-1 updates. Packing B
 * makes a transposed B free (read in another order while packing) and pads ragged edges with zeros; a B
 * whose rows are close together (RT_G_INPLACE_B) is read where it is, but for a ragged last sliver. A is
 * not packed: the micro-kernel broadcasts its elements from where they are (MR rows lda apart, or MR
 * contiguous elements when A is transposed), which on the few-hundred-row operands of this runtime costs
 * less than packing them (only a ragged last MR rows are packed, zero-padded; a transposed A serving many slivers
 * of B is packed, see rt_gemm_block). Small products skip
 * packing B too when it is already laid out as the micro-kernel reads it. Two micro-kernel shapes: "wide"
 * (MR = RT_GEMM_MR rows x 2 vectors) and "narrow" (2 * RT_GEMM_MR rows x 1 vector) for C with at most
 * one vector of columns, such as a layer's 10 logits.
 * Threads split C into a grid of blocks, each an independent GEMM with its own packing (no barrier
 * inside): on the few cores this runtime targets that repacks little and costs one parallel region.
 */
#define RT_G_CAT2(a, b) a##_##b
#define RT_G_CAT(a, b) RT_G_CAT2(a, b)
#define RT_G_FN(name) RT_G_CAT(name, RT_G_S)

#define RT_G_VL (RT_VEC_BYTES / (int)sizeof(RT_G_T))     /* lanes of one vector */
#define RT_G_MR_MAX (2 * RT_GEMM_MR)
#define RT_G_NR_MAX (2 * RT_G_VL)
#define RT_G_TILE_ROWS(n) ((n) <= RT_G_VL ? 2 * RT_GEMM_MR : RT_GEMM_MR)   /* rows of C's tiles: narrow or wide */
#define RT_G_KC 256                                        /* a B sliver (KC x NR) stays in L1 */
#define RT_G_MC (RT_GEMM_MR * 12)                          /* an A block (MC x KC) stays in L2 */
#define RT_G_NC 2048                                       /* a B panel (KC x NC) stays in L3 */
/* B rows at most this many bytes apart are not packed. At AVX2 (Zen 3) packing them cost less than reading them
 * in place on every shape measured ([256, 784] @ [784, 128] 577 against 594 us on one thread, [512]^2 3.04
 * against 3.50 ms): a 16-float sliver of rows 512 bytes apart falls on 8 of L1's 64 sets and is read from L2. */
#ifndef RT_G_INPLACE_B
#if RT_VEC_BYTES >= 64
#define RT_G_INPLACE_B 2048
#else
#define RT_G_INPLACE_B 0
#endif
#endif
#ifndef RT_G_PACK_A_SLIVERS
#define RT_G_PACK_A_SLIVERS 8
#endif
/* B's rows start on vector boundaries: read in place, its vector loads never cross a cache line (numpy's big
 * arrays start 16 bytes past one: read in place, a [784, 128] layer's weights cost the product 11% at AVX2). */
#define RT_G_ALIGNED_B(b, ldb) \
    ((uintptr_t)(b) % RT_VEC_BYTES == 0 && (ldb) * (int64_t)sizeof(RT_G_T) % RT_VEC_BYTES == 0)

typedef RT_G_T RT_G_FN(rt_vec) __attribute__((vector_size(RT_VEC_BYTES), aligned(sizeof(RT_G_T)), may_alias));

/* The micro-kernels, the packing and one thread's block are the GEMM's bulk: 1.6 s of gcc -O3 per module. A
 * module built with RT_KERNELS_EXTERN links them from the kernel library's archive (rt_kernels_lib.c, compiled once
 * per compiler and flags: transpiler/build/kernel_library.py) and sees only rt_gemm_block's declaration; the
 * library's own compile (RT_KERNELS_LIBRARY) defines it as a hidden global; everything else inlines them. */
/* B packed once for products that reuse it (a convolution's filters, for every output row): op(B) [k, n] in the
 * slivers of rt_gemm_packed_cols (100 columns at AVX-512: 112 computed instead of 128), zero-padded, block after
 * block of RT_G_KC rows: block p0 at p0 * rt_gemm_packed_n(n), sliver j at j * kc in it (rt_gemm_prepack_b;
 * rt_gemm_block_prepacked reads it). */
static inline int64_t RT_G_FN(rt_gemm_packed_n)(int64_t n) { return rt_gemm_packed_cols(n, RT_G_VL); }

#if defined(RT_KERNELS_EXTERN) && !defined(RT_KERNELS_LIBRARY)
RT_KERNELS_LIBRARY_FN(static inline) int RT_G_FN(rt_gemm_block)(const RT_G_T *a, int64_t lda, int ta, const RT_G_T *b,
                                                                int64_t ldb, int tb, RT_G_T *c, int64_t ldc, int64_t m,
                                                                int64_t k, int64_t n);
RT_KERNELS_LIBRARY_FN(static inline) void RT_G_FN(rt_gemm_prepack_b)(const RT_G_T *b, int64_t ldb, int tb, int64_t k,
                                                                     int64_t n, RT_G_T *out);
RT_KERNELS_LIBRARY_FN(static inline) void RT_G_FN(rt_gemm_block_prepacked)(const RT_G_T *a, int64_t lda,
                                                                           const RT_G_T *pb, RT_G_T *c, int64_t ldc,
                                                                           int64_t m, int64_t k, int64_t n,
                                                                           int accumulate);
#else
/* The micro-kernel for an MR x (NV vectors) tile: c[0:mr, 0:nr] = (or += when `accumulate`) a~ @ b~, where
 * a~(i, p) = a[i * rsa + p * csa] (i < MR, p < kc) and row p of b~ is the NV * VL values at b + p * rsb.
 * Rows mr.. and columns nr.. are computed but not stored (their operands must still be readable). MR and NV
 * are constants at every call, so the accumulators live in registers. */
static inline __attribute__((always_inline)) void RT_G_FN(rt_gemm_micro)(
        const int MR, const int NV, int64_t kc, const RT_G_T *restrict a, int64_t rsa, int64_t csa,
        const RT_G_T *restrict b, int64_t rsb, RT_G_T *restrict c, int64_t ldc, int mr, int nr, int accumulate) {
    typedef RT_G_FN(rt_vec) vec;
    vec acc0[RT_G_MR_MAX], acc1[RT_G_MR_MAX];
    _Pragma("GCC unroll 32")
    for (int i = 0; i < MR; i++) { acc0[i] = (vec){0}; acc1[i] = (vec){0}; }
    for (int64_t p = 0; p < kc; p++) {
        const vec b0 = *(const vec *)(b + p * rsb);
        const vec b1 = NV == 2 ? *(const vec *)(b + p * rsb + RT_G_VL) : b0;
        const RT_G_T *restrict ap = a + p * csa;
        _Pragma("GCC unroll 32")
        for (int i = 0; i < MR; i++) {
            const RT_G_T ai = ap[i * rsa];
            acc0[i] += ai * b0;
            if (NV == 2) acc1[i] += ai * b1;
        }
    }
    if (mr == MR && nr == NV * RT_G_VL) {
        _Pragma("GCC unroll 32")
        for (int i = 0; i < MR; i++) {
            vec *c0 = (vec *)(c + i * ldc), *c1 = (vec *)(c + i * ldc + RT_G_VL);
            if (accumulate) *c0 += acc0[i]; else *c0 = acc0[i];
            if (NV == 2) { if (accumulate) *c1 += acc1[i]; else *c1 = acc1[i]; }
        }
        return;
    }
    RT_G_T tile[RT_G_MR_MAX][RT_G_NR_MAX] __attribute__((aligned(64)));
    _Pragma("GCC unroll 32")
    for (int i = 0; i < MR; i++) {
        *(vec *)&tile[i][0] = acc0[i];
        if (NV == 2) *(vec *)&tile[i][RT_G_VL] = acc1[i];
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            c[i * ldc + j] = accumulate ? c[i * ldc + j] + tile[i][j] : tile[i][j];
}

static RT_FMA_KERNEL void RT_G_FN(rt_gemm_micro_wide)(int64_t kc, const RT_G_T *restrict a, int64_t rsa, int64_t csa,
                                        const RT_G_T *restrict b, int64_t rsb, RT_G_T *restrict c, int64_t ldc,
                                        int mr, int nr, int accumulate) {
    RT_G_FN(rt_gemm_micro)(RT_GEMM_MR, 2, kc, a, rsa, csa, b, rsb, c, ldc, mr, nr, accumulate);
}

static RT_FMA_KERNEL void RT_G_FN(rt_gemm_micro_narrow)(int64_t kc, const RT_G_T *restrict a, int64_t rsa, int64_t csa,
                                          const RT_G_T *restrict b, int64_t rsb, RT_G_T *restrict c, int64_t ldc,
                                          int mr, int nr, int accumulate) {
    RT_G_FN(rt_gemm_micro)(2 * RT_GEMM_MR, 1, kc, a, rsa, csa, b, rsb, c, ldc, mr, nr, accumulate);
}

/* o[p * MR + i] = src[p * lda + i] for p < kc, i < MR: a whole sliver of a transposed A, MR a constant at every
 * call (copies of a constant length: vector moves). */
static inline __attribute__((always_inline)) void RT_G_FN(rt_gemm_pack_rows)(const int MR, int64_t kc,
                                                                            const RT_G_T *restrict src, int64_t lda,
                                                                            RT_G_T *restrict o) {
    for (int64_t p = 0; p < kc; p++)
        _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++) o[p * MR + i] = src[p * lda + i];
}

/* Pack op(A)[i0:i0+mc, p0:p0+kc] into slivers of `mr_t` rows: (i, p) goes to (i / mr_t) * kc * mr_t + p * mr_t +
 * i % mr_t; rows past mc are zeros. */
static inline void RT_G_FN(rt_gemm_pack_a)(const RT_G_T *restrict a, int64_t lda, int trans, int64_t i0, int64_t mc,
                                           int64_t p0, int64_t kc, int mr_t, RT_G_T *restrict out) {
    for (int64_t s = 0; s < mc; s += mr_t) {
        const int rows = (int)(mc - s < mr_t ? mc - s : mr_t);
        RT_G_T *restrict o = out + s * kc;
        if (trans && rows == mr_t && (mr_t == RT_GEMM_MR || mr_t == 2 * RT_GEMM_MR)) {
            const RT_G_T *restrict src = a + p0 * lda + i0 + s;
            if (mr_t == RT_GEMM_MR) RT_G_FN(rt_gemm_pack_rows)(RT_GEMM_MR, kc, src, lda, o);
            else RT_G_FN(rt_gemm_pack_rows)(2 * RT_GEMM_MR, kc, src, lda, o);
        } else if (trans) {          /* op(A)(i, p) = a[p * lda + i]: each p is a contiguous run of rows */
            for (int64_t p = 0; p < kc; p++) {
                const RT_G_T *restrict src = a + (p0 + p) * lda + i0 + s;
                int i = 0;
                for (; i < rows; i++) o[p * mr_t + i] = src[i];
                for (; i < mr_t; i++) o[p * mr_t + i] = 0;
            }
        } else {
            for (int i = 0; i < mr_t; i++) {
                if (i < rows) {
                    const RT_G_T *restrict src = a + (i0 + s + i) * lda + p0;
                    for (int64_t p = 0; p < kc; p++) o[p * mr_t + i] = src[p];
                } else {
                    for (int64_t p = 0; p < kc; p++) o[p * mr_t + i] = 0;
                }
            }
        }
    }
}

/* Pack op(B)[p0:p0+kc, j0:j0+nc] into slivers of `nr_t` columns: (p, j) goes to (j / nr_t) * kc * nr_t + p * nr_t +
 * j % nr_t; columns past nc are zeros. */
static inline void RT_G_FN(rt_gemm_pack_b)(const RT_G_T *restrict b, int64_t ldb, int trans, int64_t p0, int64_t kc,
                                           int64_t j0, int64_t nc, int nr_t, RT_G_T *restrict out) {
    for (int64_t s = 0; s < nc; s += nr_t) {
        const int cols = (int)(nc - s < nr_t ? nc - s : nr_t);
        RT_G_T *restrict o = out + s * kc;
        if (trans) {          /* op(B)(p, j) = b[j * ldb + p] */
#if defined(RT_TRANSPOSE_float32)
            if (sizeof(RT_G_T) == 4 && cols == nr_t && nr_t % RT_TRANSPOSE_float32 == 0) {   /* blocks in registers */
                const int tb = RT_TRANSPOSE_float32;
                const int64_t kc_blocks = kc / tb * tb;
                for (int jb = 0; jb < nr_t; jb += tb)
                    for (int64_t p = 0; p < kc_blocks; p += tb)
                        rt_transpose_block_float32((const float *)(b + (j0 + s + jb) * ldb + p0 + p), ldb,
                                                   (float *)(o + p * nr_t + jb), nr_t);
                for (int j = 0; j < nr_t; j++) {
                    const RT_G_T *restrict src = b + (j0 + s + j) * ldb + p0;
                    for (int64_t p = kc_blocks; p < kc; p++) o[p * nr_t + j] = src[p];
                }
                continue;
            }
#endif
            for (int j = 0; j < nr_t; j++) {
                if (j < cols) {
                    const RT_G_T *restrict src = b + (j0 + s + j) * ldb + p0;
                    for (int64_t p = 0; p < kc; p++) o[p * nr_t + j] = src[p];
                } else {
                    for (int64_t p = 0; p < kc; p++) o[p * nr_t + j] = 0;
                }
            }
        } else {
            for (int64_t p = 0; p < kc; p++) {
                const RT_G_T *restrict src = b + (p0 + p) * ldb + j0 + s;
                int j = 0;
                for (; j < cols; j++) o[p * nr_t + j] = src[j];
                for (; j < nr_t; j++) o[p * nr_t + j] = 0;
            }
        }
    }
}

typedef void (*RT_G_FN(rt_gemm_micro_fn))(int64_t, const RT_G_T *restrict, int64_t, int64_t, const RT_G_T *restrict,
                                          int64_t, RT_G_T *restrict, int64_t, int, int, int);

/* One thread's block: C[0:m, 0:n] = op(A) @ op(B), pointers already offset to the block. -1: out of memory. */
RT_KERNELS_LIBRARY_FN(static inline) int RT_G_FN(rt_gemm_block)(const RT_G_T *a, int64_t lda, int ta, const RT_G_T *b,
                                                                int64_t ldb, int tb, RT_G_T *c, int64_t ldc, int64_t m,
                                                                int64_t k, int64_t n) {
    if (m <= 0 || n <= 0) return 0;
    if (k <= 0) {
        for (int64_t i = 0; i < m; i++) for (int64_t j = 0; j < n; j++) c[i * ldc + j] = 0;
        return 0;
    }
    const int narrow = n <= RT_G_VL;
    const int mr_t = RT_G_TILE_ROWS(n), nr_t = narrow ? RT_G_VL : 2 * RT_G_VL;
    const RT_G_FN(rt_gemm_micro_fn) micro = narrow ? RT_G_FN(rt_gemm_micro_narrow) : RT_G_FN(rt_gemm_micro_wide);
    /* One column sliver, or small: the micro-kernel reads A where it is (A is read once per sliver of B, too
     * few times to pay for packing it), and B too unless it is transposed or ragged. */
    if (n <= nr_t || (k * n * (int64_t)sizeof(RT_G_T) <= 65536 && m * k * n <= (int64_t)1 << 20)) {
        RT_G_T edge_b[RT_G_KC * RT_G_NR_MAX] __attribute__((aligned(64)));
        RT_G_T edge_a[RT_G_MR_MAX * RT_G_KC] __attribute__((aligned(64)));
        const int64_t rsa = ta ? 1 : lda, csa = ta ? lda : 1;
        for (int64_t p0 = 0; p0 < k; p0 += RT_G_KC) {
            const int64_t kc = k - p0 < RT_G_KC ? k - p0 : RT_G_KC;
            for (int64_t j = 0; j < n; j += nr_t) {
                const int nr = (int)(n - j < nr_t ? n - j : nr_t);
                const RT_G_T *bp = b + p0 * ldb + j;
                int64_t rsb = ldb;
                if (tb || nr < nr_t || !RT_G_ALIGNED_B(b, ldb)) {
                    RT_G_FN(rt_gemm_pack_b)(b, ldb, tb, p0, kc, j, nr, nr_t, edge_b);
                    bp = edge_b;
                    rsb = nr_t;
                }
                for (int64_t i = 0; i < m; i += mr_t) {
                    const int mr = (int)(m - i < mr_t ? m - i : mr_t);
                    if (mr < mr_t) {
                        RT_G_FN(rt_gemm_pack_a)(a, lda, ta, i, mr, p0, kc, mr_t, edge_a);
                        micro(kc, edge_a, 1, mr_t, bp, rsb, c + i * ldc + j, ldc, mr, nr, p0 > 0);
                    } else {
                        micro(kc, a + i * rsa + p0 * csa, rsa, csa, bp, rsb, c + i * ldc + j, ldc, mr, nr, p0 > 0);
                    }
                }
            }
        }
        return 0;
    }
    /* B's packing buffer per call (malloc keeps freed blocks of this size at hand: no page faults after the
     * first). A is read where it is: rows rsa apart, columns csa apart, so its slivers need no packing (on
     * [256, 784] @ [784, 128] packing A's rows into slivers cost an eighth of the time); only a last ragged
     * sliver of rows is packed, zero-padded, because the micro-kernel reads MR rows. At AVX-512, B's rows are
     * read where they are too when they start on vector boundaries at most RT_G_INPLACE_B bytes apart (a layer's
     * [784, 128] weights: packing them took 8 of the 108 us of a 2-thread product, the same copy on each
     * thread); rows further apart fall on few cache sets (a 4 KiB stride: one set), so wider B is packed. */
    const int inplace_b = !tb && ldb * (int64_t)sizeof(RT_G_T) <= RT_G_INPLACE_B && RT_G_ALIGNED_B(b, ldb);
    const int64_t nc_max = inplace_b ? nr_t : n < RT_G_NC ? (n + nr_t - 1) / nr_t * nr_t : RT_G_NC;
    const int64_t kc_max = k < RT_G_KC ? k : RT_G_KC;
    void *buf_b = NULL;
    if (posix_memalign(&buf_b, 64, sizeof(RT_G_T) * (size_t)kc_max * (size_t)nc_max) != 0) return -1;
    RT_G_T *pb = (RT_G_T *)buf_b;
    RT_G_T edge_a[RT_G_MR_MAX * RT_G_KC] __attribute__((aligned(64)));
    const int64_t rsa = ta ? 1 : lda, csa = ta ? lda : 1;
    /* A transposed is packed when its blocks serve at least RT_G_PACK_A_SLIVERS slivers of B: the micro-kernel reads
     * MR values of each of KC rows lda apart, a line per row. Packed, [1024]^2 products with A transposed took
     * 11.4-12.7 against 12.9-14.9 ms at AVX2 (2 threads, Zen 4), 11.4-12.0 against 11.6-12.1 at AVX-512; a weight
     * gradient's x^T @ dy ([784, 256] @ [256, 128], 4 slivers a thread) 317 against 276 us at best at AVX2, as
     * fast at AVX-512: the pack is read back too few times to pay for itself. */
    const int pack_a = ta && n >= RT_G_PACK_A_SLIVERS * nr_t;
    const int64_t mc_max = (RT_G_MC + mr_t - 1) / mr_t * mr_t;
    void *buf_a = NULL;
    if (pack_a && posix_memalign(&buf_a, 64, sizeof(RT_G_T) * (size_t)kc_max * (size_t)mc_max) != 0) {
        free(buf_b);
        return -1;
    }
    RT_G_T *pa = (RT_G_T *)buf_a;
    const int64_t m_full = pack_a ? 0 : m / mr_t * mr_t;
    for (int64_t j0 = 0; j0 < n; j0 += RT_G_NC) {
        const int64_t nc = n - j0 < RT_G_NC ? n - j0 : RT_G_NC;
        const int64_t nc_full = inplace_b ? nc / nr_t * nr_t : 0;      /* slivers read in place */
        for (int64_t p0 = 0; p0 < k; p0 += RT_G_KC) {
            const int64_t kc = k - p0 < RT_G_KC ? k - p0 : RT_G_KC;
            if (nc_full < nc)       /* the packed slivers (all of them, or a ragged last one) */
                RT_G_FN(rt_gemm_pack_b)(b, ldb, tb, p0, kc, j0 + nc_full, nc - nc_full, nr_t, pb);
            if (!pack_a && m_full < m) RT_G_FN(rt_gemm_pack_a)(a, lda, ta, m_full, m - m_full, p0, kc, mr_t, edge_a);
            for (int64_t i0 = 0; i0 < m; i0 += RT_G_MC) {
                const int64_t mc = m - i0 < RT_G_MC ? m - i0 : RT_G_MC;
                if (pack_a) RT_G_FN(rt_gemm_pack_a)(a, lda, ta, i0, mc, p0, kc, mr_t, pa);
                for (int64_t j = 0; j < nc; j += nr_t) {
                    const int nr = (int)(nc - j < nr_t ? nc - j : nr_t);
                    const RT_G_T *bj = j < nc_full ? b + p0 * ldb + j0 + j : pb + (j - nc_full) * kc;
                    const int64_t rsb = j < nc_full ? ldb : nr_t;
                    for (int64_t i = i0; i < i0 + mc; i += mr_t) {
                        RT_G_T *cij = c + i * ldc + j0 + j;
                        const int mr = (int)(m - i < mr_t ? m - i : mr_t);
                        if (pack_a)
                            micro(kc, pa + (i - i0) * kc, 1, mr_t, bj, rsb, cij, ldc, mr, nr, p0 > 0);
                        else if (i < m_full)
                            micro(kc, a + i * rsa + p0 * csa, rsa, csa, bj, rsb, cij, ldc, mr_t, nr, p0 > 0);
                        else
                            micro(kc, edge_a, 1, mr_t, bj, rsb, cij, ldc, (int)(m - i), nr, p0 > 0);
                    }
                }
            }
        }
    }
    free(buf_a);
    free(buf_b);
    return 0;
}

RT_KERNELS_LIBRARY_FN(static inline) void RT_G_FN(rt_gemm_prepack_b)(const RT_G_T *b, int64_t ldb, int tb, int64_t k,
                                                                     int64_t n, RT_G_T *out) {
    const int64_t np = RT_G_FN(rt_gemm_packed_n)(n), wide = n / (2 * RT_G_VL) * (2 * RT_G_VL);
    for (int64_t p0 = 0; p0 < k; p0 += RT_G_KC) {
        const int64_t kc = k - p0 < RT_G_KC ? k - p0 : RT_G_KC;
        RT_G_FN(rt_gemm_pack_b)(b, ldb, tb, p0, kc, 0, wide, 2 * RT_G_VL, out + p0 * np);
        if (wide < n)
            RT_G_FN(rt_gemm_pack_b)(b, ldb, tb, p0, kc, wide, n - wide, (int)(np - wide), out + p0 * np + wide * kc);
    }
}

/* C[0:m, 0:n] = (or += when `accumulate`) A[0:m, 0:k] @ B, A's rows lda apart (read where they are, rows that
 * overlap too: a convolution's windows), B pre-packed by rt_gemm_prepack_b (k, n); one thread. A narrow last
 * sliver runs the narrow micro-kernel over tiles of twice the rows. */
RT_KERNELS_LIBRARY_FN(static inline) void RT_G_FN(rt_gemm_block_prepacked)(const RT_G_T *a, int64_t lda,
                                                                           const RT_G_T *pb, RT_G_T *c, int64_t ldc,
                                                                           int64_t m, int64_t k, int64_t n,
                                                                           int accumulate) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        if (!accumulate) for (int64_t i = 0; i < m; i++) for (int64_t j = 0; j < n; j++) c[i * ldc + j] = 0;
        return;
    }
    const int64_t np = RT_G_FN(rt_gemm_packed_n)(n), wide = n / (2 * RT_G_VL) * (2 * RT_G_VL);
    const int narrow_last = np - wide == RT_G_VL;
    /* the micro-kernels read whole tiles of rows: a last ragged tile is packed, zero-padded (for each kind) */
    const int64_t m_wide = m / RT_GEMM_MR * RT_GEMM_MR, m_narrow = m / (2 * RT_GEMM_MR) * (2 * RT_GEMM_MR);
    RT_G_T edge_w[RT_G_MR_MAX * RT_G_KC] __attribute__((aligned(64)));
    RT_G_T edge_n[RT_G_MR_MAX * RT_G_KC] __attribute__((aligned(64)));
    for (int64_t p0 = 0; p0 < k; p0 += RT_G_KC) {
        const int64_t kc = k - p0 < RT_G_KC ? k - p0 : RT_G_KC;
        const RT_G_T *pbk = pb + p0 * np;
        const int acc = accumulate || p0 > 0;
        if (m_wide < m && (wide > 0 || !narrow_last))
            RT_G_FN(rt_gemm_pack_a)(a, lda, 0, m_wide, m - m_wide, p0, kc, RT_GEMM_MR, edge_w);
        if (m_narrow < m && narrow_last)
            RT_G_FN(rt_gemm_pack_a)(a, lda, 0, m_narrow, m - m_narrow, p0, kc, 2 * RT_GEMM_MR, edge_n);
        for (int64_t i0 = 0; i0 < m; i0 += RT_G_MC) {          /* an A block stays in L2 */
            const int64_t i1 = m - i0 < RT_G_MC ? m : i0 + RT_G_MC;
            for (int64_t j = 0; j < n; j += 2 * RT_G_VL) {
                const int nr = (int)(n - j < 2 * RT_G_VL ? n - j : 2 * RT_G_VL), narrow = j == wide && narrow_last;
                const int mr_t = narrow ? 2 * RT_GEMM_MR : RT_GEMM_MR, rsb = narrow ? RT_G_VL : 2 * RT_G_VL;
                const RT_G_FN(rt_gemm_micro_fn) micro = narrow ? RT_G_FN(rt_gemm_micro_narrow)
                                                               : RT_G_FN(rt_gemm_micro_wide);
                const int64_t m_full = narrow ? m_narrow : m_wide;
                const RT_G_T *bj = pbk + j * kc;
                for (int64_t i = i0; i < i1; i += mr_t) {
                    if (i < m_full)
                        micro(kc, a + i * lda + p0, lda, 1, bj, rsb, c + i * ldc + j, ldc, mr_t, nr, acc);
                    else
                        micro(kc, narrow ? edge_n : edge_w, 1, mr_t, bj, rsb, c + i * ldc + j, ldc, (int)(m - i), nr,
                              acc);
                }
            }
        }
    }
}
#endif

/* What one part of a tm x tn grid costs rt_gemm_block, in multiply-adds per step of k: its micro-tiles (padding
 * included), plus the copies it makes. Every part packs its columns of B (k x n / tn values) unless it reads them in
 * place (AVX-512, rows close together), and a transposed A's rows when the part has the slivers of B to pay for it
 * (RT_G_PACK_A_SLIVERS; m / tm values); a transposed A read in place costs its part an eighth more (each
 * micro-kernel step reads MR values from KC rows lda apart). A copied value costs about RT_G_COPY_MACS
 * multiply-adds: packing a layer's [784, 128] weights took 8 of a 2-thread product's 108 us at AVX-512. Measured at
 * AVX2 and AVX-512 (Xeon, two threads), the split this picks against the other: x^T @ dy as [784, 256] @ [256, 128]
 * 230 against 247 us (AVX2, rows: columns lost A's packing), [1024, 512] @ [512, 128] 634 against 825 us, [128,
 * 256] @ [256, 784] 224 against 243 us (columns: split by rows each part packed all of B). `tiles_only`: the
 * micro-tiles alone. */
#define RT_G_COPY_MACS 8
static inline int64_t RT_G_FN(rt_gemm_part_cost)(int64_t m, int64_t n, int ta, int tb, int tm, int tn,
                                                  int tiles_only) {
    const int64_t mr_t = RT_G_TILE_ROWS(n);
    const int64_t tiles_m = (m + mr_t - 1) / mr_t, tiles_n = (n + RT_G_NR_MAX - 1) / RT_G_NR_MAX;
    const int64_t m_part = (tiles_m + tm - 1) / tm * mr_t, n_part = (tiles_n + tn - 1) / tn * RT_G_NR_MAX;
    int64_t cost = m_part * n_part;
    if (tiles_only) return cost;
    const int b_in_place = !tb && n * (int64_t)sizeof(RT_G_T) <= RT_G_INPLACE_B;
    if (!b_in_place) cost += RT_G_COPY_MACS * n_part;
    if (ta && n_part >= RT_G_PACK_A_SLIVERS * RT_G_NR_MAX) cost += RT_G_COPY_MACS * m_part;
    else if (ta) cost += m_part * n_part / 8;
    return cost;
}

/* How rt_gemm_blocked splits C over up to `threads` threads: a grid of tm x tn blocks. Returns tm * tn (1 for
 * products under RT_GEMM_PARALLEL_MIN multiply-adds, unless they are at least RT_GEMM_HOT_MIN and follow
 * another such product closely: rt_gemm_back_to_back) and sets *tn_out. `ta`, `tb`: A or B is transposed, as
 * rt_gemm_ld_S's are. */
static inline int RT_G_FN(rt_gemm_grid)(int64_t m, int64_t k, int64_t n, int ta, int tb, int threads, int *tn_out) {
    int tm = 1, tn = 1;
    const int64_t work = m * k * n;
    const int hot = work < RT_GEMM_PARALLEL_MIN;
    if (threads > 1 && m > 1 && n > 1 && (!hot || (work >= RT_GEMM_HOT_MIN && rt_gemm_back_to_back()))) {
        for (int t = threads; t > 1;) {
            int f = 2;
            while (t % f) f++;
            /* Split the side whose parts cost least (rt_gemm_part_cost); on a tie, the rows. A small product
             * split only because such products run back to back (a recurrence's h @ w in a loop) weighs its
             * micro-tiles alone and splits its rows on a tie: each thread's rows of the result are its rows of the
             * next step's A, in its own cache (B, the same at every step, is in both), where split by columns
             * every row moves between the cores at every step (a 100-step RNN, 32 x 64 @ 64 x 64 at AVX2 on a
             * Xeon: 705 us by columns, 374 us by rows, 469 us on one thread). Rows are split on whole
             * micro-tiles, columns on whole slivers. */
            const int can_m = m / (tm * f) >= RT_GEMM_MR, can_n = n / (tn * f) >= RT_G_NR_MAX;
            if (can_m && (!can_n || RT_G_FN(rt_gemm_part_cost)(m, n, ta, tb, tm * f, tn, hot)
                                    <= RT_G_FN(rt_gemm_part_cost)(m, n, ta, tb, tm, tn * f, hot)))
                tm *= f;
            else if (can_n) tn *= f;
            else break;
            t /= f;
        }
    }
    *tn_out = tn;
    return tm * tn;
}

/* Block `part` of the grid (parts, tn) of rt_gemm_grid: computes C[*i0:*i1, *j0:*j1] (block edges on multiples of
 * the micro-tiles). Blocks are independent: the grid's parts run on threads with no barrier, and code that
 * reads a block of C (an epilogue) can run on it as soon as its part returns. -1: out of memory. */
static inline int RT_G_FN(rt_gemm_block_part)(const RT_G_T *a, int64_t lda, const RT_G_T *b, int64_t ldb, RT_G_T *c,
                                              int64_t ldc, int64_t m, int64_t k, int64_t n, int ta, int tb, int parts,
                                              int tn, int part, int64_t *i0, int64_t *i1, int64_t *j0, int64_t *j1) {
    const int tm = parts / tn;
    /* rows split on the micro-kernel's own tiles: on 12-row multiples, [256, 784] @ [784, 128] gave one thread 22
     * tiles of 6 rows and the other 21 (a ragged one among them), and the first thread's wait cost 4% */
    const int64_t mr_t = RT_G_TILE_ROWS(n);
    const int64_t ms = (m / tm + mr_t - 1) / mr_t * mr_t;
    const int64_t ns = (n / tn + RT_G_NR_MAX - 1) / RT_G_NR_MAX * RT_G_NR_MAX;
    const int bi = part / tn, bj = part % tn;
    *i0 = bi * ms;
    *j0 = bj * ns;
    *i1 = bi == tm - 1 ? m : *i0 + ms;
    *j1 = bj == tn - 1 ? n : *j0 + ns;
    if (*i1 > m) *i1 = m;
    if (*j1 > n) *j1 = n;
    if (*i0 > *i1) *i0 = *i1;
    if (*j0 > *j1) *j0 = *j1;
    if (*i0 == *i1 || *j0 == *j1) return 0;
    return RT_G_FN(rt_gemm_block)(ta ? a + *i0 : a + *i0 * lda, lda, ta, tb ? b + *j0 * ldb : b + *j0, ldb, tb,
                                  c + *i0 * ldc + *j0, ldc, *i1 - *i0, k, *j1 - *j0);
}

#define RT_G_GEMV_CHUNK 256                                 /* outputs a sum of scaled rows accumulates at once */

/* Lanes per vector, for the preprocessor, and shuffle index lists over them. */
#define RT_G_VLEN (RT_VEC_BYTES / RT_G_SIZE)
#define RT_G_LIST2(F, U) F(0, U), F(1, U)
#define RT_G_LIST4(F, U) RT_G_LIST2(F, U), F(2, U), F(3, U)
#define RT_G_LIST8(F, U) RT_G_LIST4(F, U), F(4, U), F(5, U), F(6, U), F(7, U)
#define RT_G_LIST16(F, U) RT_G_LIST8(F, U), F(8, U), F(9, U), F(10, U), F(11, U), F(12, U), F(13, U), F(14, U), F(15, U)
#if RT_G_VLEN == 16
#define RT_G_LIST RT_G_LIST16
#elif RT_G_VLEN == 8
#define RT_G_LIST RT_G_LIST8
#elif RT_G_VLEN == 4
#define RT_G_LIST RT_G_LIST4
#else
#define RT_G_LIST RT_G_LIST2
#endif
/* Two vectors a, b of groups of U lanes (a row's partial sums each) -> one of groups of U / 2: lane t of each
 * group plus lane t + U / 2, a's groups first (RT_G_A picks the first addend of output lane i, RT_G_B the second). */
#define RT_G_GROUP(i, U) ((i) / ((U) / 2))
#define RT_G_A(i, U) (RT_G_GROUP(i, U) < RT_G_VLEN / (U) ? RT_G_GROUP(i, U) * (U) + (i) % ((U) / 2) \
                      : RT_G_VLEN + (RT_G_GROUP(i, U) - RT_G_VLEN / (U)) * (U) + (i) % ((U) / 2))
#define RT_G_B(i, U) (RT_G_A(i, U) + (U) / 2)
#define RT_G_MERGE(a, b, U) (__builtin_shufflevector(a, b, RT_G_LIST(RT_G_A, U)) + \
                             __builtin_shufflevector(a, b, RT_G_LIST(RT_G_B, U)))
#define RT_G_LEVEL(s, U) \
    _Pragma("GCC unroll 16") \
    for (int j = 0; j < (U) / 2; j++) s[j] = RT_G_MERGE(s[2 * j], s[2 * j + 1], U);

/* The lanes of `x` added as a tree (lane t and t + VLEN / 2, then t and t + VLEN / 4 ...): rt_vec_sums' levels
 * on x and zeros, so a row summed alone and one summed with others give the same bits. GCC ends an `omp simd`
 * reduction with the lanes added one after another (16 dependent adds at AVX-512), which took two thirds of a
 * [2048, 32] @ [32, 1] product's time. */
static inline RT_G_T RT_G_FN(rt_vec_sum)(RT_G_FN(rt_vec) x) {
    const RT_G_FN(rt_vec) zero = {0};
#if RT_G_VLEN >= 16
    x = RT_G_MERGE(x, zero, 16);
#endif
#if RT_G_VLEN >= 8
    x = RT_G_MERGE(x, zero, 8);
#endif
#if RT_G_VLEN >= 4
    x = RT_G_MERGE(x, zero, 4);
#endif
    x = RT_G_MERGE(x, zero, 2);
    return x[0];
}

/* A row's whole vectors times v's: two accumulators (even and odd vectors), added. */
static inline RT_G_FN(rt_vec) RT_G_FN(rt_row_dot)(const RT_G_T *restrict row, const RT_G_T *restrict v,
                                                  int64_t whole) {
    typedef RT_G_FN(rt_vec) vec;
    vec s0 = {0}, s1 = {0};
    int64_t p = 0;
    for (; p + 2 * RT_G_VL <= whole; p += 2 * RT_G_VL) {
        s0 += *(const vec *)(row + p) * *(const vec *)(v + p);
        s1 += *(const vec *)(row + p + RT_G_VL) * *(const vec *)(v + p + RT_G_VL);
    }
    if (p < whole) s0 += *(const vec *)(row + p) * *(const vec *)(v + p);
    return s0 + s1;
}

/* s[0..VLEN): one vector per row -> s[0]: lane r the sum of row r's lanes, added as rt_vec_sum adds them (lane t
 * and t + VLEN / 2, then t and t + VLEN / 4 ...), VLEN rows at once: a row's tree alone spent most of its time
 * moving halves between registers (2.8 us of a [2048, 32] @ [32, 1] product). */
static inline void RT_G_FN(rt_vec_sums)(RT_G_FN(rt_vec) *s) {
#if RT_G_VLEN >= 16
    RT_G_LEVEL(s, 16)
#endif
#if RT_G_VLEN >= 8
    RT_G_LEVEL(s, 8)
#endif
#if RT_G_VLEN >= 4
    RT_G_LEVEL(s, 4)
#endif
    RT_G_LEVEL(s, 2)
}

/* y[i * ys] = sum over p of M(i, p) * v[p * vs] for i in [i0, i1), M(i, p) at mat[i * rs + p * cs]: a dot product
 * of each row when M's rows are contiguous (cs == 1), else a sum of M's columns scaled by v, RT_G_GEMV_CHUNK
 * outputs at a time in a local array. Either way vectorised over contiguous elements, each output summed in an
 * order that does not depend on [i0, i1). rt_gemv_range_S runs it on sizes known at run time (the kernel
 * library's copy: RT_KERNELS_EXTERN), rt_gemv_literal_S on literal sizes (small static products: GCC clones it
 * per call's constants, which a regression's [2048, 32] @ [32, 1] steps ran 15% faster with). */
static inline __attribute__((always_inline)) void RT_G_FN(rt_gemv_rows)(
        const RT_G_T *restrict mat, int64_t rs, int64_t cs, const RT_G_T *restrict v, int64_t vs, RT_G_T *restrict y,
        int64_t ys, int64_t k, int64_t i0, int64_t i1) {
    if (cs == 1) {
        typedef RT_G_FN(rt_vec) vec;
        const int64_t whole = k / RT_G_VL * RT_G_VL;
        int64_t i = i0;
        if (vs == 1) {            /* VLEN rows at a time, their whole vectors' sums added as one tree */
            for (; i + RT_G_VLEN <= i1; i += RT_G_VLEN) {
                vec s[RT_G_VLEN];
                _Pragma("GCC unroll 16")
                for (int r = 0; r < RT_G_VLEN; r++) s[r] = RT_G_FN(rt_row_dot)(mat + (i + r) * rs, v, whole);
                RT_G_FN(rt_vec_sums)(s);
                _Pragma("GCC unroll 16")
                for (int r = 0; r < RT_G_VLEN; r++) {
                    const RT_G_T *restrict row = mat + (i + r) * rs;
                    RT_G_T acc = s[0][r];
                    for (int64_t p = whole; p < k; p++) acc += row[p] * v[p];
                    y[(i + r) * ys] = acc;
                }
            }
        }
        for (; i < i1; i++) {
            const RT_G_T *restrict row = mat + i * rs;
            RT_G_T acc = 0;
            if (vs == 1) {        /* whole vectors in two accumulators added as a tree, then the rest in order */
                acc = RT_G_FN(rt_vec_sum)(RT_G_FN(rt_row_dot)(row, v, whole));
                for (int64_t p = whole; p < k; p++) acc += row[p] * v[p];
            } else {
                _Pragma("omp simd reduction(+:acc)")
                for (int64_t p = 0; p < k; p++) acc += row[p] * v[p * vs];
            }
            y[i * ys] = acc;
        }
        return;
    }
    RT_G_T acc[RT_G_GEMV_CHUNK] __attribute__((aligned(64)));
    for (int64_t c0 = i0; c0 < i1; c0 += RT_G_GEMV_CHUNK) {
        const int64_t w = i1 - c0 < RT_G_GEMV_CHUNK ? i1 - c0 : RT_G_GEMV_CHUNK;
        _Pragma("omp simd")
        for (int64_t i = 0; i < w; i++) acc[i] = 0;
        int64_t p = 0;
        if (rs == 1) {        /* eight columns a pass (each output still adds them one after another) */
            for (; p + 8 <= k; p += 8) {
                RT_G_T vq[8];
                for (int q = 0; q < 8; q++) vq[q] = v[(p + q) * vs];
                const RT_G_T *restrict col = mat + p * cs + c0;
                _Pragma("omp simd")
                for (int64_t i = 0; i < w; i++) {
                    RT_G_T s = acc[i];
                    _Pragma("GCC unroll 8")
                    for (int q = 0; q < 8; q++) s += col[i + q * cs] * vq[q];
                    acc[i] = s;
                }
            }
        }
        for (; p < k; p++) {
            const RT_G_T vp = v[p * vs];
            const RT_G_T *restrict col = mat + p * cs + c0 * rs;
            _Pragma("omp simd")
            for (int64_t i = 0; i < w; i++) acc[i] += col[i * rs] * vp;
        }
        for (int64_t i = 0; i < w; i++) y[(c0 + i) * ys] = acc[i];
    }
}

#if defined(RT_KERNELS_EXTERN) && !defined(RT_KERNELS_LIBRARY)
RT_KERNELS_LIBRARY_FN(static) RT_FMA_KERNEL void RT_G_FN(rt_gemv_range)(const RT_G_T *restrict mat, int64_t rs,
                                                                        int64_t cs, const RT_G_T *restrict v,
                                                                        int64_t vs, RT_G_T *restrict y, int64_t ys,
                                                                        int64_t k, int64_t i0, int64_t i1);
#else
RT_KERNELS_LIBRARY_FN(static) RT_FMA_KERNEL void RT_G_FN(rt_gemv_range)(const RT_G_T *restrict mat, int64_t rs,
                                                                        int64_t cs, const RT_G_T *restrict v,
                                                                        int64_t vs, RT_G_T *restrict y, int64_t ys,
                                                                        int64_t k, int64_t i0, int64_t i1) {
    /* The sizes of a layer's or a regression's products get the code a literal call gets (rt_gemv_literal_S: the
     * loops over a row's vectors, or over the outputs' vectors, unrolled and their sums kept in registers): rows
     * of 1-4 whole vectors, 1, 2 or 4 vectors of outputs. The same sums in the same order as the general loops
     * (a [2048, 32] @ [32, 1] product and its transpose ran 1.7x slower with the sizes known at run time only). */
    /* A contiguous matrix's row stride is the literal too (rows of K apart, or columns of W): with a stride
     * known at run time only, the sum of eight scaled columns kept eight column pointers and spilled them
     * (the [2048, 32] gradient 1.2x its static spelling's time). */
#define RT_G_DOTS(K) (rs == (K) ? RT_G_FN(rt_gemv_rows)(mat, (K), 1, v, 1, y, ys, (K), i0, i1) \
                              : RT_G_FN(rt_gemv_rows)(mat, rs, 1, v, 1, y, ys, (K), i0, i1))
#define RT_G_AXPYS(W) (cs == (W) ? RT_G_FN(rt_gemv_rows)(mat + i0, 1, (W), v, vs, y + i0 * ys, ys, k, 0, (W)) \
                                 : RT_G_FN(rt_gemv_rows)(mat + i0, 1, cs, v, vs, y + i0 * ys, ys, k, 0, (W)))
    const int64_t vl = RT_G_VL, w = i1 - i0;
    if (cs == 1 && vs == 1 && k % vl == 0 && k <= 4 * vl) {
        switch (k / vl) {
        case 1: RT_G_DOTS(RT_G_VL); return;
        case 2: RT_G_DOTS(2 * RT_G_VL); return;
        case 3: RT_G_DOTS(3 * RT_G_VL); return;
        case 4: RT_G_DOTS(4 * RT_G_VL); return;
        default: break;
        }
    }
    if (cs != 1 && rs == 1 && (w == vl || w == 2 * vl || w == 4 * vl)) {
        if (w == vl) RT_G_AXPYS(RT_G_VL);
        else if (w == 2 * vl) RT_G_AXPYS(2 * RT_G_VL);
        else RT_G_AXPYS(4 * RT_G_VL);
        return;
    }
#undef RT_G_DOTS
#undef RT_G_AXPYS
    RT_G_FN(rt_gemv_rows)(mat, rs, cs, v, vs, y, ys, k, i0, i1);
}
#endif

static RT_FMA_KERNEL void RT_G_FN(rt_gemv_literal)(const RT_G_T *restrict mat, int64_t rs, int64_t cs,
                                                   const RT_G_T *restrict v, int64_t vs, RT_G_T *restrict y,
                                                   int64_t ys, int64_t k, int64_t i0, int64_t i1) {
    RT_G_FN(rt_gemv_rows)(mat, rs, cs, v, vs, y, ys, k, i0, i1);
}

/* Matrix-vector products, C = op(A) @ op(B) with n == 1 or m == 1: the blocked GEMM's tiles are a vector of
 * columns wide and its B panel is padded with zeros to that width, so one column cost a vector's work (a
 * gradient [2048, 32]^T @ [2048, 1] took 10x numpy's time). Outputs are split over threads in chunks when the
 * product is big; the bits do not depend on the split (rt_gemm_grid gives such products one part). `literal`: the
 * sizes are literals at the call (rt_matvec_small_S), see rt_gemv_literal_S. */
static inline __attribute__((always_inline)) void RT_G_FN(rt_gemv)(
        const RT_G_T *a, int64_t lda, const RT_G_T *b, int64_t ldb, RT_G_T *c, int64_t ldc, int64_t m, int64_t k,
        int64_t n, int ta, int tb, int threads, int literal) {
    const RT_G_T *mat, *v;
    int64_t rows, rs, cs, vs, ys;
    if (n == 1) {             /* C[:, 0] = op(A) @ op(B)[:, 0] */
        rows = m, mat = a, rs = ta ? 1 : lda, cs = ta ? lda : 1;
        v = b, vs = tb ? 1 : ldb, ys = ldc;
    } else {                  /* C[0, :] = op(B)^T @ op(A)[0, :] */
        rows = n, mat = b, rs = tb ? ldb : 1, cs = tb ? 1 : ldb;
        v = a, vs = ta ? lda : 1, ys = 1;
    }
    if (threads > 1 && rows >= 2 * RT_G_GEMV_CHUNK && rows * k >= RT_GEMM_PARALLEL_MIN) {
        const int64_t chunks = (rows + RT_G_GEMV_CHUNK - 1) / RT_G_GEMV_CHUNK;
        _Pragma("omp parallel for schedule(static) num_threads(threads)")
        for (int64_t t = 0; t < chunks; t++) {
            const int64_t hi = (t + 1) * RT_G_GEMV_CHUNK;
            RT_G_FN(rt_gemv_range)(mat, rs, cs, v, vs, c, ys, k, t * RT_G_GEMV_CHUNK, hi < rows ? hi : rows);
        }
        return;
    }
    if (literal) RT_G_FN(rt_gemv_literal)(mat, rs, cs, v, vs, c, ys, k, 0, rows);
    else RT_G_FN(rt_gemv_range)(mat, rs, cs, v, vs, c, ys, k, 0, rows);
}

/* C = op(A) @ op(B) with up to `threads` threads; C is [m, n] with rows ldc apart, not aliasing A or B.
 * op(A) is [m, k]: A's rows (of k, or of m when `ta`) are lda apart; likewise B's (of n, or of k when `tb`) ldb.
 * Returns 0, or -1 when the packing buffers cannot be allocated. */
static int RT_G_FN(rt_gemm_blocked)(const RT_G_T *a, int64_t lda, const RT_G_T *b, int64_t ldb, RT_G_T *c, int64_t ldc,
                                    int64_t m, int64_t k, int64_t n, int ta, int tb, int threads) {
    if (m == 1 || n == 1) {
        RT_G_FN(rt_gemv)(a, lda, b, ldb, c, ldc, m, k, n, ta, tb, threads, 0);
        return 0;
    }
    int tn;
    const int parts = RT_G_FN(rt_gemm_grid)(m, k, n, ta, tb, threads, &tn);
    if (parts == 1) return RT_G_FN(rt_gemm_block)(a, lda, ta, b, ldb, tb, c, ldc, m, k, n);
    int rc = 0;
    _Pragma("omp parallel for schedule(static, 1) num_threads(parts) reduction(|:rc)")
    for (int part = 0; part < parts; part++) {
        int64_t i0, i1, j0, j1;
        rc |= RT_G_FN(rt_gemm_block_part)(a, lda, b, ldb, c, ldc, m, k, n, ta, tb, parts, tn, part, &i0, &i1, &j0, &j1);
    }
    return rc ? -1 : 0;
}

#undef RT_G_CAT2
#undef RT_G_CAT
#undef RT_G_FN
#undef RT_G_VL
#undef RT_G_MR_MAX
#undef RT_G_NR_MAX
#undef RT_G_TILE_ROWS
#undef RT_G_KC
#undef RT_G_PACK_A_SLIVERS
#undef RT_G_COPY_MACS
#undef RT_G_MC
#undef RT_G_NC
#undef RT_G_INPLACE_B
#undef RT_G_ALIGNED_B
#undef RT_G_GEMV_CHUNK
#undef RT_G_VLEN
#undef RT_G_LIST2
#undef RT_G_LIST4
#undef RT_G_LIST8
#undef RT_G_LIST16
#undef RT_G_LIST
#undef RT_G_GROUP
#undef RT_G_A
#undef RT_G_B
#undef RT_G_MERGE
#undef RT_G_LEVEL
