static int rt_fn_softmax(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int64_t n1 = in[0].shape[0];
    float * x2 = ((float *)in[0].data);
    float * p3 = NULL;
    if (!(p3 = (float *)rt_alloc_array(ctx, 16 * n1, sizeof(float)))) goto fail;
    if (16 * n1 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
        #pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
        for (int64_t k4 = 0; k4 < n1; k4++) {
            float acc6 = ((float)-INFINITY);
            int acc6_nan = 0;
            #pragma omp simd reduction(max:acc6) reduction(|:acc6_nan)
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float v8 = x2[16 * k4 + r5];
                acc6 = v8 > acc6 ? v8 : acc6;
                acc6_nan = acc6_nan | (v8 != v8);
            }
            float row9 = acc6_nan ? ((float)NAN) : acc6;
            double acc11 = 0;
            float part12 = 0;
            #pragma omp simd reduction(+:part12)
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float e10 = ((float)rt_exp_float32(((float)(x2[16 * k4 + r5] - row9))));
                p3[16 * k4 + r5] = e10;
                part12 = (part12 + ((float)e10));
            }
            acc11 = (acc11 + part12);
            float row14 = ((float)acc11);
            float inv15 = ((float)1) / row14;
            if (fabsf(row14) >= 0x1p-126f && fabsf(row14) <= 0x1p126f) {
                #pragma omp simd
                for (int64_t r5 = 0; r5 < 16; r5++) {
                    p3[16 * k4 + r5] = ((float)(p3[16 * k4 + r5] * inv15));
                }
            } else {
                #pragma omp simd
                for (int64_t r5 = 0; r5 < 16; r5++) {
                    p3[16 * k4 + r5] = ((float)((float)(p3[16 * k4 + r5] / row14)));
                }
            }
        }
    } else {
        for (int64_t k4 = 0; k4 < n1; k4++) {
            float acc6 = ((float)-INFINITY);
            int acc6_nan = 0;
            #pragma omp simd reduction(max:acc6) reduction(|:acc6_nan)
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float v8 = x2[16 * k4 + r5];
                acc6 = v8 > acc6 ? v8 : acc6;
                acc6_nan = acc6_nan | (v8 != v8);
            }
            float row9 = acc6_nan ? ((float)NAN) : acc6;
            double acc11 = 0;
            float part12 = 0;
            #pragma omp simd reduction(+:part12)
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float e10 = ((float)rt_exp_float32(((float)(x2[16 * k4 + r5] - row9))));
                p3[16 * k4 + r5] = e10;
                part12 = (part12 + ((float)e10));
            }
            acc11 = (acc11 + part12);
            float row14 = ((float)acc11);
            float inv15 = ((float)1) / row14;
            if (fabsf(row14) >= 0x1p-126f && fabsf(row14) <= 0x1p126f) {
                #pragma omp simd
                for (int64_t r5 = 0; r5 < 16; r5++) {
                    p3[16 * k4 + r5] = ((float)(p3[16 * k4 + r5] * inv15));
                }
            } else {
                #pragma omp simd
                for (int64_t r5 = 0; r5 < 16; r5++) {
                    p3[16 * k4 + r5] = ((float)((float)(p3[16 * k4 + r5] / row14)));
                }
            }
        }
    }
    out[0].data = (void *)(p3); out[0].ndim = 2; out[0].shape[0] = n1; out[0].shape[1] = 16; out[0].dtype = 7; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
