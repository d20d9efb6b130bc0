static int rt_fn_softmax(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int64_t n1 = in[0].shape[0];
    float * x2 = ((float *)in[0].data);
    float * p3 = NULL;
    if (!(p3 = (float *)rt_alloc_array(ctx, 16 * n1, sizeof(float)))) goto fail;
    if (64 * n1 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
        #pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
        for (int64_t k4 = 0; k4 < n1; k4++) {
            __attribute__((aligned(64))) float scratch6[16];
            float acc7 = ((float)-INFINITY);
            int acc7_nan = 0;
            #pragma omp simd reduction(max:acc7) reduction(|:acc7_nan)
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float v9 = x2[16 * k4 + r5];
                acc7 = v9 > acc7 ? v9 : acc7;
                acc7_nan = acc7_nan | (v9 != v9);
            }
            float row10 = acc7_nan ? ((float)NAN) : acc7;
            #pragma omp simd
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float e11 = ((float)rt_exp_float32(((float)(x2[16 * k4 + r5] - row10))));
                scratch6[r5] = e11;
            }
            double acc12 = 0;
            float part13 = 0;
            __attribute__((aligned(64))) float lanes17[16];
            #pragma omp simd
            for (int64_t l18 = 0; l18 < 16; l18++) {
                lanes17[l18] = 0 + ((float)scratch6[l18]);
            }
            part13 = part13 + rt_tree_sum16_float(((const float *)lanes17));
            acc12 = (acc12 + part13);
            float row15 = ((float)acc12);
            float inv16 = ((float)1) / row15;
            if (fabsf(row15) >= 0x1p-126f && fabsf(row15) <= 0x1p126f) {
                #pragma omp simd
                for (int64_t r5 = 0; r5 < 16; r5++) {
                    p3[16 * k4 + r5] = ((float)(scratch6[r5] * inv16));
                }
            } else {
                #pragma omp simd
                for (int64_t r5 = 0; r5 < 16; r5++) {
                    p3[16 * k4 + r5] = ((float)((float)(scratch6[r5] / row15)));
                }
            }
        }
    } else {
        for (int64_t k4 = 0; k4 < n1; k4++) {
            __attribute__((aligned(64))) float scratch6[16];
            float acc7 = ((float)-INFINITY);
            int acc7_nan = 0;
            #pragma omp simd reduction(max:acc7) reduction(|:acc7_nan)
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float v9 = x2[16 * k4 + r5];
                acc7 = v9 > acc7 ? v9 : acc7;
                acc7_nan = acc7_nan | (v9 != v9);
            }
            float row10 = acc7_nan ? ((float)NAN) : acc7;
            #pragma omp simd
            for (int64_t r5 = 0; r5 < 16; r5++) {
                float e11 = ((float)rt_exp_float32(((float)(x2[16 * k4 + r5] - row10))));
                scratch6[r5] = e11;
            }
            double acc12 = 0;
            float part13 = 0;
            __attribute__((aligned(64))) float lanes17[16];
            #pragma omp simd
            for (int64_t l18 = 0; l18 < 16; l18++) {
                lanes17[l18] = 0 + ((float)scratch6[l18]);
            }
            part13 = part13 + rt_tree_sum16_float(((const float *)lanes17));
            acc12 = (acc12 + part13);
            float row15 = ((float)acc12);
            float inv16 = ((float)1) / row15;
            if (fabsf(row15) >= 0x1p-126f && fabsf(row15) <= 0x1p126f) {
                #pragma omp simd
                for (int64_t r5 = 0; r5 < 16; r5++) {
                    p3[16 * k4 + r5] = ((float)(scratch6[r5] * inv16));
                }
            } else {
                #pragma omp simd
                for (int64_t r5 = 0; r5 < 16; r5++) {
                    p3[16 * k4 + r5] = ((float)((float)(scratch6[r5] / row15)));
                }
            }
        }
    }
    out[0].data = (void *)(p3); out[0].ndim = 2; out[0].shape[0] = n1; out[0].shape[1] = 16; out[0].dtype = 7; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
