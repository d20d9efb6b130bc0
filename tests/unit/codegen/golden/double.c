static int rt_fn_double(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int32_t * x1 = ((int32_t *)in[0].data);
    int32_t s2;
    int32_t * p3 = NULL;
    /* add = AddV2 */
    s2 = ((int32_t)(x1[0] + x1[0]));
    if (!(p3 = (int32_t *)rt_alloc_array(ctx, 1, sizeof(int32_t)))) goto fail;
    p3[0] = s2;
    out[0].data = (void *)(p3); out[0].ndim = 0; out[0].dtype = 3; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
