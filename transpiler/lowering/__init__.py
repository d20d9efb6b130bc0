"""The lowering stage: an optimized graph -> loop nests over index expressions (the loop IR).

It sits between the graph optimizer (``runtime.optimizer``) and the C renderer
(``transpiler.codegen.c``), and decides how every op's elements are computed, in one place:

0. ``contract``: a sum of broadcast products (``reduce_sum(a[:, :, None] * b[None], 1)``) becomes a matmul,
   in a copy of the graph (the executor's graph keeps numpy's order of additions);
1. ``shapes``: each tensor's dims as index polynomials, and each op's shape code: the IR statements that
   assign run-time dims and check them where the op runs;
2. ``plan``: fusion (which tensors are stored, which are computed where they are read, row groups)
   and the order of the kernels;
3. ``kernels`` / ``rows``: loop nests from what the op table says of each op (``c_expr``, reduction
   combiners, index maps): broadcasting is a zero stride, contiguous dims merge, the innermost loop
   is vectorised, big loops run on OpenMP threads;
4. ``ops`` / ``control`` / ``tiles`` / ``nn`` / ``scatter`` / ``lists`` / ``library_calls``: the opaque ops
   (matmul, concat, variables, callbacks, ``If``/``While``, convolutions, TensorArrays, kernel-library calls);
5. ``function``: the driver (``lower_function``, ``Lowering``), the function's inputs and outputs, and the
   assumptions on its run-time dims (``assume``: a guarded version and its fallback); ``storage``: where a
   stored tensor lives (registers, stack arrays, arena, buffers kept across loop iterations);
6. ``passes``: the passes over the finished IR, ``PASSES`` run in order: adjacent loop nests over the same
   elements become one (``merge``: an optimizer's updates of a weight), and a nest reading a GEMM's result
   runs inside the GEMM's parallel parts, on each block as it is computed (``epilogue``: a layer's bias and
   activation).

Every part takes the lowering's ``Context`` (``context``: the graph, the namer, the assumptions, dims and
values of tensors, storage, the scope being lowered) and returns the statements it builds. The IR
(``ir``) is closed: every value is a typed node and C text exists only in the renderer; ``verify`` checks
a function after lowering and after every pass when ``RT_DEBUG`` or ``RT_VERIFY_IR`` is set (the test suite
sets it).

``lower_function(graph, name)`` returns the IR (``str()`` prints it; ``RT_DEBUG=1`` dumps it).
"""
from transpiler.lowering.function import LoweredFunction, Report, lower_function
from transpiler.lowering.ir import Function, Poly
from transpiler.lowering.ops import native_op_types
from transpiler.lowering.verify import IRError, verify

__all__ = ["Function", "IRError", "LoweredFunction", "Poly", "Report", "lower_function", "native_op_types", "verify"]
