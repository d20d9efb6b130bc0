static int rt_fn_countdown(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    /* Const = Const */
    static const int32_t k1[1] = {0};
    rt_tensor t2; t2.owner = NULL; t2.dtype = 3;
    t2.ndim = 0;
    t2.data = (void *)k1;
    /* while = While */
    rt_tensor t3; t3.owner = NULL; t3.dtype = 3;
    rt_tensor t4; t4.owner = NULL; t4.dtype = 3;
    t3 = in[0]; t3.owner = NULL;
    if (rt_alloc_tensor(ctx, &t3)) goto fail;
    memcpy(t3.data, in[0].data, (size_t)rt_numel(&in[0]) * rt_itemsize(in[0].dtype));
    t4 = t2; t4.owner = NULL;
    if (rt_alloc_tensor(ctx, &t4)) goto fail;
    memcpy(t4.data, t2.data, (size_t)rt_numel(&t2) * rt_itemsize(t2.dtype));
    int64_t iter5 = 0;
    for (;;) {
        int64_t mark6 = rt_mark(ctx);
        /* Const = Const */
        static const int32_t k7[1] = {0};
        rt_tensor t8; t8.owner = NULL; t8.dtype = 3;
        t8.ndim = 0;
        t8.data = (void *)k7;
        /* greater = Greater */
        rt_tensor t9; t9.owner = NULL; t9.dtype = 0;
        t9.ndim = 0;
        if (rt_alloc_tensor(ctx, &t9)) goto fail;
        if (1) {
            rt_bool *restrict po = (rt_bool *)t9.data;const int32_t *restrict p10 = ((int32_t *)t3.data); const int32_t *restrict p11 = ((int32_t *)t8.data);
            const int64_t rt_n = 1;
             {
                #pragma omp simd
                for (int64_t k = 0; k < rt_n; k++) po[k] = ((rt_bool)(p10[0] > p11[0]));
            }
        }
        if (!((rt_bool *)t9.data)[0]) { rt_release(ctx, mark6, NULL, 0); break; }
        /* add = AddV2 */
        rt_tensor t12; t12.owner = NULL; t12.dtype = 3;
        t12.ndim = 0;
        if (rt_alloc_tensor(ctx, &t12)) goto fail;
        if (1) {
            int32_t *restrict po = (int32_t *)t12.data;const int32_t *restrict p13 = ((int32_t *)t4.data); const int32_t *restrict p14 = ((int32_t *)t3.data);
            const int64_t rt_n = 1;
             {
                #pragma omp simd
                for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)(p13[0] + p14[0]));
            }
        }
        /* Const = Const */
        static const int32_t k15[1] = {1};
        rt_tensor t16; t16.owner = NULL; t16.dtype = 3;
        t16.ndim = 0;
        t16.data = (void *)k15;
        /* sub = Sub */
        rt_tensor t17; t17.owner = NULL; t17.dtype = 3;
        t17.ndim = 0;
        if (rt_alloc_tensor(ctx, &t17)) goto fail;
        if (1) {
            int32_t *restrict po = (int32_t *)t17.data;const int32_t *restrict p18 = ((int32_t *)t3.data); const int32_t *restrict p19 = ((int32_t *)t16.data);
            const int64_t rt_n = 1;
             {
                #pragma omp simd
                for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)(p18[0] - p19[0]));
            }
        }
        rt_tensor next20;
        rt_tensor next21;
        next20 = t17; next20.owner = NULL;
        if (rt_alloc_tensor(ctx, &next20)) goto fail;
        memcpy(next20.data, t17.data, (size_t)rt_numel(&t17) * rt_itemsize(t17.dtype));
        next21 = t12; next21.owner = NULL;
        if (rt_alloc_tensor(ctx, &next21)) goto fail;
        memcpy(next21.data, t12.data, (size_t)rt_numel(&t12) * rt_itemsize(t12.dtype));
        void *keep22[2] = {next20.data, next21.data};
        rt_release(ctx, mark6, keep22, 2);
        rt_drop(ctx, t3.data);
        t3 = next20;
        rt_drop(ctx, t4.data);
        t4 = next21;
        iter5++;
    }
    /* Identity = Identity */
    rt_tensor t23; t23.owner = NULL; t23.dtype = 3;
    t23.ndim = 0;
    if (rt_alloc_tensor(ctx, &t23)) goto fail;
    if (1) {
        int32_t *restrict po = (int32_t *)t23.data;const int32_t *restrict p24 = ((int32_t *)t4.data);
        const int64_t rt_n = 1;
         {
            #pragma omp simd
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)p24[0]);
        }
    }
    out[0] = t23;
    return 0;
fail:
    return -1;
}
