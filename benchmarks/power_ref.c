/* The hand-written reference for the guide's power(x, 100): 100 chained 10x10 int32 matmuls.
 *
 * Compiled by the benchmark with the generated code's own flags (transpiler.codegen.COMPILE_ARGS) and
 * called through ctypes. Sizes are literals, pointers restrict; integer overflow wraps like numpy's int32
 * matmul (the products are summed in uint32).
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#define N 10

/* out = x^n_iter, computed as r = x @ r, n_iter times, from the identity. */
void power_ref(const int32_t *restrict x, int32_t *restrict out, int n_iter)
{
    uint32_t r[N * N], t[N * N];
    memset(r, 0, sizeof r);
    for (int i = 0; i < N; i++)
        r[i * N + i] = 1;
    for (int it = 0; it < n_iter; it++) {
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < N; j++) {
                uint32_t acc = 0;
                for (int k = 0; k < N; k++)
                    acc += (uint32_t)x[i * N + k] * r[k * N + j];
                t[i * N + j] = acc;
            }
        }
        memcpy(r, t, sizeof r);
    }
    for (int i = 0; i < N * N; i++)
        out[i] = (int32_t)r[i];
}

/* Calls power_ref `calls` times inside C; returns the seconds per call (no Python call overhead). */
double power_ref_batch(const int32_t *restrict x, int32_t *restrict out, int n_iter, int calls)
{
    struct timespec start, stop;
    uint32_t checksum = 0;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int c = 0; c < calls; c++) {
        power_ref(x, out, n_iter);
        checksum += (uint32_t)out[c % (N * N)];
        __asm__ __volatile__("" : : "r"(out) : "memory");   /* keep every call */
    }
    clock_gettime(CLOCK_MONOTONIC, &stop);
    out[0] ^= (int32_t)(checksum & 0);
    return ((double)(stop.tv_sec - start.tv_sec) + 1e-9 * (double)(stop.tv_nsec - start.tv_nsec)) / calls;
}
