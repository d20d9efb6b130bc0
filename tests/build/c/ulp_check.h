/* What exp_check.c and tanh_check.c share: the sweep over every STRIDE-th float32 bit pattern in chunks of CHUNK,
 * the error of a result in ulps of the reference rounded to float32, the first failures printed and counted, and
 * the last line ("ok" and the worst error, or the number of failures: the check's exit status). */
#ifndef ULP_CHECK_H
#define ULP_CHECK_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CHUNK 4096
#define STRIDE 61u

static int fails = 0;

static float bits_to_float(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }

/* Fills xs with the next bit patterns from *u on (at most CHUNK); returns how many (0: the sweep is over). */
static int next_chunk(uint64_t *u, float *xs) {
    int n = 0;
    for (; n < CHUNK && *u < ((uint64_t)1 << 32); n++, *u += STRIDE) xs[n] = bits_to_float((uint32_t)*u);
    return n;
}

/* The error of y in ulps of ref rounded to float32 (for results below FLT_MIN, ulps of the smallest denormal). */
static double ulps_of(double ref, float y) {
    int e;
    frexp(ref, &e);
    double ulp = ldexp(1.0, e - 24);
    if (ulp < 0x1p-149) ulp = 0x1p-149;
    return fabs((double)y - ref) / ulp;
}

static int finish(double worst, float worst_x) {
    if (fails) {
        printf("%d failures\n", fails);
        return 1;
    }
    printf("ok: at most %.3f ulp (at %a)\n", worst, worst_x);
    return 0;
}
#endif
