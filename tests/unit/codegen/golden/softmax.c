static int rt_fn_softmax(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int64_t n1 = in[0].shape[0];
    float * x2 = (float *)in[0].data;
    float * p3 = NULL;
    if (!(p3 = (float *)rt_alloc_array(ctx, 16 * n1, sizeof(float)))) goto fail;
    if ((16 * n1) >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
        #pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
        for (int64_t k4 = 0; k4 < n1; k4++) {
            __attribute__((aligned(64))) float scratch6[16];
            float acc7 = -INFINITY;
            int acc7_nan = 0;
            #pragma omp simd reduction(max:acc7) reduction(|:acc7_nan)
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float v8 = x2[16 * k4 + r5];
                acc7 = (v8 > acc7 ? v8 : acc7);
                acc7_nan = acc7_nan | (v8 != v8);
            }
            float row9 = (acc7_nan ? (float)NAN : acc7);
            double acc11 = 0;
            #pragma omp simd reduction(+:acc11)
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float e10 = ((float)rt_exp_float32(((float)(x2[16 * k4 + r5] - row9))));
                scratch6[r5] = e10;
                acc11 = (acc11 + ((double)e10));
            }
            float row12 = ((float)acc11);
            #pragma omp simd
            for (int64_t r5 = 0; r5 < 16; r5++) {
                p3[16 * k4 + r5] = ((float)((float)(scratch6[r5] / row12)));
            }
        }
    } else {
        for (int64_t k4 = 0; k4 < n1; k4++) {
            __attribute__((aligned(64))) float scratch6[16];
            float acc7 = -INFINITY;
            int acc7_nan = 0;
            #pragma omp simd reduction(max:acc7) reduction(|:acc7_nan)
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float v8 = x2[16 * k4 + r5];
                acc7 = (v8 > acc7 ? v8 : acc7);
                acc7_nan = acc7_nan | (v8 != v8);
            }
            float row9 = (acc7_nan ? (float)NAN : acc7);
            double acc11 = 0;
            #pragma omp simd reduction(+:acc11)
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float e10 = ((float)rt_exp_float32(((float)(x2[16 * k4 + r5] - row9))));
                scratch6[r5] = e10;
                acc11 = (acc11 + ((double)e10));
            }
            float row12 = ((float)acc11);
            #pragma omp simd
            for (int64_t r5 = 0; r5 < 16; r5++) {
                p3[16 * k4 + r5] = ((float)((float)(scratch6[r5] / row12)));
            }
        }
    }
    out[0].data = (void *)(p3); out[0].ndim = 2; out[0].shape[0] = n1; out[0].shape[1] = 16; out[0].dtype = 7; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
