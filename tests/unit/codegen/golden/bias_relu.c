static int rt_fn_bias_relu_any(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int64_t n1 = in[0].shape[0];
    int64_t n2 = in[0].shape[1];
    float * x3 = ((float *)in[0].data);
    int64_t n4 = in[1].shape[0];
    float * x5 = ((float *)in[1].data);
    int64_t n6 = 0;
    float * p9 = NULL;
    n6 = n2 != 1 ? n2 : (n4 != 1 ? n4 : 1);
    if (n2 != n6 && n2 != 1) { snprintf(ctx->msg, sizeof(ctx->msg), "AddV2: incompatible shapes for broadcasting: dimension 1 is %lld in one operand and %lld in another\n  [[op 'add' (AddV2) created at File \"<golden>/programs.py\", line 11, in bias_relu]]", (long long)(n2), (long long)(n6)); goto fail; }
    if (n4 != n6 && n4 != 1) { snprintf(ctx->msg, sizeof(ctx->msg), "AddV2: incompatible shapes for broadcasting: dimension 1 is %lld in one operand and %lld in another\n  [[op 'add' (AddV2) created at File \"<golden>/programs.py\", line 11, in bias_relu]]", (long long)(n4), (long long)(n6)); goto fail; }
    /* Identity = Identity */
    if (!(p9 = (float *)rt_alloc_array(ctx, n1 * n6, sizeof(float)))) goto fail;
    if (n2 == n6 && n4 == n6) {
        if (n6 == 1LL) {
            if (n1 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
                #pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)
                for (int64_t i10 = 0; i10 < n1; i10++) {
                    p9[i10] = ((float)((float)rt_relu_float32(((float)(x3[i10 * n2] + x5[0])))));
                }
            } else {
                #pragma omp simd
                for (int64_t i10 = 0; i10 < n1; i10++) {
                    p9[i10] = ((float)((float)rt_relu_float32(((float)(x3[i10 * n2] + x5[0])))));
                }
            }
        } else {
            if (n1 * n6 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
                #pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
                for (int64_t i10 = 0; i10 < n1; i10++) {
                    #pragma omp simd
                    for (int64_t i11 = 0; i11 < n6; i11++) {
                        p9[i10 * n6 + i11] = ((float)((float)rt_relu_float32(((float)(x3[i10 * n2 + i11] + x5[i11])))));
                    }
                }
            } else {
                for (int64_t i10 = 0; i10 < n1; i10++) {
                    #pragma omp simd
                    for (int64_t i11 = 0; i11 < n6; i11++) {
                        p9[i10 * n6 + i11] = ((float)((float)rt_relu_float32(((float)(x3[i10 * n2 + i11] + x5[i11])))));
                    }
                }
            }
        }
    } else {
        int64_t nb12 = n2 != 1;
        int64_t nb13 = n4 != 1;
        for (int64_t i10 = 0; i10 < n1; i10++) {
            #pragma omp simd
            for (int64_t i11 = 0; i11 < n6; i11++) {
                p9[i10 * n6 + i11] = ((float)((float)rt_relu_float32(((float)(x3[i10 * n2 + i11 * nb12] + x5[i11 * nb13])))));
            }
        }
    }
    out[0].data = (void *)(p9); out[0].ndim = 2; out[0].shape[0] = n1; out[0].shape[1] = n6; out[0].dtype = 7; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}

static int rt_fn_bias_relu(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    if (!(in[1].shape[0] == in[0].shape[1])) return rt_fn_bias_relu_any(ctx, in, out);
    int64_t n1 = in[0].shape[0];
    int64_t n2 = in[0].shape[1];
    float * x3 = ((float *)in[0].data);
    float * x4 = ((float *)in[1].data);
    float * p7 = NULL;
    /* Identity = Identity */
    if (!(p7 = (float *)rt_alloc_array(ctx, n1 * n2, sizeof(float)))) goto fail;
    if (n2 == 1LL) {
        if (n1 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
            #pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)
            for (int64_t i8 = 0; i8 < n1; i8++) {
                p7[i8] = ((float)((float)rt_relu_float32(((float)(x3[i8] + x4[0])))));
            }
        } else {
            #pragma omp simd
            for (int64_t i8 = 0; i8 < n1; i8++) {
                p7[i8] = ((float)((float)rt_relu_float32(((float)(x3[i8] + x4[0])))));
            }
        }
    } else {
        if (n1 * n2 >= RT_PARALLEL_MIN && ctx->num_threads > 1) {
            #pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
            for (int64_t i8 = 0; i8 < n1; i8++) {
                #pragma omp simd
                for (int64_t i9 = 0; i9 < n2; i9++) {
                    p7[i8 * n2 + i9] = ((float)((float)rt_relu_float32(((float)(x3[i8 * n2 + i9] + x4[i9])))));
                }
            }
        } else {
            for (int64_t i8 = 0; i8 < n1; i8++) {
                #pragma omp simd
                for (int64_t i9 = 0; i9 < n2; i9++) {
                    p7[i8 * n2 + i9] = ((float)((float)rt_relu_float32(((float)(x3[i8 * n2 + i9] + x4[i9])))));
                }
            }
        }
    }
    out[0].data = (void *)(p7); out[0].ndim = 2; out[0].shape[0] = n1; out[0].shape[1] = n2; out[0].dtype = 7; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
