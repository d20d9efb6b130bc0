/* rt_region_threads: a long region takes the threads the settings ask for, a short one those the load left. */
#include <stdio.h>
#include <string.h>
#include "rt_kernels.h"

static int fails = 0;
#define CHECK(cond) do { if (!(cond)) { printf("failed: %s (line %d)\n", #cond, __LINE__); fails++; } } while (0)

int main(void) {
    rt_ctx ctx, part;
    memset(&ctx, 0, sizeof ctx);
    ctx.num_threads = 1;            /* the load left one thread */
    ctx.max_threads = 2;            /* the settings ask for two */
    CHECK(rt_region_threads(&ctx, RT_LONG_REGION - 1) == 1);
    CHECK(rt_region_threads(&ctx, RT_LONG_REGION) == 2);
    ctx.max_threads = 0;            /* a context that does not say: the load's count */
    CHECK(rt_region_threads(&ctx, RT_LONG_REGION * 4) == 1);
    ctx.num_threads = 2;
    ctx.max_threads = 2;
    CHECK(rt_region_threads(&ctx, 1) == 2);
    rt_ctx_part(&part, &ctx);       /* a part of a graph run on its own thread stays on it */
    CHECK(rt_region_threads(&part, RT_LONG_REGION * 4) == 1);
    if (!fails) printf("ok\n");
    return fails != 0;
}
