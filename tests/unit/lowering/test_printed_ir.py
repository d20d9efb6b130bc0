"""The loop IR as its printer shows it (``str(function)``, what ``RT_DEBUG=1`` dumps): whole listings of small
functions, one per kind of statement the lowering builds. A change to the lowering that changes one of them shows
here as a readable diff of the listing."""
from __future__ import annotations

import re
import textwrap


import runtime as rt
from runtime.optimizer import optimize
from transpiler.lowering import lower_function

F = rt.float32



def _listing(fn, *specs) -> str:
    graph = optimize(rt.function(fn).get_concrete_function(*specs).graph)
    text = str(lower_function(graph, "f").ir)
    return re.sub(r'created at File "[^"]*", line \d+, in (\w+)', r"created at \1", text)


def _expect(fn, specs, listing: str) -> None:
    got = _listing(fn, *specs)
    assert got == textwrap.dedent(listing).strip("\n"), "\n" + got


def newton(a, n):
    x = a
    i = 0
    while i < n:
        x = x - (x * x - a) / (2.0 * x)
        i += 1
    return x


def test_a_scalar_loop_is_registers_and_a_loop():
    _expect(newton, (rt.TensorSpec([], F), rt.TensorSpec([], rt.int32)), """
        function f(a: float32[], n: int32[]):
          let x1: float * = (float *)in[0].data
          let x2: int32_t * = (int32_t *)in[1].data
          let lv3: int32_t
          let lv4: float
          let iter5: int64_t = 0
          let s6: rt_bool
          let s7: float
          let s8: float
          let s9: float
          let s10: float
          let s11: float
          let s12: int32_t
          let p15: float * = NULL
          # while = While
          lv3 = 0
          lv4 = x1[0]
          iter5 = 0
          loop:
            # less = Less
            s6 = Less(lv3, x2[0])
            if !s6:
              break
            # mul = Mul
            s7 = Mul(lv4, lv4)
            # sub = Sub
            s8 = Sub(s7, x1[0])
            # mul_1 = Mul
            s9 = Mul(2.0f, lv4)
            # truediv = RealDiv
            s10 = RealDiv(s8, s9)
            # sub_1 = Sub
            s11 = Sub(lv4, s10)
            # add = AddV2
            s12 = AddV2(lv3, 1)
            # next values of the loop variables
            let next13: int32_t = s12
            let next14: float = s11
            lv3 = next13
            lv4 = next14
            iter5 = iter5 + 1
          p15 = alloc float[1] (arena)
          p15[0] = lv4
          out[0] = tensor(p15, [], dtype 7)
        """)


def sliced(x):
    return x[1:-1:2] * 2.0


def test_a_slice_of_run_time_bounds_is_shape_code_and_a_call_setting_a_local():
    _expect(sliced, (rt.TensorSpec([None], F),), """
        function f(x: float32[?]):
          let n1: int64_t = in[0].shape[0]
          let x2: float * = (float *)in[0].data
          let n3: int64_t = 0
          let n4: int64_t = 0
          let p9: float * = NULL
          check not (2 == 0) else 'StridedSlice: slice step cannot be zero\\n  [[op \\'strided_slice\\' (StridedSlice) created at sliced]]'
          let lo5: int64_t = 2 > 0 ? 1 : 1
          let hi6: int64_t = 2 > 0 ? -1 : -1
          lo5 = lo5 < 0 ? lo5 + n1 : lo5
          hi6 = hi6 < 0 ? hi6 + n1 : hi6
          n4 = call rt_slice_count(lo5, hi6, 2, n1, &n3)
          # Identity = Identity
          p9 = alloc float[n4] (arena)
          for i10 in n4  [parallel if n4 >= RT_PARALLEL_MIN && ctx->num_threads > 1, simd]:
            p9[i10] = Identity(Mul(x2[2 * i10 + n3], 2.0f))
          out[0] = tensor(p9, [n4], dtype 7)
        """)


def cumulative(x):
    return rt.cumsum(x) * 2.0


def test_an_op_without_a_native_lowering_is_a_callback():
    _expect(cumulative, (rt.TensorSpec([None], F),), """
        function f(x: float32[?]):
          let n1: int64_t = in[0].shape[0]
          let x2: float * = (float *)in[0].data
          let n3: int64_t = 0
          let p6: float * = NULL
          let p8: float * = NULL
          # Cumsum = Cumsum
          let cb_in4: rt_tensor[1]
          let cb_out5: rt_tensor[1]
          cb_in4[0] = tensor(x2, [n1], dtype 7)
          callback op 1(cb_in4[0:1]) -> cb_out5[0:1]
          check not (cb_out5[0].ndim != 1) else 'Cumsum: the Python kernel returned a tensor of another shape\\n  [[op \\'Cumsum\\' (Cumsum) created at cumulative]]'
          n3 = cb_out5[0].shape[0]
          p6 = (float *)cb_out5[0].data
          # Identity = Identity
          p8 = alloc float[n3] (arena)
          for i9 in n3  [parallel if n3 >= RT_PARALLEL_MIN && ctx->num_threads > 1, simd]:
            p8[i9] = Identity(Mul(p6[i9], 2.0f))
          out[0] = tensor(p8, [n3], dtype 7)
        """)


def layer(x, w, b):
    return rt.nn.relu(rt.matmul(x, w) + b)


def test_a_layer_runs_its_bias_and_activation_on_each_block_of_the_product():
    _expect(layer, (rt.TensorSpec([256, 784], F), rt.TensorSpec([784, 128], F), rt.TensorSpec([128], F)), """
        function f(x: float32[256,784], w: float32[784,128], b: float32[128]):
          let x1: float * = (float *)in[0].data
          let x2: float * = (float *)in[1].data
          let x3: float * = (float *)in[2].data
          let p4: float * = NULL
          let g9_tn: int = 1
          let g9_parts: int = 1
          let g9_failed: int = 0
          # MatMul = MatMul
          p4 = alloc float[32768] (arena)
          # Identity = Identity
          # rt_gemm_ld_float32 with the loop below run on each part of the product (epilogue)
          g9_parts = call rt_gemm_grid_float32(256, 784, 128, 0, 0, ctx->num_threads, &g9_tn)
          g9_failed = 0
          for g9_part in g9_parts  [parallel if g9_parts > 1, reduce(|:g9_failed)]:
            let g9_ilo: int64_t = 0
            let g9_ihi: int64_t = 0
            let g9_jlo: int64_t = 0
            let g9_jhi: int64_t = 0
            let g9_rc: int
            g9_rc = call rt_gemm_part_float32(x1, 784, x2, 128, p4, 128, 256, 784, 128, 0, 0, g9_parts, g9_tn, g9_part, &g9_ilo, &g9_ihi, &g9_jlo, &g9_jhi)
            g9_failed = g9_failed | g9_rc
            for g9_i in g9_ilo..g9_ihi:
              for g9_j in g9_jlo..g9_jhi  [simd]:
                p4[128 * g9_i + g9_j] = Identity(Relu(AddV2(p4[128 * g9_i + g9_j], x3[g9_j])))
          check not (g9_failed) else 'MatMul: out of memory for packing the operands'
          out[0] = tensor(p4, [256, 128], dtype 7)
        """)


def picked(x, i):
    return rt.gather(x, i) + 1.0


def test_a_gather_checks_its_indices_where_they_are_read():
    _expect(picked, (rt.TensorSpec([None], F), rt.TensorSpec([3], rt.int32)), """
        function f(x: float32[?], i: int32[3]):
          let n1: int64_t = in[0].shape[0]
          let x2: float * = (float *)in[0].data
          let x3: int32_t * = (int32_t *)in[1].data
          let p6: float * = NULL
          for k4 in 3:
            check not ((int64_t)x3[k4] < 0 || (int64_t)x3[k4] >= n1) else 'GatherV2: indices[%lld] = %lld is not in [0, %lld)\\n  [[op \\'GatherV2\\' (GatherV2) created at picked]]'
          # Identity = Identity
          p6 = alloc float[3] (arena)
          for i7 in 3  [simd]:
            p6[i7] = Identity(AddV2(x2[0 + x3[i7]], 1.0f))
          out[0] = tensor(p6, [3], dtype 7)
        """)


def test_a_guarded_function_prints_its_fallback_and_its_guard():
    text = _listing(lambda x, y: x + y, rt.TensorSpec([None], F), rt.TensorSpec([None], F))
    assert text.startswith("function f_any(x: float32[?], y: float32[?]):")
    assert "\nfunction f(x: float32[?], y: float32[?]):\n  guard in[1].shape[0] == in[0].shape[0] else f_any\n" in text
