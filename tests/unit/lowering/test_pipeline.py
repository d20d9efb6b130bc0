"""``pipeline.pipeline_rows``: a loop over short rows computes the next row's leading reductions while it
finishes this row."""
from __future__ import annotations

import pytest

import runtime as rt
from runtime.optimizer import optimize
from transpiler.lowering import lower_function
from transpiler.lowering.ir import (Assign, Check, Declare, For, If, Lit, Load, Message, Poly, Store, Var, walk_expr,
                                    walk_stmts)
from transpiler.lowering.pipeline import SHORT_ROW, _split

F = rt.float32



def _lower(fn, *specs):
    return lower_function(optimize(rt.function(fn).get_concrete_function(*specs).graph), "rt_fn_test").ir


def _softmax(x):
    e = rt.exp(x - rt.reduce_max(x, axis=-1, keepdims=True))
    return e / rt.reduce_sum(e, axis=-1, keepdims=True)


def _layer_norm(x):
    mean = rt.reduce_mean(x, axis=-1, keepdims=True)
    var = rt.reduce_mean(rt.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) / rt.sqrt(var + 1e-5)


def _pipelined(body) -> list[For]:
    """The loops over a thread's rows: from ``lo`` to ``hi``, the first two locals of a loop over the threads
    (parallel, or one thread's for a row group under the parallel threshold)."""
    found = []
    for s in walk_stmts(body):
        if isinstance(s, For) and len(s.body) > 2 and all(isinstance(x, Declare) for x in s.body[:2]):
            lo, hi = Poly.sym(s.body[0].name), Poly.sym(s.body[1].name)
            found += [x for x in walk_stmts(s.body) if isinstance(x, For) and (x.start, x.stop) == (lo, hi)]
    return found


def _rows_loaded(body, k: str, length: int) -> set:
    """The rows (relative to row ``k``) of the loads in ``body``: each index with the other loop indices at 0."""
    starts = {x.index.substitute({name: Poly.of(0) for name in x.index.symbols() - {k}})
              for s in walk_stmts(body) for e in s.exprs() for x in walk_expr(e)
              if isinstance(x, Load) and k in x.index.symbols()}
    assert all(p.coefficient(k) == Poly.of(length) for p in starts), starts
    return {(p - Poly.sym(k) * length).const // length for p in starts}


@pytest.mark.parametrize("count", [1024, 64])
@pytest.mark.parametrize("fn", [_softmax, _layer_norm])
def test_short_rows_compute_the_next_rows_head_first(fn, count):
    """Over [1024, 100] (and [64, 100], on one thread): each thread's rows in order; an iteration starts from the
    values carried from the one before (the max; the mean and the scale), computes the next row's (loads of row
    k + 1, guarded by k + 1 < hi) and then the rest of its row, which loads only row k."""
    ir = _lower(fn, rt.TensorSpec([count, 100], F))
    (rows,) = _pipelined(ir.body)
    k = Poly.sym(rows.var)
    carried = next(i for i, s in enumerate(rows.body) if not isinstance(s, Declare))
    copies, ahead, rest = rows.body[:carried], rows.body[carried], rows.body[carried + 1:]
    assert all(isinstance(s, Declare) and s.init is not None and not s.size for s in copies)
    assert isinstance(ahead, If) and ahead.cond.op == "<" and ahead.cond.a == k + 1
    assert any(isinstance(s, For) for s in walk_stmts(ahead.then))
    assert _rows_loaded(ahead.then, rows.var, 100) == {1}
    assert _rows_loaded(rest, rows.var, 100) == {0}


def test_long_rows_keep_one_parallel_loop_and_unknown_lengths_choose_at_run_time():
    """Rows longer than SHORT_ROW are not latency-bound: one parallel loop over the rows, as lowered. Over
    [None, None] the pipelined loop runs when the row has at most SHORT_ROW elements, the loop as lowered
    otherwise."""
    ir = _lower(_softmax, rt.TensorSpec([1024, 1024], F))
    assert not _pipelined(ir.body)
    (outer,) = [s for s in ir.body if isinstance(s, For)]
    assert outer.parallel is not None and not outer.start.symbols()
    ir = _lower(_softmax, rt.TensorSpec([None, None], F))
    chosen = [s for s in walk_stmts(ir.body) if isinstance(s, If) and getattr(s.cond, "op", None) == "<="
              and isinstance(s.cond.b, Lit) and s.cond.b.value == SHORT_ROW]
    assert chosen and all(_pipelined(s.then) and not _pipelined(s.orelse) for s in chosen)
    assert all(isinstance(s.orelse[0], For) and s.orelse[0].parallel is not None for s in chosen)


def test_rows_too_few_for_threads_are_one_chunk_on_one_thread():
    """A row group under the parallel threshold ([64, 100]) is a serial loop marked independent
    (``For.independent``): pipelined as one thread's chunk of all the rows, its loop over the threads serial and
    of one iteration. A single row ([1, 100]) has nothing to overlap and stays as lowered."""
    ir = _lower(_softmax, rt.TensorSpec([64, 100], F))
    (threads,) = [s for s in ir.body if isinstance(s, For) and _pipelined([s])]
    assert threads.parallel is None
    (count,) = [s for s in ir.body if isinstance(s, Declare) and Poly.sym(s.name) == threads.stop]
    assert count.init == Lit(1, "int64_t")
    assert not _pipelined(_lower(_softmax, rt.TensorSpec([1, 100], F)).body)


def test_a_merged_loop_is_independent_only_when_both_were():
    """Two nests merged into one loop keep ``independent`` only if both loops had it: a serial loop whose
    iterations may depend on each other must not become a pipelined one by merging into a row group."""
    from transpiler.lowering.merge import _merge
    a = For("i", Poly.of(0), Poly.of(8), [Store("p", Poly.sym("i"), Lit(1.0, "float"))], independent=True)
    b = For("j", Poly.of(0), Poly.of(8), [Store("q", Poly.sym("j"), Lit(2.0, "float"))])
    assert _merge(a, b, {})
    assert not a.independent and len(a.body) == 2


def test_row_sums_are_left_alone():
    """A row sum (nothing after the reduction but its store) is not pipelined."""
    assert not _pipelined(_lower(lambda x: rt.reduce_sum(x, axis=-1), rt.TensorSpec([1024, 100], F)).body)


@pytest.mark.usefixtures("before_pipelining")
def test_heads_that_could_fail_or_write_memory_are_not_moved():
    """The leading statements move ahead only when they write their own locals alone: not a check (it could
    fail), a store to memory, or an assignment of a name declared outside the loop."""
    (loop,) = [s for s in _lower(_softmax, rt.TensorSpec([1024, 100], F)).body if isinstance(s, For)]
    assert _split(loop) is not None
    for first in (Check(Lit(0, "int"), Message("never")), Store("p2", Poly.sym(loop.var), Lit(0.0, "float")),
                  Assign("x1", Lit(0, "int"))):
        assert _split(type(loop)(loop.var, loop.start, loop.stop, [first] + loop.body, parallel=loop.parallel)) \
            is None


def test_versions_for_short_rows_need_no_second_choice_and_carry_only_the_rows_values():
    """Over [None, None] the row group's versions for rows up to a vector and up to PAD_MAX are pipelined
    without asking the length again; the row length and its whole vectors, the same for every row, are declared
    again in the rest rather than carried: the max is the one value carried."""
    from transpiler.lowering.kernels import PAD_LANES, PAD_MAX
    ir = _lower(_softmax, rt.TensorSpec([None, None], F))

    def choices(block, bound=None):
        for s in block:
            if isinstance(s, If):
                limit = s.cond.b.value if getattr(s.cond, "op", None) == "<=" and isinstance(s.cond.b, Lit) else None
                if limit == SHORT_ROW:
                    yield bound
                yield from choices(s.then, limit if limit is not None else bound)
                yield from choices(s.orelse, bound)
            else:
                for b in s.blocks():
                    yield from choices(b, bound)
    assert all(bound is None or bound > SHORT_ROW for bound in choices(ir.body))
    (short,) = [s for s in ir.body if isinstance(s, If)]
    assert short.cond.b.value == PAD_LANES and short.orelse[0].cond.b.value == PAD_MAX
    for version in (short.then, short.orelse[0].then):
        (rows,) = _pipelined(version)
        carried = [s for s in rows.body if isinstance(s, Declare) and isinstance(s.init, Var)
                   and s.init.name.startswith("ahead")]
        assert [s.ctype for s in carried] == ["float"], carried
