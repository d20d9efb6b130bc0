static int rt_fn_chain(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int64_t n1 = in[0].shape[0];
    float * x2 = ((float *)in[0].data);
    float * p4 = NULL;
    /* Identity = Identity */
    if (!(p4 = (float *)rt_alloc_array(ctx, n1, sizeof(float)))) goto fail;
    if (n1 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
        #pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)
        for (int64_t i5 = 0; i5 < n1; i5++) {
            p4[i5] = ((float)((float)(((float)(((float)rt_tanh_float32(((float)(((float)(x2[i5] * 1.5f)) + 0.5f)))) * 2.0f)) - x2[i5])));
        }
    } else {
        #pragma omp simd
        for (int64_t i5 = 0; i5 < n1; i5++) {
            p4[i5] = ((float)((float)(((float)(((float)rt_tanh_float32(((float)(((float)(x2[i5] * 1.5f)) + 0.5f)))) * 2.0f)) - x2[i5])));
        }
    }
    out[0].data = (void *)(p4); out[0].ndim = 1; out[0].shape[0] = n1; out[0].dtype = 7; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
