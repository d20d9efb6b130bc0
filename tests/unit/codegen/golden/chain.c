static int rt_fn_chain(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    /* Const = Const */
    static const float k1[1] = {1.5f};
    rt_tensor t2; t2.owner = NULL; t2.dtype = 7;
    t2.ndim = 0;
    t2.data = (void *)k1;
    /* Const_1 = Const */
    static const float k3[1] = {0.5f};
    rt_tensor t4; t4.owner = NULL; t4.dtype = 7;
    t4.ndim = 0;
    t4.data = (void *)k3;
    /* Const_2 = Const */
    static const float k5[1] = {2.0f};
    rt_tensor t6; t6.owner = NULL; t6.dtype = 7;
    t6.ndim = 0;
    t6.data = (void *)k5;
    /* Identity = Identity */
    rt_tensor t7; t7.owner = NULL; t7.dtype = 7;
    t7.ndim = 1;
    t7.shape[0] = 1;
    if (in[0].shape[0] != 1) { if (t7.shape[0] == 1) t7.shape[0] = in[0].shape[0]; else if (t7.shape[0] != in[0].shape[0]) { snprintf(ctx->msg, sizeof(ctx->msg), "Identity (Identity): incompatible shapes for broadcasting at dimension 0: %lld vs %lld", (long long)(t7.shape[0]), (long long)(in[0].shape[0])); goto fail; } }
    if (rt_alloc_tensor(ctx, &t7)) goto fail;
    if (rt_same_shape(&in[0], &t7)) {
        float *restrict po = (float *)t7.data;const float *restrict p8 = ((float *)in[0].data); const float *restrict p9 = ((float *)t2.data); const float *restrict p10 = ((float *)t4.data); const float *restrict p11 = ((float *)t6.data);
        const int64_t rt_n = rt_numel(&t7);
        if (rt_n >= 65536 && ctx->num_threads > 1) {
            #pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((float)((float)(((float)(((float)rt_tanh_float32(((float)(((float)(p8[k] * p9[0])) + p10[0])))) * p11[0])) - p8[k])));
        }
        else
         {
            #pragma omp simd
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((float)((float)(((float)(((float)rt_tanh_float32(((float)(((float)(p8[k] * p9[0])) + p10[0])))) * p11[0])) - p8[k])));
        }
    }
    else {
        float *po = (float *)t7.data;
        int64_t idx[1]; for (int d = 0; d < 1; d++) idx[d] = 0;
        int64_t off0 = 0, st0[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 0; if (ld < 0) { st0[d] = 0; continue; } st0[d] = (in[0].shape[ld] == 1) ? 0 : s; s *= in[0].shape[ld]; } }
        int64_t off1 = 0, st1[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 1; if (ld < 0) { st1[d] = 0; continue; } st1[d] = (t2.shape[ld] == 1) ? 0 : s; s *= t2.shape[ld]; } }
        int64_t off2 = 0, st2[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 1; if (ld < 0) { st2[d] = 0; continue; } st2[d] = (t4.shape[ld] == 1) ? 0 : s; s *= t4.shape[ld]; } }
        int64_t off3 = 0, st3[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 1; if (ld < 0) { st3[d] = 0; continue; } st3[d] = (t6.shape[ld] == 1) ? 0 : s; s *= t6.shape[ld]; } }
        for (int64_t k = 0; k < rt_numel(&t7); k++) {
            po[k] = ((float)((float)(((float)(((float)rt_tanh_float32(((float)(((float)(((float *)in[0].data)[off0] * ((float *)t2.data)[off1])) + ((float *)t4.data)[off2])))) * ((float *)t6.data)[off3])) - ((float *)in[0].data)[off0])));
            for (int d = 1 - 1; d >= 0; d--) {
                idx[d]++; off0 += st0[d]; off1 += st1[d]; off2 += st2[d]; off3 += st3[d];
                if (idx[d] < t7.shape[d]) break;
                idx[d] = 0; off0 -= st0[d] * t7.shape[d]; off1 -= st1[d] * t7.shape[d]; off2 -= st2[d] * t7.shape[d]; off3 -= st3[d] * t7.shape[d];
            }
        }
    }
    out[0] = t7;
    return 0;
fail:
    return -1;
}
