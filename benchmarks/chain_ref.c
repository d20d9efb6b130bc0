/* The hand-written reference for the elementwise chain rt.tanh(x * 1.5 + 0.5) * 2.0 - x on float32.
 *
 * Compiled by the benchmark with the generated code's own flags (transpiler.codegen.COMPILE_ARGS) and
 * called through ctypes: restrict pointers, one vectorised loop. glibc's libmvec has a vector tanhf;
 * declaring it `omp declare simd` lets the loop call it a vector at a time without -ffast-math (a plain
 * call of tanhf per element is several times slower than numpy).
 */
#include <math.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP)
#pragma omp declare simd notinbranch
float tanhf(float);
#endif

/* out[i] = tanh(x[i] * 1.5 + 0.5) * 2.0 - x[i] on one thread. */
void chain_ref(const float *restrict x, float *restrict out, int64_t n)
{
    #pragma omp simd
    for (int64_t i = 0; i < n; i++)
        out[i] = tanhf(x[i] * 1.5f + 0.5f) * 2.0f - x[i];
}

/* The same on `threads` threads. */
void chain_ref_parallel(const float *restrict x, float *restrict out, int64_t n, int threads)
{
    #pragma omp parallel for simd schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++)
        out[i] = tanhf(x[i] * 1.5f + 0.5f) * 2.0f - x[i];
}
