static int rt_fn_collatz(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    /* Const = Const */
    static const int32_t k1[1] = {2};
    rt_tensor t2; t2.owner = NULL; t2.dtype = 3;
    t2.ndim = 0;
    t2.data = (void *)k1;
    /* floormod = FloorMod */
    rt_tensor t3; t3.owner = NULL; t3.dtype = 3;
    t3.ndim = 1;
    t3.shape[0] = 1;
    if (in[0].shape[0] != 1) { if (t3.shape[0] == 1) t3.shape[0] = in[0].shape[0]; else if (t3.shape[0] != in[0].shape[0]) { snprintf(ctx->msg, sizeof(ctx->msg), "FloorMod (floormod): incompatible shapes for broadcasting at dimension 0: %lld vs %lld", (long long)(t3.shape[0]), (long long)(in[0].shape[0])); goto fail; } }
    if (rt_alloc_tensor(ctx, &t3)) goto fail;
    for (int64_t k = 0; k < 1; k++) {
        if (((int32_t *)t2.data)[k] == 0) { snprintf(ctx->msg, sizeof(ctx->msg), "FloorMod (floormod): Integer division by zero"); goto fail; }
    }
    if (rt_same_shape(&in[0], &t3)) {
        int32_t *restrict po = (int32_t *)t3.data;const int32_t *restrict p4 = ((int32_t *)in[0].data); const int32_t *restrict p5 = ((int32_t *)t2.data);
        const int64_t rt_n = rt_numel(&t3);
        if (rt_n >= 65536 && ctx->num_threads > 1) {
            #pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)rt_floormod_int32(p4[k], p5[0]));
        }
        else
         {
            #pragma omp simd
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)rt_floormod_int32(p4[k], p5[0]));
        }
    }
    else {
        int32_t *po = (int32_t *)t3.data;
        int64_t idx[1]; for (int d = 0; d < 1; d++) idx[d] = 0;
        int64_t off0 = 0, st0[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 0; if (ld < 0) { st0[d] = 0; continue; } st0[d] = (in[0].shape[ld] == 1) ? 0 : s; s *= in[0].shape[ld]; } }
        int64_t off1 = 0, st1[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 1; if (ld < 0) { st1[d] = 0; continue; } st1[d] = (t2.shape[ld] == 1) ? 0 : s; s *= t2.shape[ld]; } }
        for (int64_t k = 0; k < rt_numel(&t3); k++) {
            po[k] = ((int32_t)rt_floormod_int32(((int32_t *)in[0].data)[off0], ((int32_t *)t2.data)[off1]));
            for (int d = 1 - 1; d >= 0; d--) {
                idx[d]++; off0 += st0[d]; off1 += st1[d];
                if (idx[d] < t3.shape[d]) break;
                idx[d] = 0; off0 -= st0[d] * t3.shape[d]; off1 -= st1[d] * t3.shape[d];
            }
        }
    }
    /* Const_1 = Const */
    static const int32_t k6[1] = {0};
    rt_tensor t7; t7.owner = NULL; t7.dtype = 3;
    t7.ndim = 0;
    t7.data = (void *)k6;
    /* Const_2 = Const */
    static const int32_t k8[1] = {2};
    rt_tensor t9; t9.owner = NULL; t9.dtype = 3;
    t9.ndim = 0;
    t9.data = (void *)k8;
    /* floordiv = FloorDiv */
    rt_tensor t10; t10.owner = NULL; t10.dtype = 3;
    t10.ndim = 1;
    t10.shape[0] = 1;
    if (in[0].shape[0] != 1) { if (t10.shape[0] == 1) t10.shape[0] = in[0].shape[0]; else if (t10.shape[0] != in[0].shape[0]) { snprintf(ctx->msg, sizeof(ctx->msg), "FloorDiv (floordiv): incompatible shapes for broadcasting at dimension 0: %lld vs %lld", (long long)(t10.shape[0]), (long long)(in[0].shape[0])); goto fail; } }
    if (rt_alloc_tensor(ctx, &t10)) goto fail;
    for (int64_t k = 0; k < 1; k++) {
        if (((int32_t *)t9.data)[k] == 0) { snprintf(ctx->msg, sizeof(ctx->msg), "FloorDiv (floordiv): Integer division by zero"); goto fail; }
    }
    if (rt_same_shape(&in[0], &t10)) {
        int32_t *restrict po = (int32_t *)t10.data;const int32_t *restrict p11 = ((int32_t *)in[0].data); const int32_t *restrict p12 = ((int32_t *)t9.data);
        const int64_t rt_n = rt_numel(&t10);
        if (rt_n >= 65536 && ctx->num_threads > 1) {
            #pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)rt_floordiv_int32(p11[k], p12[0]));
        }
        else
         {
            #pragma omp simd
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)rt_floordiv_int32(p11[k], p12[0]));
        }
    }
    else {
        int32_t *po = (int32_t *)t10.data;
        int64_t idx[1]; for (int d = 0; d < 1; d++) idx[d] = 0;
        int64_t off0 = 0, st0[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 0; if (ld < 0) { st0[d] = 0; continue; } st0[d] = (in[0].shape[ld] == 1) ? 0 : s; s *= in[0].shape[ld]; } }
        int64_t off1 = 0, st1[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 1; if (ld < 0) { st1[d] = 0; continue; } st1[d] = (t9.shape[ld] == 1) ? 0 : s; s *= t9.shape[ld]; } }
        for (int64_t k = 0; k < rt_numel(&t10); k++) {
            po[k] = ((int32_t)rt_floordiv_int32(((int32_t *)in[0].data)[off0], ((int32_t *)t9.data)[off1]));
            for (int d = 1 - 1; d >= 0; d--) {
                idx[d]++; off0 += st0[d]; off1 += st1[d];
                if (idx[d] < t10.shape[d]) break;
                idx[d] = 0; off0 -= st0[d] * t10.shape[d]; off1 -= st1[d] * t10.shape[d];
            }
        }
    }
    /* Const_3 = Const */
    static const int32_t k13[1] = {3};
    rt_tensor t14; t14.owner = NULL; t14.dtype = 3;
    t14.ndim = 0;
    t14.data = (void *)k13;
    /* Const_4 = Const */
    static const int32_t k15[1] = {1};
    rt_tensor t16; t16.owner = NULL; t16.dtype = 3;
    t16.ndim = 0;
    t16.data = (void *)k15;
    /* Identity = Identity */
    rt_tensor t17; t17.owner = NULL; t17.dtype = 3;
    t17.ndim = 1;
    t17.shape[0] = 1;
    if (t3.shape[0] != 1) { if (t17.shape[0] == 1) t17.shape[0] = t3.shape[0]; else if (t17.shape[0] != t3.shape[0]) { snprintf(ctx->msg, sizeof(ctx->msg), "Identity (Identity): incompatible shapes for broadcasting at dimension 0: %lld vs %lld", (long long)(t17.shape[0]), (long long)(t3.shape[0])); goto fail; } }
    if (t10.shape[0] != 1) { if (t17.shape[0] == 1) t17.shape[0] = t10.shape[0]; else if (t17.shape[0] != t10.shape[0]) { snprintf(ctx->msg, sizeof(ctx->msg), "Identity (Identity): incompatible shapes for broadcasting at dimension 0: %lld vs %lld", (long long)(t17.shape[0]), (long long)(t10.shape[0])); goto fail; } }
    if (in[0].shape[0] != 1) { if (t17.shape[0] == 1) t17.shape[0] = in[0].shape[0]; else if (t17.shape[0] != in[0].shape[0]) { snprintf(ctx->msg, sizeof(ctx->msg), "Identity (Identity): incompatible shapes for broadcasting at dimension 0: %lld vs %lld", (long long)(t17.shape[0]), (long long)(in[0].shape[0])); goto fail; } }
    if (rt_alloc_tensor(ctx, &t17)) goto fail;
    if (rt_same_shape(&t3, &t17) && rt_same_shape(&t10, &t17) && rt_same_shape(&in[0], &t17)) {
        int32_t *restrict po = (int32_t *)t17.data;const int32_t *restrict p18 = ((int32_t *)t3.data); const int32_t *restrict p19 = ((int32_t *)t7.data); const int32_t *restrict p20 = ((int32_t *)t10.data); const int32_t *restrict p21 = ((int32_t *)t14.data); const int32_t *restrict p22 = ((int32_t *)in[0].data); const int32_t *restrict p23 = ((int32_t *)t16.data);
        const int64_t rt_n = rt_numel(&t17);
        if (rt_n >= 65536 && ctx->num_threads > 1) {
            #pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)((int32_t)(((rt_bool)(p18[k] == p19[0])) ? p20[k] : ((int32_t)(((int32_t)(p21[0] * p22[k])) + p23[0])))));
        }
        else
         {
            #pragma omp simd
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)((int32_t)(((rt_bool)(p18[k] == p19[0])) ? p20[k] : ((int32_t)(((int32_t)(p21[0] * p22[k])) + p23[0])))));
        }
    }
    else {
        int32_t *po = (int32_t *)t17.data;
        int64_t idx[1]; for (int d = 0; d < 1; d++) idx[d] = 0;
        int64_t off0 = 0, st0[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 0; if (ld < 0) { st0[d] = 0; continue; } st0[d] = (t3.shape[ld] == 1) ? 0 : s; s *= t3.shape[ld]; } }
        int64_t off1 = 0, st1[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 1; if (ld < 0) { st1[d] = 0; continue; } st1[d] = (t7.shape[ld] == 1) ? 0 : s; s *= t7.shape[ld]; } }
        int64_t off2 = 0, st2[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 0; if (ld < 0) { st2[d] = 0; continue; } st2[d] = (t10.shape[ld] == 1) ? 0 : s; s *= t10.shape[ld]; } }
        int64_t off3 = 0, st3[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 1; if (ld < 0) { st3[d] = 0; continue; } st3[d] = (t14.shape[ld] == 1) ? 0 : s; s *= t14.shape[ld]; } }
        int64_t off4 = 0, st4[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 0; if (ld < 0) { st4[d] = 0; continue; } st4[d] = (in[0].shape[ld] == 1) ? 0 : s; s *= in[0].shape[ld]; } }
        int64_t off5 = 0, st5[1];
        { int64_t s = 1; for (int d = 1 - 1; d >= 0; d--) { int ld = d - 1; if (ld < 0) { st5[d] = 0; continue; } st5[d] = (t16.shape[ld] == 1) ? 0 : s; s *= t16.shape[ld]; } }
        for (int64_t k = 0; k < rt_numel(&t17); k++) {
            po[k] = ((int32_t)((int32_t)(((rt_bool)(((int32_t *)t3.data)[off0] == ((int32_t *)t7.data)[off1])) ? ((int32_t *)t10.data)[off2] : ((int32_t)(((int32_t)(((int32_t *)t14.data)[off3] * ((int32_t *)in[0].data)[off4])) + ((int32_t *)t16.data)[off5])))));
            for (int d = 1 - 1; d >= 0; d--) {
                idx[d]++; off0 += st0[d]; off1 += st1[d]; off2 += st2[d]; off3 += st3[d]; off4 += st4[d]; off5 += st5[d];
                if (idx[d] < t17.shape[d]) break;
                idx[d] = 0; off0 -= st0[d] * t17.shape[d]; off1 -= st1[d] * t17.shape[d]; off2 -= st2[d] * t17.shape[d]; off3 -= st3[d] * t17.shape[d]; off4 -= st4[d] * t17.shape[d]; off5 -= st5[d] * t17.shape[d];
            }
        }
    }
    out[0] = t17;
    return 0;
fail:
    return -1;
}
