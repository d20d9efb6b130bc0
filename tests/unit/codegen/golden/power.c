static int rt_fn_power(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int32_t * x1 = ((int32_t *)in[0].data);
    __attribute__((aligned(64))) static const int32_t k2[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    int32_t * p3 = NULL;
    __attribute__((aligned(64))) int32_t buf4[9];
    int32_t * p5 = NULL;
    __attribute__((aligned(64))) int32_t buf6[9];
    int32_t * p7 = NULL;
    /* MatMul = MatMul */
    p3 = buf4;
    rt_matmul_small_int32(x1, 3, k2, 3, p3, 3, 3, 3, 3, 0, 0);
    /* MatMul_1 = MatMul */
    p5 = buf6;
    rt_matmul_small_int32(x1, 3, p3, 3, p5, 3, 3, 3, 3, 0, 0);
    /* MatMul_2 = MatMul */
    if (!(p7 = (int32_t *)rt_alloc_array(ctx, 9, sizeof(int32_t)))) goto fail;
    rt_matmul_small_int32(x1, 3, p5, 3, p7, 3, 3, 3, 3, 0, 0);
    out[0].data = (void *)(p7); out[0].ndim = 2; out[0].shape[0] = 3; out[0].shape[1] = 3; out[0].dtype = 3; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
