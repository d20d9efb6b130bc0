"""``unit.unit_inner``: nests whose inner extent is known only at run time get a version for an extent of one."""
from __future__ import annotations


import runtime as rt
from runtime.optimizer import optimize
from transpiler.lowering import lower_function
from transpiler.lowering.ir import Declare, For, If, Load, Poly, Store, walk_expr, walk_stmts

F = rt.float32



def _lower(fn, *specs):
    return lower_function(optimize(rt.function(fn).get_concrete_function(*specs).graph), "rt_fn_test").ir


def _unit_ifs(body) -> list[If]:
    return [s for s in walk_stmts(body) if isinstance(s, If) and getattr(s.cond, "op", None) == "=="
            and getattr(s.cond.b, "value", None) == 1]


def test_an_elementwise_nest_over_a_run_time_column_runs_as_one_vectorised_loop():
    """``relu(x + b)`` over [None, None] and [None] (a column of inputs, one bias): with the inner extent 1 the
    nest is one parallel, vectorised loop whose indexes are the row alone (the bias's 0); otherwise the nest as it
    was. The version without the entry's assumptions gets one too."""
    ir = _lower(lambda x, b: rt.nn.relu(x + b), rt.TensorSpec([None, None], F), rt.TensorSpec([None], F))
    assert len(_unit_ifs(ir.fallback.body)) == 1
    (unit,) = _unit_ifs(ir.body)
    (flat,) = unit.then
    assert isinstance(flat, For) and flat.simd and flat.parallel is not None
    assert not [s for s in walk_stmts(flat.body) if isinstance(s, For)]
    indexes = {x.index for s in walk_stmts(flat.body) for e in s.exprs() for x in walk_expr(e) if isinstance(x, Load)}
    indexes |= {s.index for s in walk_stmts(flat.body) if isinstance(s, Store)}
    assert indexes == {Poly.sym(flat.var), Poly.of(0)}, indexes
    (nest,) = unit.orelse
    assert isinstance(nest, For) and isinstance(nest.body[0], For) and nest.body[0].simd


def test_row_reductions_get_the_unit_version_and_row_groups_keep_their_own_versions():
    """A reduction over a run-time last axis (its chunks and remainder) is versioned; a softmax over [None,
    None], which chooses its loops by the row's length already, is not."""
    ir = _lower(lambda x: rt.reduce_sum(x * 2.0, axis=1), rt.TensorSpec([None, None], F))
    assert len(_unit_ifs(ir.body)) == 1
    ir = _lower(lambda x: rt.nn.softmax(x), rt.TensorSpec([None, None], F))
    assert not _unit_ifs(ir.body)


def test_static_and_serial_nests_are_left_alone():
    assert not _unit_ifs(_lower(lambda x: x * 2.0, rt.TensorSpec([8, 3], F)).body)
    assert not _unit_ifs(_lower(lambda x: x * 2.0, rt.TensorSpec([None], F)).body)


def test_a_mean_over_a_run_time_column_is_one_vectorised_reduction():
    """``reduce_mean(square(p - y))`` with y [None, None]: in the unit version each chunk's rows are one vectorised
    reduction (its loop over the single column folded in), not a serial loop around a reduction of one element."""
    ir = _lower(lambda p, y: rt.reduce_mean(rt.square(p - y)), rt.TensorSpec([None, 1], F),
                rt.TensorSpec([None, None], F))
    (unit,) = _unit_ifs(ir.body)
    loops = [s for s in walk_stmts(unit.then) if isinstance(s, For)]
    (reduction,) = [s for s in loops if s.reductions]
    assert reduction.simd and not [s for s in walk_stmts(reduction.body) if isinstance(s, For)]
    assert reduction.stop.const is None, "the reduction runs over the chunk's rows, not over the one column"
    (nest,) = unit.orelse
    assert any(s.reductions and s.stop.const is None for s in walk_stmts([nest]) if isinstance(s, For))


def test_a_sum_to_a_run_time_column_is_a_vectorised_loop_without_chunks():
    """The gradient of ``p - y`` for p [None, 1] sums each row of [None, None] (SumToShape): with one column its
    chunk count is 0 and its remainder one iteration, folded, and the row loop is vectorised straight-line code."""
    def grad(p, y):
        with rt.GradientTape() as tape:
            tape.watch(p)
            loss = rt.reduce_sum(rt.square(p - y))
        return tape.gradient(loss, p)
    ir = _lower(grad, rt.TensorSpec([None, 1], F), rt.TensorSpec([None, None], F))
    flats = [u.then[0] for u in _unit_ifs(ir.body)]
    row_sums = [f for f in flats if f.simd and not f.reductions
                and not any(isinstance(s, For) for s in walk_stmts(f.body))
                and any(isinstance(s, Declare) and s.ctype == "double" for s in f.body)]
    assert row_sums, "the SumToShape's version for one column"
