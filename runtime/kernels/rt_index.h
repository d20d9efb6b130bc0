/* Indexing by index tuples and masks: GatherNd, ScatterNd (slices of the first m dims of a tensor at index
 * tuples, each checked as the eager kernels check them) and Where (the positions of a mask's true elements). */
#ifndef RT_INDEX_H
#define RT_INDEX_H

#include "rt_sort.h"     /* rt_library_error */

/* The row-major position of index tuple `row` of `indices` ([count, m], int32 or int64 when wide) in the first m
 * of `dims`; -1 with an error when an index is out of range. */
static int rt_index_position(rt_ctx *ctx, const char *op, const char *where, const void *indices, int wide,
                             int64_t row, int m, const int64_t *dims, int rank, int64_t *position) {
    int64_t pos = 0;
    for (int d = 0; d < m; d++) {
        int64_t v = wide ? ((const int64_t *)indices)[row * m + d] : ((const int32_t *)indices)[row * m + d];
        if (v < 0 || v >= dims[d]) {
            char tuple[256], shape[256];
            int used = snprintf(tuple, sizeof(tuple), "[");
            for (int e = 0; e < m && used < (int)sizeof(tuple); e++) {
                int64_t w = wide ? ((const int64_t *)indices)[row * m + e] : ((const int32_t *)indices)[row * m + e];
                used += snprintf(tuple + used, sizeof(tuple) - used, e ? ", %lld" : "%lld", (long long)w);
            }
            if (used < (int)sizeof(tuple)) snprintf(tuple + used, sizeof(tuple) - used, "]");
            used = snprintf(shape, sizeof(shape), "[");
            for (int e = 0; e < rank && used < (int)sizeof(shape); e++)
                used += snprintf(shape + used, sizeof(shape) - used, e ? ", %lld" : "%lld", (long long)dims[e]);
            if (used < (int)sizeof(shape)) snprintf(shape + used, sizeof(shape) - used, "]");
            return rt_library_error(ctx, op, where, "index %s (at position %lld of the indices) is out of bounds for "
                                    "shape %s", tuple, (long long)row, shape);
        }
        pos = pos * dims[d] + v;
    }
    *position = pos;
    return 0;
}

/* out[r] := the slice (slice_bytes) of params [dims] at index tuple r, for r < count. */
static int rt_gather_nd(rt_ctx *ctx, const char *params, const int64_t *dims, int rank, int m, const void *indices,
                        int wide, int64_t count, int64_t slice_bytes, char *out, const char *where) {
    for (int64_t r = 0; r < count; r++) {
        int64_t pos;
        if (rt_index_position(ctx, "GatherNd", where, indices, wide, r, m, dims, rank, &pos)) return -1;
        memcpy(out + r * slice_bytes, params + pos * slice_bytes, (size_t)slice_bytes);
    }
    return 0;
}

/* out [dims] := zeros, then updates[r] (a slice of `slice` elements) added at index tuple r, in order. */
#define RT_DEFINE_SCATTER_ND(T, S) \
static int rt_scatter_nd_##S(rt_ctx *ctx, const void *indices, int wide, int64_t count, int m, const T *updates, \
                             int64_t slice, T *out, const int64_t *dims, int rank, const char *where) { \
    int64_t total = slice; \
    for (int d = 0; d < m; d++) total *= dims[d]; \
    memset(out, 0, (size_t)total * sizeof(T)); \
    for (int64_t r = 0; r < count; r++) { \
        int64_t pos; \
        if (rt_index_position(ctx, "ScatterNd", where, indices, wide, r, m, dims, rank, &pos)) return -1; \
        T *target = out + pos * slice; \
        const T *source = updates + r * slice; \
        for (int64_t e = 0; e < slice; e++) target[e] = (T)(target[e] + source[e]); \
    } \
    return 0; \
}
RT_DEFINE_SCATTER_ND(int8_t, int8)
RT_DEFINE_SCATTER_ND(int16_t, int16)
RT_DEFINE_SCATTER_ND(int32_t, int32)
RT_DEFINE_SCATTER_ND(int64_t, int64)
RT_DEFINE_SCATTER_ND(uint8_t, uint8)
RT_DEFINE_SCATTER_ND(float, float32)
RT_DEFINE_SCATTER_ND(double, float64)

/* Where: how many elements of mask [n] are true, then their positions as index tuples out [count, rank]. */
static int64_t rt_where_count(const rt_bool *mask, int64_t n) {
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) count += mask[i] != 0;
    return count;
}

static void rt_where_fill(const rt_bool *mask, const int64_t *dims, int rank, int64_t n, int64_t *out) {
    int64_t row = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!mask[i]) continue;
        int64_t rest = i;
        for (int d = rank - 1; d >= 0; d--) {
            out[row * rank + d] = dims[d] ? rest % dims[d] : 0;
            rest = dims[d] ? rest / dims[d] : 0;
        }
        row++;
    }
}

#endif
