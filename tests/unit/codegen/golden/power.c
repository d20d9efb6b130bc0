static int rt_fn_power(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    __attribute__((aligned(64))) char buf2[36];
    __attribute__((aligned(64))) char buf4[36];
    /* eye = Eye */
    rt_tensor t1; t1.owner = NULL; t1.dtype = 3;
    t1.ndim = 2; t1.shape[0] = 3; t1.shape[1] = 3;
    t1.data = (void *)buf2;
    memset(t1.data, 0, (size_t)9 * sizeof(int32_t));
    for (int64_t i = 0; i < 3; i++) ((int32_t *)t1.data)[i * 3 + i] = 1;
    /* MatMul = MatMul */
    rt_tensor t3; t3.owner = NULL; t3.dtype = 3;
    t3.ndim = 2; t3.shape[0] = 3; t3.shape[1] = 3;
    t3.data = (void *)buf4;
    rt_matmul_int32(((int32_t *)in[0].data), ((int32_t *)t1.data), ((int32_t *)t3.data), 3, 3, 3);
    /* MatMul_1 = MatMul */
    rt_tensor t5; t5.owner = NULL; t5.dtype = 3;
    t5.ndim = 2; t5.shape[0] = 3; t5.shape[1] = 3;
    t5.data = (void *)buf2;
    rt_matmul_int32(((int32_t *)in[0].data), ((int32_t *)t3.data), ((int32_t *)t5.data), 3, 3, 3);
    /* MatMul_2 = MatMul */
    rt_tensor t6; t6.owner = NULL; t6.dtype = 3;
    t6.ndim = 2; t6.shape[0] = 3; t6.shape[1] = 3;
    t6.data = (void *)buf4;
    rt_matmul_int32(((int32_t *)in[0].data), ((int32_t *)t5.data), ((int32_t *)t6.data), 3, 3, 3);
    /* Identity = Identity */
    rt_tensor t7; t7.owner = NULL; t7.dtype = 3;
    t7.ndim = 2; t7.shape[0] = 3; t7.shape[1] = 3;
    if (rt_alloc_tensor(ctx, &t7)) goto fail;
    if (1) {
        int32_t *restrict po = (int32_t *)t7.data;const int32_t *restrict p8 = ((int32_t *)t6.data);
        const int64_t rt_n = 9;
         {
            #pragma omp simd
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)p8[k]);
        }
    }
    out[0] = t7;
    return 0;
fail:
    return -1;
}
