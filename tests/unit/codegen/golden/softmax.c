static int rt_fn_softmax(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int64_t n1 = in[0].shape[0];
    float * x2 = ((float *)in[0].data);
    float * p3 = NULL;
    if (!(p3 = (float *)rt_alloc_array(ctx, 16 * n1, sizeof(float)))) goto fail;
    int64_t nt19 = ctx->num_threads;
    if (64 * n1 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
        #pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
        for (int64_t t20 = 0; t20 < nt19; t20++) {
            int64_t lo21 = n1 * t20 / nt19;
            int64_t hi22 = n1 * (t20 + 1) / nt19;
            float ahead23;
            if (lo21 < hi22) {
                float acc26 = ((float)-INFINITY);
                int acc26_nan = 0;
                #pragma omp simd reduction(max:acc26) reduction(|:acc26_nan)
                for (int64_t r5 = 0; r5 < 16; r5++) {
                    float v27 = x2[16 * lo21 + r5];
                    acc26 = v27 > acc26 ? v27 : acc26;
                    acc26_nan = acc26_nan | (v27 != v27);
                }
                ahead23 = acc26_nan ? ((float)NAN) : acc26;
                for (int64_t k4 = lo21; k4 < hi22; k4++) {
                    float row10 = ahead23;
                    if (k4 + 1 < hi22) {
                        float acc24 = ((float)-INFINITY);
                        int acc24_nan = 0;
                        #pragma omp simd reduction(max:acc24) reduction(|:acc24_nan)
                        for (int64_t r5 = 0; r5 < 16; r5++) {
                            float v25 = x2[16 * k4 + r5 + 16];
                            acc24 = v25 > acc24 ? v25 : acc24;
                            acc24_nan = acc24_nan | (v25 != v25);
                        }
                        ahead23 = acc24_nan ? ((float)NAN) : acc24;
                    }
                    __attribute__((aligned(64))) float scratch6[16];
                    #pragma omp simd
                    for (int64_t r5 = 0; r5 < 16; r5++) {
                        float e11 = rt_exp_nonpositive_float32(((float)(x2[16 * k4 + r5] - row10)));
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
        }
    } else {
        for (int64_t t20 = 0; t20 < nt19; t20++) {
            int64_t lo21 = n1 * t20 / nt19;
            int64_t hi22 = n1 * (t20 + 1) / nt19;
            float ahead23;
            if (lo21 < hi22) {
                float acc26 = ((float)-INFINITY);
                int acc26_nan = 0;
                #pragma omp simd reduction(max:acc26) reduction(|:acc26_nan)
                for (int64_t r5 = 0; r5 < 16; r5++) {
                    float v27 = x2[16 * lo21 + r5];
                    acc26 = v27 > acc26 ? v27 : acc26;
                    acc26_nan = acc26_nan | (v27 != v27);
                }
                ahead23 = acc26_nan ? ((float)NAN) : acc26;
                for (int64_t k4 = lo21; k4 < hi22; k4++) {
                    float row10 = ahead23;
                    if (k4 + 1 < hi22) {
                        float acc24 = ((float)-INFINITY);
                        int acc24_nan = 0;
                        #pragma omp simd reduction(max:acc24) reduction(|:acc24_nan)
                        for (int64_t r5 = 0; r5 < 16; r5++) {
                            float v25 = x2[16 * k4 + r5 + 16];
                            acc24 = v25 > acc24 ? v25 : acc24;
                            acc24_nan = acc24_nan | (v25 != v25);
                        }
                        ahead23 = acc24_nan ? ((float)NAN) : acc24;
                    }
                    __attribute__((aligned(64))) float scratch6[16];
                    #pragma omp simd
                    for (int64_t r5 = 0; r5 < 16; r5++) {
                        float e11 = rt_exp_nonpositive_float32(((float)(x2[16 * k4 + r5] - row10)));
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
        }
    }
    out[0].data = (void *)(p3); out[0].ndim = 2; out[0].shape[0] = n1; out[0].shape[1] = 16; out[0].dtype = 7; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
