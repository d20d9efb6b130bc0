static int rt_fn_bias_relu(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    /* Identity = Identity */
    rt_tensor t1; t1.owner = NULL; t1.dtype = 7;
    t1.ndim = 2;
    t1.shape[0] = 1;
    if (in[0].shape[0] != 1) { if (t1.shape[0] == 1) t1.shape[0] = in[0].shape[0]; else if (t1.shape[0] != in[0].shape[0]) { snprintf(ctx->msg, sizeof(ctx->msg), "Identity (Identity): incompatible shapes for broadcasting at dimension 0: %lld vs %lld", (long long)(t1.shape[0]), (long long)(in[0].shape[0])); goto fail; } }
    t1.shape[1] = 1;
    if (in[0].shape[1] != 1) { if (t1.shape[1] == 1) t1.shape[1] = in[0].shape[1]; else if (t1.shape[1] != in[0].shape[1]) { snprintf(ctx->msg, sizeof(ctx->msg), "Identity (Identity): incompatible shapes for broadcasting at dimension 1: %lld vs %lld", (long long)(t1.shape[1]), (long long)(in[0].shape[1])); goto fail; } }
    if (in[1].shape[0] != 1) { if (t1.shape[1] == 1) t1.shape[1] = in[1].shape[0]; else if (t1.shape[1] != in[1].shape[0]) { snprintf(ctx->msg, sizeof(ctx->msg), "Identity (Identity): incompatible shapes for broadcasting at dimension 1: %lld vs %lld", (long long)(t1.shape[1]), (long long)(in[1].shape[0])); goto fail; } }
    if (rt_alloc_tensor(ctx, &t1)) goto fail;
    if (rt_same_shape(&in[0], &t1) && rt_same_shape(&in[1], &t1)) {
        float *restrict po = (float *)t1.data;const float *restrict p2 = ((float *)in[0].data); const float *restrict p3 = ((float *)in[1].data);
        const int64_t rt_n = rt_numel(&t1);
        if (rt_n >= 65536 && ctx->num_threads > 1) {
            #pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((float)((float)rt_relu_float32(((float)(p2[k] + p3[k])))));
        }
        else
         {
            #pragma omp simd
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((float)((float)rt_relu_float32(((float)(p2[k] + p3[k])))));
        }
    }
    else if (rt_same_shape(&in[0], &t1) && in[1].shape[0] == t1.shape[1])
     {
        float *restrict po = (float *)t1.data; const float *restrict p4 = ((float *)in[0].data); const float *restrict p5 = ((float *)in[1].data);
        const int64_t inner = t1.shape[1], outer = inner ? rt_numel(&t1) / inner : 0;
        if (outer * inner >= 65536 && outer > 1 && ctx->num_threads > 1) {
            #pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
            for (int64_t o = 0; o < outer; o++) { float *restrict row = po + o * inner; _Pragma("omp simd") for (int64_t i = 0; i < inner; i++) row[i] = ((float)((float)rt_relu_float32(((float)(p4[o * inner + i] + p5[i]))))); }
        }
        else
         {
            for (int64_t o = 0; o < outer; o++) { float *restrict row = po + o * inner; _Pragma("omp simd") for (int64_t i = 0; i < inner; i++) row[i] = ((float)((float)rt_relu_float32(((float)(p4[o * inner + i] + p5[i]))))); }
        }
    }
    else {
        float *po = (float *)t1.data;
        int64_t idx[2]; for (int d = 0; d < 2; d++) idx[d] = 0;
        int64_t off0 = 0, st0[2];
        { int64_t s = 1; for (int d = 2 - 1; d >= 0; d--) { int ld = d - 0; if (ld < 0) { st0[d] = 0; continue; } st0[d] = (in[0].shape[ld] == 1) ? 0 : s; s *= in[0].shape[ld]; } }
        int64_t off1 = 0, st1[2];
        { int64_t s = 1; for (int d = 2 - 1; d >= 0; d--) { int ld = d - 1; if (ld < 0) { st1[d] = 0; continue; } st1[d] = (in[1].shape[ld] == 1) ? 0 : s; s *= in[1].shape[ld]; } }
        for (int64_t k = 0; k < rt_numel(&t1); k++) {
            po[k] = ((float)((float)rt_relu_float32(((float)(((float *)in[0].data)[off0] + ((float *)in[1].data)[off1])))));
            for (int d = 2 - 1; d >= 0; d--) {
                idx[d]++; off0 += st0[d]; off1 += st1[d];
                if (idx[d] < t1.shape[d]) break;
                idx[d] = 0; off0 -= st0[d] * t1.shape[d]; off1 -= st1[d] * t1.shape[d];
            }
        }
    }
    out[0] = t1;
    return 0;
fail:
    return -1;
}
