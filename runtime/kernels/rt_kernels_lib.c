/* The kernel library's archive (transpiler/build/kernel_library.py): the functions of the kernel headers that
 * every module would otherwise compile again, compiled once per compiler and flags. A module compiled with
 * RT_KERNELS_EXTERN declares them (rt_gemm.h: the GEMM's micro-kernels, packing and one thread's block, and the
 * matrix-vector rows of sizes known at run time) and links this archive; its inline kernels are the same code as
 * before. */
#define RT_KERNELS_LIBRARY 1
#include "rt_kernels.h"
