static int rt_fn_power(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int32_t * x1 = (int32_t *)in[0].data;
    int32_t * p4 = NULL;
    __attribute__((aligned(64))) int32_t buf5[9];
    int32_t * p8 = NULL;
    __attribute__((aligned(64))) int32_t buf9[9];
    int32_t * p10 = NULL;
    int32_t * p11 = NULL;
    int32_t * p14 = NULL;
    /* eye = Eye */
    p4 = buf5;
    for (int64_t i6 = 0; i6 < 3; i6++) {
        #pragma omp simd
        for (int64_t i7 = 0; i7 < 3; i7++) {
            p4[3 * i6 + i7] = ((int32_t)((i6) == (i7)));
        }
    }
    /* MatMul = MatMul */
    p8 = buf9;
    rt_matmul_int32(x1, p4, p8, 3, 3, 3);
    /* MatMul_1 = MatMul */
    p10 = buf5;
    rt_matmul_int32(x1, p8, p10, 3, 3, 3);
    /* MatMul_2 = MatMul */
    p11 = buf9;
    rt_matmul_int32(x1, p10, p11, 3, 3, 3);
    /* Identity = Identity */
    if (!(p14 = (int32_t *)rt_alloc_array(ctx, 9, sizeof(int32_t)))) goto fail;
    #pragma omp simd
    for (int64_t i17 = 0; i17 < 9; i17++) {
        p14[i17] = ((int32_t)p11[i17]);
    }
    out[0].data = (void *)(p14); out[0].ndim = 2; out[0].shape[0] = 3; out[0].shape[1] = 3; out[0].dtype = 3; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
