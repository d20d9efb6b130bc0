"""The passes of ``transpiler/lowering/lanes.py``: a padded row loop split into its whole vectors and its masked
last one (``peel_tails``), float sums kept in 16 lanes added as a tree (``sum_lanes``), and the loops they leave
alone."""
from __future__ import annotations

import re

import pytest

import runtime as rt
from tests.unit.lowering.test_printed_ir import _expect, _listing
from transpiler.lowering.ir import Assign, Declare, For, Function, Helper, Lit, Load, Poly, Var, walk_stmts
from transpiler.lowering.kernels import PAD_MAX
from transpiler.lowering.lanes import LANES, MAX_BLOCKS, peel_tails, sum_lanes
from transpiler.lowering.verify import verify

F = rt.float32


def test_a_padded_row_sums_its_whole_vectors_unmasked_and_its_last_under_the_length():
    _expect(lambda x: rt.reduce_sum(x, axis=-1), (rt.TensorSpec([8, 50], F),), """
        function f(x: float32[8,50]):
          let x1: float * = (float *)in[0].data
          let p2: float * = NULL
          # reduce_sum = Sum
          p2 = alloc float[8] (arena)
          for k3 in 8:
            let acc5: double = 0
            let n8: int64_t = rt_opaque_i64(50)
            let part6: float = 0
            let lanes10: float[16]
            for l11 in 16  [simd]:
              let live7: int = 1
              let ld9: float = x1[50 * k3 + l11]
              lanes10[l11] = 0 + (float)ld9
            for b12 in 1..3:
              for l13 in 16  [simd]:
                let live7: int = 1
                let ld9: float = x1[16 * b12 + 50 * k3 + l13]
                lanes10[l13] = lanes10[l13] + (float)ld9
            let terms15: float[16]
            for l14 in 16  [simd]:
              let live7: int = l14 + 48 < n8
              let ld9: float = l14 + 48 < n8 ? x1[50 * k3 + l14 + 48] : 0
              terms15[l14] = (float)(live7 ? ld9 : 0)
            for l16 in 16  [simd]:
              lanes10[l16] = lanes10[l16] + terms15[l16]
            part6 = part6 + rt_tree_sum16_float(((const float *)lanes10))
            acc5 = (acc5 + part6)
            p2[k3] = (float)acc5
          out[0] = tensor(p2, [8], dtype 7)
    """)


def test_long_rows_and_rows_of_unknown_length_keep_their_reduction_clause():
    """Over more than MAX_BLOCKS blocks, or a number known at run time, GCC kept the lanes on the stack."""
    for cols in (None, LANES * MAX_BLOCKS + 1):
        text = _listing(lambda x: rt.reduce_sum(x, axis=-1), rt.TensorSpec([8, cols], F))
        assert "lanes" not in text and "reduce(+:part" in text
    assert "lanes" in _listing(lambda x: rt.reduce_sum(x, axis=-1), rt.TensorSpec([8, LANES * MAX_BLOCKS], F))


@pytest.mark.usefixtures("before_pipelining")
def test_softmax_max_exponentials_and_stores_of_a_padded_row_are_split_too():
    text = _listing(rt.nn.softmax, rt.TensorSpec([8, 100], F))
    assert text.count("for r4 in 96  [simd") == 4             # max, exponentials, the two stores (reciprocal or not)
    # the last vector: the max, the exponentials, and each store's values into a local vector, then its live
    # lanes stored (_stores_after)
    assert text.count("for r4 in 96..112  [simd") == 6
    # ... and, where 8 floats fill a vector (AVX2) and cover the 4 live lanes, the exponentials' and the stores' as
    # 8 iterations (one AVX2 vector, not two: the reductions' stay whole)
    assert text.count("if rt_tail_in_half(4):") == 3 and text.count("for r4 in 96..104  [simd") == 5
    assert text.count("r4 < n") == 8            # the max's flag and load, the exps' loads, the stores (twice each)
    assert text.count("p2[100 * k3 + r4] = vals") == 4


@pytest.mark.usefixtures("before_pipelining")
def test_short_rows_of_unknown_length_run_whole_vectors_then_a_masked_one_when_the_row_has_more():
    text = _listing(rt.nn.softmax, rt.TensorSpec([8, None], F))
    assert "if n1 <= 128LL:" in text and "if n1 <= 16LL:" in text
    start = text.index("if n1 <= 128LL:")
    short = text[start:text.index("\n    else:\n", start)]
    assert short.count("& -16LL") == 2 * short.count("let whole") == 2 * 5     # the max, exps, sum, two stores
    # the sum's whole vectors: one block under its own `if` for each vector a row of at most 128 can have, then
    # its last vector, all into one set of lanes in vector registers added as a tree (no reduction clause: its
    # in-order end); the blocks add the scratch row's exponentials from the row itself, the last vector its
    # masked terms
    assert all(f"if {LANES * k} < whole" in short for k in range(PAD_MAX // LANES))
    assert short.count("rt_lanes16_sum_float") == 1 and "reduce(+:" not in short and "rt_tree_sum16" not in short
    assert short.count("rt_lanes16_add_float(") == PAD_MAX // LANES + 1
    assert len(re.findall(r"rt_lanes16_add_float\(lanes\d+, \(\(const float \*\)\(scratch37 \+ 16\)\)\)", short)) == 1
    # the max's, exponentials' and sum's tails and each store's (values, then the live lanes stored), the
    # exponentials' and stores' also as 8 iterations (rt_tail_in_half)
    assert short.count("for l") == short.count("if whole") + 2 + 5
    assert short.count("= vals") == 4 and short.count("if rt_tail_in_half(n") == 3
    # the sum's last vector loads the scratch row's exponentials unmasked (every lane is in the row's array),
    # then selects the live ones
    assert re.search(r"let (ld\d+): float = scratch\d+\[l\d+ \+ whole\d+\]\n.*\n.*\(live\d+ \? \1 : 0\)", short)


def test_computed_terms_of_rows_of_unknown_length_are_stored_then_added_as_vectors():
    """Layer norm's variance adds (x - mean)^2: each block's loop stores its terms (``0 + x``: a block that only
    copies its terms stays a loop, not a memcpy), then adds them as whole vectors; static rows keep their lane
    array."""
    def variance(x):
        return rt.reduce_mean(rt.square(x - rt.reduce_mean(x, axis=-1, keepdims=True)), axis=-1)
    short = _listing(variance, rt.TensorSpec([8, None], F))
    short = short[short.index("if n1 <= 128LL:"):]
    assert "rt_lanes16_add_float(lanes" in short and "terms" in short and "= 0 + (float)Square(Sub(" in short
    static = _listing(variance, rt.TensorSpec([8, 100], F))
    assert "rt_lanes16" not in static and "rt_tree_sum16_float" in static


def _loop(body, stop=40, start=0, reductions=(("+", "s"),), parallel=None, simd=True) -> Function:
    """``s = 0; for (r = start; r < stop; r++) body`` with ``x`` a float buffer, ``s`` a float sum."""
    loop = For("r", Poly.of(start), Poly.of(stop), body, parallel=parallel, simd=simd, reductions=list(reductions))
    return Function("f", [Declare("x", "float *", Lit(0, "int"))], [Declare("s", "float", Lit(0, "float")), loop])


def _add(value) -> Assign:
    return Assign("s", _plus(Var("s", "float"), value))


def _plus(a, b):
    from transpiler.lowering.ir import Arith
    return Arith("+", a, b, "float")


X = Load("x", Poly.sym("r"), "float")


def test_a_sum_of_40_is_two_blocks_and_a_rest_of_8_added_as_a_tree():
    fn = _loop([_add(X)])
    assert sum_lanes(fn)
    verify(fn)
    text = str(fn)
    # the first block stores 0 + its terms (no zeroed lanes), the second adds, then the 8 left
    assert "lanes1[l2] = 0 + x[l2]" in text and "lanes1[l3] = lanes1[l3] + x[l3 + 16]" in text
    assert "for l4 in 8  [simd]:" in text and "x[l4 + 32]" in text and text.count("rt_tree_sum16_float") == 1
    (tree,) = [s for s in walk_stmts(fn.body) if isinstance(s, Assign) and isinstance(s.value.b, Helper)]
    assert tree.name == "s"
    assert not [s for s in walk_stmts(fn.body) if isinstance(s, For) and s.reductions]


def test_a_run_time_count_of_whole_vectors_bounded_by_the_code_around_is_blocks_under_ifs_then_its_last_vector():
    from transpiler.lowering.ir import Compare, If, Select
    fn = _loop([_add(X)], stop=0)
    main = fn.body[-1]
    main.stop, main.at_most, main.multiple_of = Poly.sym("w"), 3 * LANES, LANES
    mask = Compare("<", Poly.sym("l") + Poly.sym("w"), Poly.sym("n"))
    last = For("l", Poly.of(0), Poly.of(LANES), [_add(Select(mask, Load("x", Poly.sym("l") + Poly.sym("w"), "float"),
                                                           Lit(0, "float"), "float"))],
               simd=True, reductions=[("+", "s")])
    fn.body.append(If(Compare("<", Poly.sym("w"), Poly.sym("n")), [last]))
    fn.body[1:1] = [Declare("n", "int64_t", Lit(100, "int64_t")), Declare("w", "int64_t", Lit(96, "int64_t"))]
    assert sum_lanes(fn)
    verify(fn)
    text = str(fn)
    # zeroed lanes in registers (no block may run), one block per vector the bound allows (adding x's row from x),
    # the last vector's terms into the same lanes
    assert text.count("= rt_lanes16_zero_float()") == 1 and text.count("rt_lanes16_sum_float") == 1
    assert "lanes1 = rt_lanes16_add_float(lanes1, ((const float *)(x + 16)))" in text
    assert all(f"if {LANES * k} < w:" in text for k in range(3)) and f"if {LANES * 3} < w" not in text
    assert "if w < n:" in text and not [s for s in walk_stmts(fn.body) if isinstance(s, For) and s.reductions]
    # without the bound, the loop keeps its reduction clause
    fn = _loop([_add(X)], stop=0)
    fn.body[-1].stop = Poly.sym("w")
    assert not sum_lanes(fn)


@pytest.mark.parametrize("case", ["read in the body", "parallel", "an int sum", "a max", "shorter than a vector",
                                  "longer than MAX_BLOCKS", "not vectorised"])
def test_loops_whose_sum_cannot_live_in_lanes_are_left_alone(case):
    if case == "read in the body":
        fn = _loop([_add(X), Assign("t", _plus(Var("s", "float"), X))])
    elif case == "parallel":
        fn = _loop([_add(X)], parallel=Lit(1, "int"))
    elif case == "an int sum":
        from transpiler.lowering.ir import Arith
        fn = _loop([Assign("s", Arith("+", Var("s", "int"), Lit(1, "int"), "int"))])
    elif case == "a max":
        fn = _loop([_add(X)], reductions=(("max", "s"),))
    elif case == "shorter than a vector":
        fn = _loop([_add(X)], stop=LANES - 1)
    elif case == "longer than MAX_BLOCKS":
        fn = _loop([_add(X)], stop=LANES * MAX_BLOCKS + 1)
    else:
        fn = _loop([_add(X)], simd=False)
    before = str(fn)
    assert not sum_lanes(fn) and str(fn) == before


def test_only_a_loop_padded_past_its_length_is_peeled():
    from transpiler.lowering.ir import Compare, Select
    length = Declare("n", "int64_t", Helper("rt_opaque_i64", (Poly.of(20),), "int64_t"))
    mask = Compare("<", Poly.sym("r"), Poly.sym("n"))
    body = [_add(Select(mask, X, Lit(0, "float"), "float"))]
    fn = _loop(body, stop=32)
    fn.body.insert(0, length)
    assert peel_tails(fn)
    verify(fn)
    main, tail = [s for s in fn.body if isinstance(s, For)]
    assert (main.start, main.stop, tail.start, tail.stop) == (0, 16, 16, 32)
    assert "r < n" not in str(main) and "r < n" in str(Function("g", [], tail.body))
    assert main.reductions == tail.reductions == [("+", "s")]
    for stop in (48, 20):                # not the length's padding: one vector more, or not padded
        fn = _loop(list(body), stop=stop)
        fn.body.insert(0, length)
        assert not peel_tails(fn)
