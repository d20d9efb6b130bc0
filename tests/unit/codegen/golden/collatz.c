static int rt_fn_collatz(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int64_t n1 = in[0].shape[0];
    int32_t * x2 = ((int32_t *)in[0].data);
    int32_t * p4 = NULL;
    /* Identity = Identity */
    if (!(p4 = (int32_t *)rt_alloc_array(ctx, n1, sizeof(int32_t)))) goto fail;
    if (n1 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
        #pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)
        for (int64_t i5 = 0; i5 < n1; i5++) {
            p4[i5] = ((int32_t)((int32_t)rt_select_int32(((rt_bool)(((int32_t)rt_floormod_int32(x2[i5], 2)) == 0)), ((int32_t)rt_floordiv_int32(x2[i5], 2)), ((int32_t)(((int32_t)(3 * x2[i5])) + 1)))));
        }
    } else {
        #pragma omp simd
        for (int64_t i5 = 0; i5 < n1; i5++) {
            p4[i5] = ((int32_t)((int32_t)rt_select_int32(((rt_bool)(((int32_t)rt_floormod_int32(x2[i5], 2)) == 0)), ((int32_t)rt_floordiv_int32(x2[i5], 2)), ((int32_t)(((int32_t)(3 * x2[i5])) + 1)))));
        }
    }
    out[0].data = (void *)(p4); out[0].ndim = 1; out[0].shape[0] = n1; out[0].dtype = 3; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
