"""The lowering stage: an optimized graph -> loop nests over index expressions (the loop IR).

It sits between the graph optimizer (``runtime.optimizer``) and the C renderer
(``transpiler.codegen``), and decides how every op's elements are computed, in one place:

0. ``contract``: a sum of broadcast products (``reduce_sum(a[:, :, None] * b[None], 1)``) becomes a matmul,
   in a copy of the graph (the executor's graph keeps numpy's order of additions);
1. ``shapes``: each tensor's dims as index polynomials, with the run-time checks that guard them;
2. ``plan``: fusion (which tensors are stored, which are computed where they are read, row groups)
   and the order of the kernels;
3. ``kernels`` / ``rows``: loop nests from what the op table says of each op (``c_expr``, reduction
   combiners, index maps): broadcasting is a zero stride, contiguous dims merge, the innermost loop
   is vectorised, big loops run on OpenMP threads;
4. ``ops`` / ``control``: the opaque ops (matmul, concat, variables, callbacks, ``If``/``While``);
5. ``function``: the driver, storage (registers, stack arrays, arena, buffers kept across loop
   iterations) and the function's inputs and outputs;
6. ``merge`` / ``epilogue``: passes over the finished IR: adjacent loop nests over the same elements
   become one (an optimizer's updates of a weight), and a nest reading a GEMM's result runs inside the
   GEMM's parallel parts, on each block as it is computed (a layer's bias and activation).

``lower_function(graph, name)`` returns the IR (``str()`` prints it; ``RT_DEBUG=1`` dumps it).
"""
from transpiler.lowering.function import LoweredFunction, Report, lower_function
from transpiler.lowering.ir import Function, Poly
from transpiler.lowering.ops import native_op_types

__all__ = ["Function", "LoweredFunction", "Poly", "Report", "lower_function", "native_op_types"]
