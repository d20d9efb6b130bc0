static int rt_fn_double(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    /* Identity = Identity */
    rt_tensor t1; t1.owner = NULL; t1.dtype = 3;
    t1.ndim = 0;
    if (rt_alloc_tensor(ctx, &t1)) goto fail;
    if (1) {
        int32_t *restrict po = (int32_t *)t1.data;const int32_t *restrict p2 = ((int32_t *)in[0].data);
        const int64_t rt_n = 1;
         {
            #pragma omp simd
            for (int64_t k = 0; k < rt_n; k++) po[k] = ((int32_t)((int32_t)(p2[0] + p2[0])));
        }
    }
    out[0] = t1;
    return 0;
fail:
    return -1;
}
