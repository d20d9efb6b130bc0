/* The kernels compiled once, in runtime._native, and shared by every generated module: the convolutions
 * and max pooling (rt_nn.h).
 *
 * Compiled into each module that used them they were a good part of its C compiler's time. runtime._native
 * compiles them (at install, with the generated code's flags and ISA level) and hands out a table of their
 * entry points; a module compiled with -DRT_SHARED_KERNELS declares them as function pointers of the same
 * names (rt_nn.h), which rt_use_shared_kernels fills from the table when the module is imported
 * (runtime/kernels/rt_extension.h). A call through a pointer costs nothing next to a convolution.
 *
 * The GEMM is not shared: compiled into the module, each product's call with literal sizes gets a copy
 * specialised to them (GCC's constant propagation), and a training step whose products have 10 columns or
 * a reduction of 10 ran 2.3x slower on runtime._native's generic copy.
 *
 * The table is only valid for the sources it was compiled from: RT_KERNELS_HASH (a hash of these
 * headers, transpiler/codegen/flags.py kernels_hash) is compiled into both sides, and a module refuses a
 * table of other sources. The build compiles the kernels into the module instead (no RT_SHARED_KERNELS)
 * when runtime._native's kernels are not those of the headers it compiles with (kernels edited since
 * rt was installed). */
#ifndef RT_SHARED_H
#define RT_SHARED_H

#ifndef RT_KERNELS_HASH
#define RT_KERNELS_HASH "unknown"
#endif

#define RT_SHARED_KERNEL_LIST(X) \
    X(rt_conv2d_run_float32) X(rt_conv2d_run_float64) \
    X(rt_max_pool_float32) X(rt_max_pool_float64) \
    X(rt_max_pool_grad_float32) X(rt_max_pool_grad_float64) \
    X(rt_max_pool_grad_grad_float32) X(rt_max_pool_grad_grad_float64)

#if defined(RT_SHARED_KERNELS)
/* Points this module's kernel entry points at runtime._native's `table` (compiled from the sources `hash`
 * names). 0, or -1 (nothing set) when the table is of other sources. */
static int rt_use_shared_kernels(const char *hash, void *const *table) {
    if (hash == NULL || table == NULL || strcmp(hash, RT_KERNELS_HASH) != 0) return -1;
    int i = 0;
#define RT_SHARED_SET(name) name = (__typeof__(name))table[i++];
    RT_SHARED_KERNEL_LIST(RT_SHARED_SET)
#undef RT_SHARED_SET
    return 0;
}
#elif defined(RT_DEFINE_SHARED_KERNEL_TABLE)
/* runtime._native: the table it hands out (shared_kernels()) */
#define RT_SHARED_ENTRY(name) (void *)name,
static void *const rt_shared_kernel_table[] = {RT_SHARED_KERNEL_LIST(RT_SHARED_ENTRY)};
#undef RT_SHARED_ENTRY
static const char rt_kernels_hash[] = RT_KERNELS_HASH;
#endif

#endif
