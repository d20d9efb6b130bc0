static int rt_fn_pairwise(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int64_t n1 = in[0].shape[0];
    float * x2 = ((float *)in[0].data);
    int64_t n3 = in[1].shape[0];
    float * x4 = ((float *)in[1].data);
    float * p11 = NULL;
    /* reduce_sum = Sum */
    if (!(p11 = (float *)rt_alloc_array(ctx, n1 * n3, sizeof(float)))) goto fail;
    if (n3 == 1LL) {
        if (3 * n1 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
            #pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)
            for (int64_t k12 = 0; k12 < n1; k12++) {
                double acc15 = 0;
                acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12] - x4[0])), 2.0f))));
                acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12 + 1] - x4[1])), 2.0f))));
                acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12 + 2] - x4[2])), 2.0f))));
                p11[k12] = ((float)acc15);
            }
        } else {
            #pragma omp simd
            for (int64_t k12 = 0; k12 < n1; k12++) {
                double acc15 = 0;
                acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12] - x4[0])), 2.0f))));
                acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12 + 1] - x4[1])), 2.0f))));
                acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12 + 2] - x4[2])), 2.0f))));
                p11[k12] = ((float)acc15);
            }
        }
    } else {
        if (3 * n1 * n3 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
            #pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
            for (int64_t k12 = 0; k12 < n1; k12++) {
                #pragma omp simd
                for (int64_t k13 = 0; k13 < n3; k13++) {
                    double acc15 = 0;
                    acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12] - x4[3 * k13])), 2.0f))));
                    acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12 + 1] - x4[3 * k13 + 1])), 2.0f))));
                    acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12 + 2] - x4[3 * k13 + 2])), 2.0f))));
                    p11[k12 * n3 + k13] = ((float)acc15);
                }
            }
        } else {
            for (int64_t k12 = 0; k12 < n1; k12++) {
                #pragma omp simd
                for (int64_t k13 = 0; k13 < n3; k13++) {
                    double acc15 = 0;
                    acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12] - x4[3 * k13])), 2.0f))));
                    acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12 + 1] - x4[3 * k13 + 1])), 2.0f))));
                    acc15 = (acc15 + ((double)((float)rt_pow_float32(((float)(x2[3 * k12 + 2] - x4[3 * k13 + 2])), 2.0f))));
                    p11[k12 * n3 + k13] = ((float)acc15);
                }
            }
        }
    }
    out[0].data = (void *)(p11); out[0].ndim = 2; out[0].shape[0] = n1; out[0].shape[1] = n3; out[0].dtype = 7; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
