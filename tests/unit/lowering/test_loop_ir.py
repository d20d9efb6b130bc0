"""The lowering stage without a compiler: index polynomials, fusion decisions, storage, and the IR dump."""
from __future__ import annotations

import re

import numpy as np
import pytest

import runtime as rt
from runtime.executor import run_graph
from runtime.optimizer import optimize
from tests.unit.lowering.test_lists import dynamic_rnn
from transpiler.lowering import Poly, lower_function
from transpiler.lowering.contract import contract_products
from transpiler.lowering.ir import (Alloc, Assign, Call, Check, Declare, For, Helper, If, Load, Loop, Store, walk_expr,
                                    walk_stmts)
from transpiler.lowering.kernels import PAD_LANES, PAD_MAX, SCRATCH_MAX, loads
from transpiler.lowering.ops import SMALL_MATMUL

F = rt.float32



def _lower(fn, *specs):
    graph = optimize(rt.function(fn).get_concrete_function(*specs).graph)
    return lower_function(graph, "rt_fn_test")


def _row_buffer(declared) -> bool:
    """Not one of the lane arrays of a sum (``lanes.sum_lanes``) nor a streamed result's row: a Declare or a
    buffer's name."""
    return not getattr(declared, "name", declared).startswith(("lanes", "terms", "row_out"))


def _loops(ir) -> list[For]:
    return [s for s in walk_stmts(ir.body) if isinstance(s, For)]


def test_poly_arithmetic_and_coefficients():
    n, i, j = Poly.sym("n"), Poly.sym("i"), Poly.sym("j")
    offset = i * n * 3 + j * 3 + 2
    assert offset.coefficient("i") == n * 3 and offset.coefficient("j") == Poly.of(3)
    assert offset.without(["i", "j"]) == Poly.of(2)
    assert offset.substitute({"i": Poly.of(0), "j": Poly.sym("k")}) == Poly.sym("k") * 3 + 2
    assert (n - n).const == 0 and str(n * 2 - 1) == "2 * n - 1"


def test_an_elementwise_chain_is_one_vectorised_parallel_loop():
    lowered = _lower(lambda x, y: rt.tanh(x * 1.5 + 0.5) * 2.0 - y / (rt.abs(y) + 1.0),
                     rt.TensorSpec([None], F), rt.TensorSpec([None], F))
    loops = _loops(lowered.ir)
    stores = [s for s in walk_stmts(lowered.ir.body) if isinstance(s, Store)]
    assert len(stores) == 1 and [(loop.simd, bool(loop.parallel)) for loop in loops] == [(True, True)]
    # x and y are assumed to be of one size; the entry checks it and calls a version without the assumption,
    # with a loop for the same sizes and one for run-time broadcasts of size 1
    assert [(str(a), str(b)) for a, b in lowered.ir.guard] == [("in[1].shape[0]", "in[0].shape[0]")]
    general = lowered.ir.fallback
    assert len([s for s in walk_stmts(general.body) if isinstance(s, Store)]) == 2
    assert [bool(loop.parallel) for loop in _loops(general)] == [True, False]
    assert lowered.report.fused >= 7 and not lowered.report.callbacks


def test_a_bias_row_broadcasts_with_a_zero_stride():
    lowered = _lower(lambda x, b: rt.nn.relu(x + b), rt.TensorSpec([8, 4], F), rt.TensorSpec([4], F))
    store = next(s for s in walk_stmts(lowered.ir.body) if isinstance(s, Store))
    (load_b,) = [node for node in _loads(store.value) if node.ptr != _loads(store.value)[0].ptr]
    inner = _loops(lowered.ir)[-1].var
    assert load_b.index == Poly.sym(inner)          # b[i]: the row index does not move it


def _loads(expr):
    return loads([expr])


@pytest.mark.usefixtures("before_pipelining")
def test_softmax_and_layer_norm_are_one_loop_over_rows():
    """Layer norm: two reduction passes and the store. Softmax: the max, the exponentials into a scratch row
    (a loop without the sum, whose accumulator would live on the stack across each vector exp call), their
    sum, and the store."""
    def layer_norm(x):
        mean = rt.reduce_mean(x, axis=-1, keepdims=True)
        var = rt.reduce_mean(rt.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) / rt.sqrt(var + 1e-5)
    for fn, count in ((rt.nn.softmax, 4), (layer_norm, 3)):
        lowered = _lower(fn, rt.TensorSpec([1024, 256], F))
        outer = [s for s in lowered.ir.body if isinstance(s, For)]
        assert lowered.report.groups == 1 and len(outer) == 1 and outer[0].parallel
        passes = [s for s in outer[0].body if isinstance(s, For)]
        (streamed,) = [s for s in outer[0].body if isinstance(s, If)]   # through a row buffer to memory, or not
        divided = [s for s in streamed.orelse if isinstance(s, If)]     # the store, by a reciprocal or not
        assert len(divided) == 1 and len(divided[0].then) == len(divided[0].orelse) == 1
        passes.append(divided[0].then[0])
        assert len(passes) == count and all(p.simd for p in passes)
        allocs = [s for s in walk_stmts(lowered.ir.body) if isinstance(s, Alloc)]
        assert len(allocs) == 1                                          # only the result


def _exps(loop: For) -> bool:
    """Whether ``loop`` computes exponentials (a softmax's: ``rt_exp_nonpositive_float32``)."""
    return "type='Exp'" in repr(loop) or "rt_exp_nonpositive" in repr(loop)


def _softmax(x):
    e = rt.exp(x - rt.reduce_max(x, axis=-1, keepdims=True))
    return e / rt.reduce_sum(e, axis=-1, keepdims=True)


def test_row_passes_sum_float32_in_chunks_keep_exponentials_in_a_scratch_row_and_divide_by_a_reciprocal():
    lowered = _lower(_softmax, rt.TensorSpec([64, 1100], F))
    (outer,) = [s for s in lowered.ir.body if isinstance(s, For)]
    (scratch,) = [s for s in walk_stmts(outer.body) if isinstance(s, Declare) and s.size and _row_buffer(s)]
    assert scratch.size == 1100
    (result,) = [s.ptr for s in walk_stmts(lowered.ir.body) if isinstance(s, Alloc)]
    chunks = [s for s in outer.body if isinstance(s, For) and not s.simd and s.var.startswith("c")]
    assert len(chunks) == 1 and chunks[0].stop == Poly.of(2)                              # 2 chunks of 512
    (inner,) = chunks[0].body[1:2]
    assert inner.simd and inner.reductions[0][1].startswith("part") and inner.stop - inner.start == Poly.of(512)
    # the 76 elements after the chunks: 4 blocks of 16 lanes and 12 (lanes.sum_lanes), added up as a tree
    tail = [s for s in outer.body if isinstance(s, For) and (s.stop - s.start).const in (16, 3, 12)]
    assert len(tail) == 3 and "scratch5[l" in str(lowered.ir) and str(lowered.ir).count("rt_tree_sum16_float(") == 1
    assert not [s for s in walk_stmts(tail) if isinstance(s, Store) and _row_buffer(s.ptr)]    # the sum only reads
    (exps,) = [s for s in outer.body if isinstance(s, For) and s.simd and s.stop == Poly.of(1100) and s.start == 0
               and any(isinstance(t, Store) for t in walk_stmts(s.body))]
    assert [s.ptr for s in walk_stmts(exps.body) if isinstance(s, Store)] == [scratch.name]   # e into the scratch
    assert _exps(exps) and not exps.reductions
    (streamed,) = [s for s in outer.body if isinstance(s, If)]        # through a row buffer to memory, or not
    (divided,) = [s for s in streamed.orelse if isinstance(s, If)]
    assert "fabsf(" in str(divided.cond) and "RealDiv" not in str(divided.then) and "RealDiv" in str(divided.orelse)
    assert [s.ptr for s in walk_stmts(divided.then) if isinstance(s, Store)] == [result]   # written once


@pytest.mark.usefixtures("before_pipelining")
def test_rows_of_unknown_length_use_a_scratch_row_where_it_fits_and_the_result_row_otherwise():
    """[None, None]: rows up to one vector, rows up to PAD_MAX, else a run-time choice between the static
    spelling's loops (a scratch row of SCRATCH_MAX, the exponentials in a loop of their own, the result written
    once) and, for longer rows, the exponentials kept in the result's row."""
    lowered = _lower(_softmax, rt.TensorSpec([None, None], F))
    (short,) = [s for s in lowered.ir.body if isinstance(s, If)]
    assert short.cond.op == "<=" and short.cond.b.value == PAD_LANES
    assert {s.stop for s in walk_stmts(short.then) if isinstance(s, For) and s.simd} == {Poly.of(PAD_LANES)}
    (shorter,) = short.orelse                    # rows up to PAD_MAX: whole vectors and a masked one (lanes.py)
    assert shorter.cond.op == "<=" and shorter.cond.b.value == PAD_MAX
    (choice,) = shorter.orelse
    (result,) = [s for s in lowered.ir.body if isinstance(s, Alloc)]
    columns = result.count.symbols() - {next(iter(_loops_of(choice.then)[0].stop.symbols()))}
    assert choice.cond.op == "<=" and choice.cond.b.value == SCRATCH_MAX and choice.cond.a.symbols() == columns
    (scratch,) = [s for s in walk_stmts(choice.then) if isinstance(s, Declare) and s.size and _row_buffer(s)]
    assert scratch.size == SCRATCH_MAX
    (exps,) = [s for s in walk_stmts(choice.then) if isinstance(s, For) and s.simd and _exps(s)
               and any(isinstance(t, Store) for t in walk_stmts(s.body))]
    assert not exps.reductions and [t.ptr for t in walk_stmts(exps.body) if isinstance(t, Store)] == [scratch.name]
    stores = [t.ptr for t in walk_stmts(choice.then) if isinstance(t, Store)]
    assert stores.count(result.ptr) == 2                  # once per row: by the reciprocal or by the division
    (outer,) = _loops_of(choice.orelse)
    # no scratch row
    assert not [s for s in walk_stmts(choice.orelse) if isinstance(s, Declare) and s.size and _row_buffer(s)]
    passes = [s for s in walk_stmts(outer.body) if isinstance(s, For) and s.simd]
    assert any(isinstance(s, Store) and s.ptr == result.ptr for p in passes[:-2] for s in walk_stmts(p.body))


def _loops_of(body):
    return [s for s in body if isinstance(s, For)]


def test_short_static_rows_run_over_whole_vectors_with_masked_loads_and_stores():
    """A softmax over 10 logits and a row sum over 20 run 16 and 32 iterations: loads and stores of the
    arguments and results under the row's length (hidden from the C compiler), the reductions folding their
    identity past it. The exponentials' scratch row has 16 elements: it is stored and read unmasked (a masked
    store read back by a masked load waits for the store to retire)."""
    lowered = _lower(lambda x: (rt.nn.softmax(x), rt.reduce_max(x, axis=-1)), rt.TensorSpec([256, 10], F))
    row_loops = [loop for loop in _loops(lowered.ir) if loop.simd]
    assert row_loops and all(loop.stop == Poly.of(16) for loop in row_loops)
    text = str(lowered.ir)
    assert "rt_opaque_i64(10)" in text and "-INFINITY)" in text          # the max's identity in dead lanes
    (scratch,) = [s for s in walk_stmts(lowered.ir.body) if isinstance(s, Declare) and s.size and _row_buffer(s)]
    assert scratch.size == 16
    unmasked = 0
    for loop in row_loops:
        stores = [s for s in walk_stmts(loop.body) if isinstance(s, Store) and s.ptr != scratch.name
                  and _row_buffer(s.ptr)]
        guarded = [s for b in loop.body if isinstance(b, If) for s in b.then]
        assert stores == guarded                                           # every store is under the length
        unmasked += sum(isinstance(s, Store) and s.ptr == scratch.name for s in loop.body)
        for node in walk_stmts(loop.body):
            if isinstance(node, Declare) and str(node.init).startswith("(r"):
                assert " < n" in str(node.init)                            # every load too
        for node in loop.body:
            if isinstance(node, Declare) and scratch.name in str(node.init):
                assert " < n" not in str(node.init)
    assert unmasked == 1
    summed = _lower(lambda x: rt.reduce_sum(x, axis=-1), rt.TensorSpec([64, 20], F))
    # the row's whole vector unmasked, then its last one under the length (lanes.peel_tails), in one sum's lanes
    text = str(summed.ir)
    assert [loop.stop for loop in _loops(summed.ir) if loop.simd] == [Poly.of(16)] * 3
    assert "x1[20 * k3 + l11]" in text and "l12 + 16 < n8 ? x1[20 * k3 + l12 + 16] : 0" in text
    assert text.count("rt_tree_sum16_float(") == 1
    whole = _lower(lambda x: rt.nn.softmax(x), rt.TensorSpec([64, 32], F))
    assert "rt_opaque_i64" not in str(whole.ir)
    assert all(loop.stop in (Poly.of(32), Poly.of(16)) for loop in _loops(whole.ir) if loop.simd)


def test_pairwise_distances_never_build_the_broadcast_tensor():
    lowered = _lower(lambda a, b: rt.reduce_sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1),
                     rt.TensorSpec([2000, 3], F), rt.TensorSpec([2000, 3], F))
    allocs = [s for s in walk_stmts(lowered.ir.body) if isinstance(s, Alloc)]
    assert [a.count for a in allocs] == [Poly.of(2000 * 2000)]


def test_a_scalar_loop_runs_in_registers():
    def newton(a, n):
        x = a
        i = 0
        while i < n:
            x = x - (x * x - a) / (2.0 * x)
            i += 1
        return x
    lowered = _lower(newton, rt.TensorSpec([], F), rt.TensorSpec([], rt.int32))
    loop = next(s for s in walk_stmts(lowered.ir.body) if isinstance(s, Loop))
    body = list(walk_stmts(loop.body))
    assert not [s for s in body if isinstance(s, (Alloc, Store, For))]
    assert [s for s in body if isinstance(s, Assign)]


def test_loops_over_tensors_allocate_only_when_a_buffer_grows():
    def collatz(x):
        steps = rt.zeros_like(x)
        while rt.reduce_any(x > 1):
            active = x > 1
            steps += rt.cast(active, rt.int32)
            x = rt.where(active, rt.where(x % 2 == 0, x // 2, 3 * x + 1), x)
        return steps
    for spec in (rt.TensorSpec([4096], rt.int32), rt.TensorSpec([None], rt.int32)):
        lowered = _lower(collatz, spec)
        loop = next(s for s in walk_stmts(lowered.ir.body) if isinstance(s, Loop))
        allocs = [s for s in walk_stmts(loop.body) if isinstance(s, Alloc)]
        assert allocs and all(a.kind in ("reserve", "stack") for a in allocs)


def test_a_callback_is_reported():
    lowered = _lower(lambda x: rt.cumsum(x) * 2.0, rt.TensorSpec([None], F))
    assert lowered.report.callbacks == {"Cumsum": 1}


def test_values_of_unknown_rank_stay_out_of_row_groups():
    """A py_function's result has no rank while tracing; reduced over every axis it is a scalar (as TensorFlow
    states it), and the row-group planner passes it by instead of failing the lowering (a KeyError found by the
    fuzzer's pyfunc kind)."""
    def f(m):
        r = rt.py_function(lambda a: a * 2.0, [m], [F])[0]
        s = rt.reduce_sum(r)
        assert s.shape == rt.TensorShape([])
        return rt.reduce_sum(m * s, axis=1) + rt.reduce_max(r, axis=1)
    lowered = _lower(f, rt.TensorSpec([None, 3], F))
    assert lowered.report.callbacks["EagerPyFunc"] == 1


def test_the_ir_prints_readably():
    text = str(_lower(lambda x: rt.reduce_sum(x * x, axis=1), rt.TensorSpec([None, 64], F)).ir)
    assert text.startswith("function rt_fn_test(x: float32[?,64]):")
    assert "rt_tree_sum16_float(" in text and "Mul(" in text and "alloc float[n1]" in text


def _calls(ir) -> list[str]:
    return [s.name for s in walk_stmts(ir.body) if isinstance(s, Call)]


def test_small_static_matmuls_take_the_fixed_size_kernel_and_the_rest_the_gemm():
    def products(a, b, big, x):
        return rt.matmul(a, b), rt.matmul(a, b, transpose_a=True, transpose_b=True), rt.matmul(big, big), \
            rt.matmul(x, x)
    lowered = _lower(products, rt.TensorSpec([10, 10], rt.int32), rt.TensorSpec([10, 10], rt.int32),
                     rt.TensorSpec([64, 64], F), rt.TensorSpec([None, None], F))
    assert SMALL_MATMUL < 64 ** 3
    assert _calls(lowered.ir) == ["rt_matmul_small_int32", "rt_matmul_small_int32", "rt_gemm_ld_float32",
                                  "rt_gemm_ld_float32"]
    small = [s for s in walk_stmts(lowered.ir.body) if isinstance(s, Call) and "small" in s.name]
    assert small[0].args[1] == small[0].args[3] == small[0].args[5] == Poly.of(10)      # literal row strides
    assert [str(a) for a in small[0].args[-5:]] == ["10", "10", "10", "0", "0"]
    assert [str(a) for a in small[1].args[-2:]] == ["1", "1"]


def test_a_batch_of_small_products_loops_over_the_fixed_size_kernel_in_parallel_when_big():
    lowered = _lower(lambda a, b: rt.matmul(a, b), rt.TensorSpec([None, 8, 8], F), rt.TensorSpec([None, 8, 8], F))
    (call,) = [s for s in walk_stmts(lowered.ir.body) if isinstance(s, Call) and "matmul" in s.name]
    assert call.name == "rt_matmul_small_float32"
    (loop,) = [f for f in _loops(lowered.ir) if call in f.body]
    assert "RT_GEMM_PARALLEL_MIN" in str(loop.parallel)


def _adam_like(m, v, w):
    def step(x, g):
        grad = rt.matmul(x, g, transpose_a=True)
        m.assign_add((grad - m) * 0.1)
        v.assign_add((grad * grad - v) * 0.001)
        w.assign_sub(m * 0.01 / (rt.sqrt(v) + 1e-7))
        return rt.constant(0.0)
    return step


def test_updates_reading_what_the_one_before_wrote_merge_into_the_products_epilogue():
    m, v, w = (rt.Variable(rt.zeros([64, 32])) for _ in range(3))
    lowered = _lower(_adam_like(m, v, w), rt.TensorSpec([128, 64], F), rt.TensorSpec([128, 32], F))
    (parts,) = [s for s in _loops(lowered.ir) if s.var.endswith("_part")]
    assert parts.parallel and parts.reductions, parts
    (inner,) = [s for s in walk_stmts(parts.body) if isinstance(s, For) and s.simd]
    stores = [s for s in inner.body if isinstance(s, Store)]
    assert len(stores) == 3 and all(s.index == stores[0].index for s in stores)
    loads_ = [s for s in inner.body if isinstance(s, Declare) and isinstance(s.init, Load)]
    first_store = inner.body.index(stores[0])
    assert loads_ and all(inner.body.index(d) < first_store for d in loads_)      # every load before the stores
    assert not [s for s in _loops(lowered.ir) if s is not parts and s.var not in (inner.var,)
                and not s.var.endswith("_i")], "the updates left a loop of their own"
    text = str(lowered.ir)
    assert "epilogue" in text and "rt_gemm_part_float32" in text


def test_an_update_streaming_big_moments_runs_after_its_product_on_threads():
    """Adam's update of a 784 x 128 weight streams three arrays besides the gradient: it runs apart from the
    gradient's product, as a parallel loop (static batch), or under the product's own condition (``None``
    batch); SGD's update of the same weight (one array) and a layer's bias and relu still fuse."""
    m, v, w = (rt.Variable(rt.zeros([784, 128])) for _ in range(3))
    for batch in (256, None):
        lowered = _lower(_adam_like(m, v, w), rt.TensorSpec([batch, 784], F), rt.TensorSpec([batch, 128], F))
        text = str(lowered.ir)
        assert "(epilogue)" not in text, text
        (update,) = [f for f in _loops(lowered.ir) if len([s for s in walk_stmts(f.body) if isinstance(s, Store)]) == 3]
        assert update.parallel is not None, text
        assert ("RT_GEMM_PARALLEL_MIN" in str(update.parallel)) == (batch is None), str(update.parallel)

    def sgd(x, g):
        w.assign_sub(rt.matmul(x, g, transpose_a=True) * 0.01)
        return rt.constant(0.0)

    def layer(x, b):
        return rt.nn.relu(rt.matmul(x, w) + b)
    for fn, specs in ((sgd, (rt.TensorSpec([256, 784], F), rt.TensorSpec([256, 128], F))),
                      (layer, (rt.TensorSpec([256, 784], F), rt.TensorSpec([128], F)))):
        assert "(epilogue)" in str(_lower(fn, *specs).ir), fn.__name__


def test_loops_stay_apart_when_one_reads_another_element_of_what_the_other_wrote():
    w, v = rt.Variable(rt.zeros([64])), rt.Variable(rt.zeros([64]))

    def step(x):
        w.assign(x * 2.0)
        v.assign(w[::-1] + 1.0)          # element i reads element 63 - i of w
        return rt.constant(0.0)
    lowered = _lower(step, rt.TensorSpec([64], F))
    loops = [loop for loop in _loops(lowered.ir) if any(isinstance(s, Store) for s in loop.body)]
    assert len(loops) == 2 and all(len([s for s in loop.body if isinstance(s, Store)]) == 1 for loop in loops), \
        str(lowered.ir)


def test_no_epilogue_reads_another_element_of_the_product_or_writes_an_operand():
    big = rt.Variable(rt.zeros([256, 256]))

    def symmetric(x):
        c = rt.matmul(x, x, transpose_a=True)
        return c + rt.transpose(c)

    def grows(x):
        big.assign(x)
        big.assign_add(rt.matmul(big, big) * 1e-3)     # the product reads `big` while the update writes it
        return rt.constant(0.0)
    for fn in (symmetric, grows):
        lowered = _lower(fn, rt.TensorSpec([256, 256], F))
        assert "rt_gemm_part_float32" not in str(lowered.ir), fn.__name__


def test_a_recurrence_over_any_batch_runs_its_activation_in_the_products_parts():
    """``tanh(h @ w + x[t])`` with ``None`` batch and time: the bounds check of ``x[t]``, between the product and
    the nest, moves before the product (it reads nothing the product writes), so the nest becomes its epilogue
    as with static sizes; before, the tanh ran after the product as a pass of its own, on one thread."""
    def rnn(inputs, h, w):
        xs = rt.transpose(inputs, [1, 0, 2])
        for t in rt.range(rt.shape(xs)[0]):
            h = rt.tanh(rt.matmul(h, w) + xs[t])
        return h
    lowered = _lower(rnn, rt.TensorSpec([None, None, 16], F), rt.TensorSpec([None, 16], F),
                     rt.TensorSpec([16, 16], F))
    main = lowered.ir.body
    parts = [s for s in walk_stmts(main) if isinstance(s, Call) and s.name == "rt_gemm_part_float32"]
    assert parts, str(lowered.ir)
    (loop,) = [f for f in _loops(lowered.ir) if any(c in f.body for c in parts)]
    assert "Tanh" in repr(loop.body)
    checks = [s for s in walk_stmts(main) if isinstance(s, Check) and "StridedSlice" in str(s)]
    assert checks                                    # still checked, before the product


def _parts_loop(lowered) -> For:
    (parts,) = [s for s in _loops(lowered.ir) if s.var.endswith("_part")]
    return parts


@pytest.mark.parametrize("perm", [[1, 0, 2], None])
def test_a_tensor_array_write_of_the_state_runs_in_the_products_parts(perm):
    """The TensorArray's write of a recurrence's state (a copy of ``tanh(h @ w + x[t])`` to the list, at the
    state's place in the stack, or in the transposed stack) joins the activation in the product's parts: each
    thread stores its own rows of the state; ``rt_list_set`` and the item's address move before the product."""
    def rnn(inputs, h, w):
        xs = rt.transpose(inputs, [1, 0, 2])
        states = rt.TensorArray(F, size=100)
        for t in rt.range(100):
            h = rt.tanh(h @ w + xs[t])
            states = states.write(t, h)
        return states.stack() if perm is None else rt.transpose(states.stack(), perm)
    lowered = _lower(rnn, rt.TensorSpec([32, 100, 64], F), rt.TensorSpec([32, 64], F), rt.TensorSpec([64, 64], F))
    parts = _parts_loop(lowered)
    (inner,) = [s for s in walk_stmts(parts.body) if isinstance(s, For) and s.simd]
    stores = [s for s in inner.body if isinstance(s, Store)]
    assert len(stores) == 2, str(lowered.ir)
    state, item = stores
    # the item: the state at the element just written
    assert isinstance(item.value, Load) and (item.value.ptr, item.value.index) == (state.ptr, state.index)
    row, col = (parts.var.replace("_part", suffix) for suffix in ("_i", "_j"))
    assert item.index.coefficient(col) == Poly.of(1)
    assert item.index.coefficient(row) == Poly.of(6400 if perm else 64), item.index
    text = str(lowered.ir)
    assert text.index("rt_list_set(") < text.index("rt_gemm_grid_float32("), text
    assert not [f for f in _loops(lowered.ir) if f is not inner and f.simd and any(
        isinstance(s, Store) and s.ptr == item.ptr for s in f.body)], "the item is still copied apart"


def test_with_unknown_dims_the_state_is_stored_in_the_products_parts_too():
    """``None`` batch and time, the trip count from ``rt.shape``: the transposed stack's rows are ``64 * n`` apart,
    ``n`` the list's length, at least 1 once ``rt_list_set`` set an item, so the rows of the state still land
    apart and the write joins the product's parts."""
    lowered = _lower(dynamic_rnn, rt.TensorSpec([None, None, 64], F), rt.TensorSpec([None, 64], F), rt.TensorSpec([64, 64], F))
    parts = _parts_loop(lowered)
    (inner,) = [s for s in walk_stmts(parts.body) if isinstance(s, For) and s.simd]
    stores = [s for s in inner.body if isinstance(s, Store)]
    assert len(stores) == 2, str(lowered.ir)
    row = parts.var.replace("_part", "_i")
    assert stores[1].index.coefficient(row).symbols(), stores[1].index      # 64 * n: the list's length


def test_rows_apart_only_when_no_two_elements_share_an_address():
    from transpiler.lowering.epilogue import _rows_apart
    i, j, n, t = (Poly.sym(v) for v in ("i", "j", "n", "t"))
    nest = [For("i", Poly.of(0), Poly.of(32), []), For("j", Poly.of(0), Poly.of(64), [])]
    assert _rows_apart(64 * i + j, nest) and _rows_apart(6400 * i + j + 64 * t, nest)
    assert _rows_apart(64 * n * i + j + 64 * t, nest, {"n"})
    assert not _rows_apart(64 * n * i + j, nest)             # n could be 0: every row at one address
    assert not _rows_apart(63 * i + j, nest)                 # rows overlap by one element
    assert not _rows_apart(i + 64 * j, nest)                 # columns 64 apart, rows 1: row 1 is row 0's shift
    batch = [For("i", Poly.of(0), n, []), For("j", Poly.of(0), Poly.of(64), [])]
    assert _rows_apart(64 * t * i + j, batch, {"t"}) and not _rows_apart(32 * t * i + j, batch, {"t"})


def test_a_copy_reading_another_element_of_the_epilogues_result_stays_apart():
    """A nest after the epilogue that reads the epilogue's result at another element than it wrote (the state's
    rows reversed) would read another thread's rows: it stays after the product."""
    def rnn(inputs, h, w):
        xs = rt.transpose(inputs, [1, 0, 2])
        states = rt.TensorArray(F, size=100)
        for t in rt.range(100):
            h = rt.tanh(h @ w + xs[t])
            states = states.write(t, h[::-1])
        return states.stack()
    lowered = _lower(rnn, rt.TensorSpec([32, 100, 64], F), rt.TensorSpec([32, 64], F), rt.TensorSpec([64, 64], F))
    (inner,) = [s for s in walk_stmts(_parts_loop(lowered).body) if isinstance(s, For) and s.simd]
    assert len([s for s in inner.body if isinstance(s, Store)]) == 1, str(lowered.ir)


def test_a_big_loop_after_a_product_too_small_for_threads_stays_parallel():
    lowered = _lower(lambda a, b: rt.nn.relu(rt.matmul(a, b)), rt.TensorSpec([1024, 1], F), rt.TensorSpec([1, 1024], F))
    assert "rt_gemm_part_float32" not in str(lowered.ir)
    assert any(loop.parallel for loop in _loops(lowered.ir))


def test_a_weight_update_moves_up_past_the_layers_below_into_its_gradients_product():
    """The update of an upper layer's weights comes after the lower layer's weight gradient (another product)
    and update; it reads none of what they write, so it runs in its own gradient's product."""
    w1, w2 = rt.Variable(rt.zeros([64, 32])), rt.Variable(rt.zeros([32, 48]))     # sizes that do not merge

    def step(x, h, d):
        d1 = rt.nn.relu(rt.matmul(d, w2, transpose_b=True))    # reads w2: before w2's update
        g2 = rt.matmul(h, d, transpose_a=True)                  # [32, 48]
        g1 = rt.matmul(x, d1, transpose_a=True)                 # [64, 32]
        w1.assign_sub(g1 * 0.1)
        w2.assign_sub(g2 * 0.1)                                 # after g1's product in program order
        return rt.constant(0.0)
    lowered = _lower(step, rt.TensorSpec([128, 64], F), rt.TensorSpec([128, 32], F), rt.TensorSpec([128, 48], F))
    text = str(lowered.ir)
    assert text.count("(epilogue)") == 3, text        # relu, and both updates in their gradients' products
    g2_call = text.index("rt_gemm_part_float32(x2, 32")       # h^T @ d: the second product
    g1_call = text.index("rt_gemm_part_float32(x1, 64")       # x^T @ d1: the third
    assert g2_call < text.index("Mul(", g2_call) < g1_call, text


def test_an_update_stays_after_a_statement_that_writes_what_it_reads():
    w, v = rt.Variable(rt.zeros([64, 64])), rt.Variable(rt.zeros([64, 64]))

    def step(x):
        g = rt.matmul(x, x, transpose_a=True)
        v.assign(rt.transpose(v) * 2.0)         # the update below reads v after this (not mergeable)
        w.assign_sub(g * v)
        return rt.constant(0.0)
    lowered = _lower(step, rt.TensorSpec([128, 64], F))
    assert "(epilogue)" not in str(lowered.ir), str(lowered.ir)


def test_a_sum_of_broadcast_products_becomes_a_matmul_of_a_copy_only():
    def cosine(x, y):
        return rt.reduce_sum(x[:, None, :] * y[None, :, :], axis=-1)

    def pairwise(x, y):         # a difference, not a product: stays a reduction
        return rt.reduce_sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)

    specs = (rt.TensorSpec([5, 3], F), rt.TensorSpec([4, 3], F))
    graph = optimize(rt.function(cosine).get_concrete_function(*specs).graph)
    before = [op.type for op in graph.operations]
    rewritten = contract_products(graph)
    assert [op.type for op in graph.operations] == before          # the executor's graph is not touched
    types = [op.type for op in rewritten.operations]
    assert "MatMul" in types and "Sum" not in types and "Mul" not in types, types
    matmul = next(op for op in rewritten.operations if op.type == "MatMul")
    assert (matmul.attrs["transpose_a"], matmul.attrs["transpose_b"]) == (False, True)
    x, y = np.arange(15, dtype=np.float32).reshape(5, 3), np.arange(12, dtype=np.float32).reshape(4, 3) - 6
    np.testing.assert_array_equal(run_graph(rewritten, [x, y])[0], x @ y.T)
    other = optimize(rt.function(pairwise).get_concrete_function(*specs).graph)
    assert contract_products(other) is other


def test_many_hoisted_row_indices_get_distinct_names():
    """An average pool written out over [None] * 4 (9 strided slices of the zero-padded input summed, divided by
    the same sum over a padded map of ones): more than 26 gather indices invariant in a row, each hoisted under
    a name of letters (the 27th was ``..._row{``: C the compiler rejects)."""
    from transpiler.lowering.verify import verify

    def pooled(x):
        h, w = rt.shape(x)[1], rt.shape(x)[2]
        oh, ow = (h + 1) // 2, (w + 1) // 2
        extra_h, extra_w = rt.maximum((oh - 1) * 2 + 3 - h, 0), rt.maximum((ow - 1) * 2 + 3 - w, 0)
        pads = rt.stack([rt.stack([0, 0]), rt.stack([extra_h // 2, extra_h - extra_h // 2]),
                         rt.stack([extra_w // 2, extra_w - extra_w // 2]), rt.stack([0, 0])])

        def window_sum(t):
            parts = [t[:, i:i + (oh - 1) * 2 + 1:2, j:j + (ow - 1) * 2 + 1:2, :] for i in range(3) for j in range(3)]
            return rt.add_n(parts)
        return window_sum(rt.pad(x, pads)) / window_sum(rt.pad(rt.ones(rt.stack([1, h, w, 1])), pads))
    lowered = _lower(pooled, rt.TensorSpec([None] * 4, F))
    verify(lowered.ir)
    names = [s.name for s in walk_stmts(lowered.ir.body) if isinstance(s, Declare) and "_row" in s.name]
    assert len(set(names)) > 26 and all(n[-1].isalpha() for n in names)      # (each loop version declares them)


def _fit_regression(x, y):
    w = rt.zeros([rt.shape(x)[1], 1])
    for _ in rt.range(5):
        with rt.GradientTape() as tape:
            tape.watch(w)
            loss = rt.reduce_mean(rt.square(rt.matmul(x, w) - y))
        w = w - 0.05 * tape.gradient(loss, w)
    return w


def test_a_shape_built_from_dims_keeps_their_symbols_so_a_loop_variable_over_it_keeps_its_dims():
    """``rt.zeros([rt.shape(x)[1], 1])`` is ``[m, 1]`` for an ``x`` of ``[n, m]`` (``shapes.known_element``): the
    weights of a regression keep x's columns' symbol through the loop, so the update ``w - lr * grad`` is one
    plain loop, not a broadcast computed and checked every step."""
    ir = _lower(_fit_regression, rt.TensorSpec([None, None], F), rt.TensorSpec([None, 1], F)).ir
    text = str(ir)
    main = text[text.index("function rt_fn_test("):]            # not its fallback (without x's rows == y's)
    body = main[main.index("  loop:"):]
    assert "incompatible shapes for broadcasting" not in body, body
    assert "out[0] = tensor(lv" in main and ", [n2, 1], dtype" in main
    assert "Fill: dimension" not in text            # a dim is never negative; the 1 is the static dim


def test_a_gradient_summed_to_its_own_dims_is_that_gradient_and_one_summed_reads_its_product_lazily():
    """The regression's ``SumToShape`` of ``2 * (x @ w - y) / n`` to y's shape: over ``y [None, 1]`` the dims
    say nothing was broadcast (no loop of its own); over ``y [None, None]`` it sums the product in its own loop
    (a one-column version for a y of one column) instead of storing the product first."""
    column = str(_lower(_fit_regression, rt.TensorSpec([None, None], F), rt.TensorSpec([None, 1], F)).ir)
    main = column[column.index("function rt_fn_test("):]
    body = main[main.index("  loop:"):]
    assert "# SumToShape" not in body                  # an alias: no code of its own
    product = body[body.index("# mul_1 = Mul"):].split("\n")[1].split(" = alloc")[0].strip()
    assert f"checked call rt_gemm_ld_float32(ctx, x3, n2, {product}, 1," in body, body
    anything = str(_lower(_fit_regression, rt.TensorSpec([None, None], F), rt.TensorSpec([None, None], F)).ir)
    main = anything[anything.index("function rt_fn_test("):]
    assert "# mul_1 = Mul" not in main[main.index("  loop:"):]          # computed inside the sum's loop
    graph = optimize(rt.function(_fit_regression).get_concrete_function(
        rt.TensorSpec([None, None], F), rt.TensorSpec([None, None], F)).graph)
    x = np.random.default_rng(0).random((64, 8), dtype=np.float32)
    y = x @ np.arange(8, dtype=np.float32)[:, None] / 8
    np.testing.assert_allclose(run_graph(graph, [x, y])[0], _fit_regression(rt.constant(x), rt.constant(y)).numpy(),
                               rtol=1e-6)


def test_row_groups_prefetch_the_next_row_and_can_stream_their_results():
    """A softmax over rows of 1024 asks for the next row of its input after the first pass and writes its
    rows through a row buffer and rt_stream_copy when rt_streams says the result is too big for the cache
    (decided once per call, before the row loop); a layer norm's broadcast scale is not prefetched; rows of
    16 floats (64 bytes, the next row in the lines this one brought) are not either."""
    def softmax(x):
        return rt.nn.softmax(x)

    def norm(x, gamma):
        centered = x - rt.reduce_mean(x, axis=-1, keepdims=True)
        return centered / rt.sqrt(rt.reduce_mean(rt.square(centered), axis=-1, keepdims=True) + 1e-5) * gamma

    for rows in (4096, None):
        text = str(_lower(softmax, rt.TensorSpec([rows, 1024], F)).ir)
        assert len(re.findall(r"call rt_prefetch_bytes\(x\d \+ \(1024 \* k\d+ \+ 1024\), 4096\)", text)) == 1, text
        decide = text.index("rt_streams(")
        assert decide < text.index("for k") and "call rt_stream_copy(" in text, text
    text = str(_lower(norm, rt.TensorSpec([512, 1024], F), rt.TensorSpec([1024], F)).ir)
    assert "rt_prefetch_bytes(x1 + " in text and "rt_prefetch_bytes(x2" not in text, text
    assert "rt_prefetch_bytes" not in str(_lower(softmax, rt.TensorSpec([512, 16], F)).ir)


def test_a_softmax_shift_takes_the_exp_of_non_positive_arguments():
    """``exp(x - reduce_max(x, keepdims=True))`` is at most 1: its exp needs no overflow to inf (over any axes);
    the exp of another difference, or of a float64 shift, is the general one."""
    def helpers(fn, *specs):
        ir = _lower(fn, *specs).ir
        return {x.name for s in walk_stmts(ir.body) for e in s.exprs() for x in walk_expr(e) if isinstance(x, Helper)}
    spec = rt.TensorSpec([64, 100], F)
    assert "rt_exp_nonpositive_float32" in helpers(_softmax, spec)
    assert "rt_exp_nonpositive_float32" in helpers(
        lambda x: rt.exp(x - rt.reduce_max(x, axis=0, keepdims=True)), spec)
    other = lambda x, y: rt.exp(x - rt.reduce_max(y, axis=-1, keepdims=True))    # noqa: E731
    assert "rt_exp_nonpositive_float32" not in helpers(other, spec, spec)
    reversed_shift = lambda x: rt.exp(rt.reduce_max(x, axis=-1, keepdims=True) - x)    # noqa: E731
    assert "rt_exp_nonpositive_float32" not in helpers(reversed_shift, spec)
    assert "rt_exp_nonpositive_float32" not in helpers(_softmax, rt.TensorSpec([64, 100], rt.float64))
