static int rt_fn_countdown(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {
    int32_t * x1 = ((int32_t *)in[0].data);
    int32_t lv2;
    int32_t lv3;
    int64_t iter4 = 0;
    rt_bool s5;
    int32_t s6;
    int32_t s7;
    int32_t * p10 = NULL;
    /* while = While */
    lv2 = x1[0];
    lv3 = 0;
    iter4 = 0;
    for (;;) {
        if (RT_INTERRUPTED) { snprintf(ctx->msg, sizeof(ctx->msg), "interrupted"); goto fail; }
        /* greater = Greater */
        s5 = ((rt_bool)(lv2 > 0));
        if (!s5) {
            break;
        }
        /* add = AddV2 */
        s6 = ((int32_t)(lv3 + lv2));
        /* sub = Sub */
        s7 = ((int32_t)(lv2 - 1));
        /* next values of the loop variables */
        int32_t next8 = s7;
        int32_t next9 = s6;
        lv2 = next8;
        lv3 = next9;
        iter4 = iter4 + 1;
    }
    if (!(p10 = (int32_t *)rt_alloc_array(ctx, 1, sizeof(int32_t)))) goto fail;
    p10[0] = lv3;
    out[0].data = (void *)(p10); out[0].ndim = 0; out[0].dtype = 3; out[0].owner = NULL;
    return 0;
fail:
    return -1;
}
