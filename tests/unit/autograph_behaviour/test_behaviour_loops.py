"""Loops: over Python lists, tensors, ranges and datasets; break/continue/else/return in every
combination and nesting; loop-local variables; loops that call functions and closures."""
from __future__ import annotations

import pytest
from behaviour_harness import DS, It, R, T, V, assert_matches_python, assert_matches_tf, cases

import runtime as rt

# -- one loop ------------------------------------------------------------------------------------


def continue_in_single_for(l):
    s = 0
    for c in l:
        if c % 2 > 0:
            continue
        s += c
    return s


def break_in_single_for(l):
    s = 0
    for c in l:
        if c % 2 > 0:
            break
        s += c
    return s


def unconditional_return_in_single_for(l):
    s = 0
    for c in l:
        s += c
        return s
    return s


def effectively_unconditional_return_in_single_for(l):
    s = 0
    for c in l:
        s += c
        if c % 2 > 0:
            return s
        else:
            return -s
    return s


def conditional_return_in_single_for(l):
    s = 0
    for c in l:
        s += c
        if s > 2:
            return s * 10
    return s


def for_else_no_break(l):
    s = 0
    for c in l:
        s = s * 10 + c
    else:
        s = s + 1000
    return s


def for_else_with_break(l):
    s = 0
    for c in l:
        if c > 2:
            break
        s = s * 10 + c
    else:
        s = -s
    return s


def continue_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        if x % 2 > 0:
            continue
        s += x
    return s


def break_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        if x % 2 > 0:
            break
        s += x
    return s


def multiple_breaks_in_single_while(n):
    s = 1
    i = 0
    while i < n:
        i += 1
        if i > 10 * n:
            break
        if i == n:
            break
        s = s * 10 + i
    return i, s


def break_followed_by_cond_in_single_while(x):
    while x > 0:
        if x == 2:
            break
        if x > 0:
            x -= 1
    return x


def unconditional_return_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        s += x
        return s
    return s


def effectively_unconditional_return_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        s += x
        if x % 2 > 0:
            return s
        else:
            return -s
    return s


def while_else(x, y):
    s = 0
    while x > 0:
        x -= 1
        if x > y:
            break
        s += x
    else:
        s = -100
    return s


def break_continue_else_in_while(x):
    s = 0
    while x > 0:
        x -= 1
        if x == 5:
            continue
        if x == 1:
            break
        s = s * 2 + x
    else:
        s += 1000
    return s


SINGLE_FOR = [continue_in_single_for, break_in_single_for, unconditional_return_in_single_for,
              effectively_unconditional_return_in_single_for, conditional_return_in_single_for,
              for_else_no_break, for_else_with_break]
SINGLE_WHILE = [continue_in_single_while, break_in_single_while, multiple_breaks_in_single_while,
                break_followed_by_cond_in_single_while, unconditional_return_in_single_while,
                effectively_unconditional_return_in_single_while, break_continue_else_in_while]
RETURNS_FIRST = (unconditional_return_in_single_for, effectively_unconditional_return_in_single_for,
                 unconditional_return_in_single_while, effectively_unconditional_return_in_single_while)


def _list(l):
    return list(l)


def _tensor(l):
    return T(l, "int32")


def _dataset(l):
    return DS(l)


def _list_of_tensors(m):
    return [T(row, "int32") for row in m]


@pytest.mark.parametrize("target,values,type_", cases(
    SINGLE_FOR, ([], [1], [2], [1, 2], [2, 4, 1, 3]), (_list, _tensor, _dataset)),
    ids=lambda v: getattr(v, "__name__", repr(v)))
def test_single_for(target, values, type_):
    assert_matches_python(target, type_(values))


@pytest.mark.parametrize("target,n,type_", cases(SINGLE_WHILE, (0, 1, 2, 4, 7), (int, _tensor)),
                         ids=lambda v: getattr(v, "__name__", repr(v)))
def test_single_while(target, n, type_):
    assert_matches_python(target, type_(n))


@pytest.mark.parametrize("x,y,type_", cases((0, 2, 4), (0, 2), (int, _tensor)))
def test_while_else(x, y, type_):
    assert_matches_python(while_else, type_(x), type_(y))


# -- nested loops --------------------------------------------------------------------------------


def continue_in_inner_for(m):
    s = 0
    for l in m:
        for c in l:
            if c % 2 > 0:
                continue
            s += c
    return s


def break_in_inner_for(m):
    s = 0
    for l in m:
        for c in l:
            if c % 2 > 0:
                break
            s += c
    return s


def break_continue_in_inner_for(m):
    s = 0
    for l in m:
        for c in l:
            if c % 2 > 0:
                break
            else:
                continue
            s += c
    return s


def break_outer_from_flag(m):
    s = 0
    done = False
    for l in m:
        for c in l:
            if c > 4:
                done = True
                break
            s = s * 10 + c
        if done:
            break
    return s


def return_from_inner_for(m):
    s = 0
    for l in m:
        for c in l:
            s += c
            if s > 5:
                return s * 100
    return s


def inner_for_else(m):
    s = 0
    for l in m:
        for c in l:
            if c == 3:
                break
            s += c
        else:
            s += 100
    return s


def continue_in_inner_while(x, y):
    s = 0
    while x > 0:
        x -= 1
        while y > 0:
            y -= 1
            if (x + y) % 2 > 0:
                continue
            s += x + y
    return s


def break_in_inner_while(x, y):
    s = 0
    while x > 0:
        x -= 1
        while y > 0:
            y -= 1
            if ((x + y) % 2) == 0:
                break
            s += x + y
    return s


def break_continue_in_inner_while(x, y):
    s = 0
    while x > 0:
        x -= 1
        while y > 0:
            y -= 1
            if (x + y) % 2 > 0:
                break
            else:
                continue
            s += x + y
    return s


def return_from_inner_while(x, y):
    s = 0
    while x > 0:
        x -= 1
        j = y
        while j > 0:
            j -= 1
            s += x * j
            if s > 4:
                return s, x
    return s, x


def inner_while_else_resets(x, y):
    s = 0
    while x > 0:
        x -= 1
        j = 0
        while j < y:
            j += 1
            if j == x:
                break
        else:
            s += 10
        s += j
    return s


@pytest.mark.parametrize("target,m,type_", cases(
    (continue_in_inner_for, break_in_inner_for, break_continue_in_inner_for, break_outer_from_flag,
     return_from_inner_for, inner_for_else),
    ([[], []], [[1], [2]], [[1, 2], [3, 4]], [[1, 2, 3], [4, 5, 6]], [[2, 4, 6], [2, 8, 1]]),
    (_list, _tensor, _list_of_tensors, _dataset)),
    ids=lambda v: getattr(v, "__name__", repr(v)))
def test_nested_for(target, m, type_):
    if type_ is _list_of_tensors and target in (break_outer_from_flag, return_from_inner_for):
        # the outer loop over a Python list unrolls; its break/return depends on a tensor: rejected
        assert_matches_tf(target, type_(m), match="not supported in Python for loops")
    else:
        assert_matches_python(target, type_(m))


@pytest.mark.parametrize("target,x,y,type_", cases(
    (continue_in_inner_while, break_in_inner_while, break_continue_in_inner_while, return_from_inner_while,
     inner_while_else_resets),
    (0, 1, 3), (0, 2, 4), (int, _tensor)),
    ids=lambda v: getattr(v, "__name__", repr(v)))
def test_nested_while(target, x, y, type_):
    assert_matches_python(target, type_(x), type_(y))


@pytest.mark.parametrize("x,y", [(3, 4), (0, 4)])
def test_nested_while_mixed_tensor_and_python_bounds(x, y):
    assert_matches_python(break_in_inner_while, T(x), y)
    assert_matches_python(continue_in_inner_while, x, T(y))


# -- basic loops (loop_basic_test) ------------------------------------------------------------------


def while_no_vars(n, v):
    v.assign(0)
    while v.read_value() < n:
        v.assign_add(1)
    return v.read_value()


def for_no_vars(l, v):
    v.assign(0)
    for _ in l:
        v.assign_add(1)
    return v.read_value()


def while_one_var(n):
    i = 0
    while i < n:
        i = i * 10 + 1
    return i


def for_one_var(l):
    i = 0
    for i in l:
        pass
    return i


def while_two_vars(n):
    s = 0
    i = 0
    while i < n:
        s = s * 10 + i
        i += 1
    return s


def for_two_vars(l):
    s = 0
    for i in l:
        s = s * 10 + i
    return s


def successive_while_loops(n1, n2):
    s = 0
    i = 0
    while i < n1:
        s = s * 10 + i
        i += 1
    i = 0
    while i < n2:
        s = s * 10 + i
        i += 1
    return s


def successive_for_loops(l1, l2):
    s = 0
    for i in l1:
        s = s * 10 + i
    for i in l2:
        s = s * 10 + i
    return s


def nested_while_loops(n1, n2):
    i = 0
    l = rt.TensorArray(rt.int32, size=0, dynamic_size=True, element_shape=())
    while i < n1:
        j = 0
        s = 0
        while j < n2:
            s = s * 10 + i * j
            j += 1
        l = l.write(i, s)
        i += 1
    return l.stack()


def nested_for_loops(m):
    l = rt.TensorArray(rt.int32, size=0, dynamic_size=True, element_shape=())
    for i in m:
        s = 0
        for j in i:
            s = s * 10 + j
        l = l.write(l.size(), s)
    return l.stack()


def while_creates_var(n):
    i = 0
    while i < n:
        i = n + 1
        j = i + 1
    return i, j


def for_creates_var(l):
    for i in l:
        pass
    return i  # noqa: B023 -- the loop variable after the loop, on purpose


@pytest.mark.parametrize("n,type_", cases((0, 1, 2), (int, _tensor)))
def test_while_variants(n, type_):
    assert_matches_python(while_no_vars, type_(n), V(0))
    assert_matches_python(while_one_var, type_(n))
    assert_matches_python(while_two_vars, type_(n))


@pytest.mark.parametrize("values,type_", cases(([], [1], [1, 2]), (_list, _tensor, _dataset)))
def test_for_variants(values, type_):
    assert_matches_python(for_no_vars, type_(values), V(0))
    assert_matches_python(for_one_var, type_(values))
    assert_matches_python(for_two_vars, type_(values))


@pytest.mark.parametrize("values", ([], [1], [1, 2]))
def test_for_over_a_dataset_iterator(values):
    assert_matches_python(for_no_vars, It(DS(values)), V(0), calls=1)
    assert_matches_python(for_two_vars, It(DS(values)), calls=1)


@pytest.mark.parametrize("n1,n2,type1,type2", cases((0, 1, 2), (0, 2), (int, _tensor), (int, _tensor)))
def test_successive_and_nested_while_loops(n1, n2, type1, type2):
    assert_matches_python(successive_while_loops, type1(n1), type2(n2))
    assert_matches_python(nested_while_loops, type1(n1), type2(n2))


@pytest.mark.parametrize("l1,l2,type1,type2", cases(
    ([], [1, 2]), ([], [3]), (_list, _tensor, _dataset), (_list, _tensor, _dataset)))
def test_successive_for_loops(l1, l2, type1, type2):
    assert_matches_python(successive_for_loops, type1(l1), type2(l2))


@pytest.mark.parametrize("m,type_", cases(
    ([[]], [[], []], [[1]], [[1], [2]], [[1, 2]], [[1, 2], [3, 4]]), (_tensor, _dataset)))
def test_nested_for_loops_dense(m, type_):
    assert_matches_python(nested_for_loops, type_(m))


def test_nested_for_loops_mixed_list():
    assert_matches_python(nested_for_loops, [[], T([], "int32"), [1], T([1], "int32"), [1, 2]])


@pytest.mark.parametrize("n,type_", cases((1, 2), (int, _tensor)))
def test_while_creates_var(n, type_):
    assert_matches_python(while_creates_var, type_(n))
    assert_matches_python(for_creates_var, type_(list(range(n))) if type_ is _tensor else list(range(n)))


def test_loop_that_creates_a_var_and_runs_zero_times_is_an_error_as_in_tf():
    assert_matches_tf(while_creates_var, T(0), match="loop must iterate at least once")
    assert_matches_tf(for_creates_var, T([], "int32"), match="loop must iterate at least once")
    assert_matches_tf(while_creates_var, 0)          # Python: UnboundLocalError
    assert_matches_tf(for_creates_var, [])


# -- loop scoping (loop_scoping_test) ------------------------------------------------------------


def for_with_local_var(l):
    s = 0
    for i in l:
        x = i + 2
        s = s * 10 + x
    return s


def while_with_local_var(x):
    s = 0
    while x > 0:
        y = x + 2
        s = s * 10 + y
        x -= 1
    return s


def for_with_lambda_iter_local_var(l):
    fns = []
    results = []
    for i in l:
        fns.append(lambda i=i: i + i)
    for f in fns:
        results.append(f())
    return results


def for_initializes_local_var(l):
    s = 0
    for i in l:
        if i == l[0]:
            x = 0
        else:
            x += 1
        s = s * 10 + x
    return s


def while_initializes_local_var(x):
    s = 0
    while x > 0:
        if x > 0:
            y = 0
        else:
            y += 1
        s = s * 10 + y
        x -= 1
    return s


def for_defines_iterate(n, fn):
    s = 0
    for i in fn(n):
        s = s * 10 + i
    return i, s  # noqa: B023


def for_reuses_iterate(n, fn):
    i = 7
    s = 0
    for i in fn(n):
        s = s * 10 + i
    return i, s


def for_alters_iterate(n, fn):
    i = 7
    s = 0
    for i in fn(n):
        i = 3 * i + 1
        s = s * 10 + i
    return i, s


@pytest.mark.parametrize("values,type_", cases(([], [1], [1, 2]), (_list, _tensor)))
def test_for_with_local_var(values, type_):
    assert_matches_python(for_with_local_var, type_(values))


@pytest.mark.parametrize("n,type_", cases((0, 1, 2), (range, R)))
def test_for_with_local_var_range(n, type_):
    assert_matches_python(for_with_local_var, type_(n))


@pytest.mark.parametrize("values", ([1], [1, 2]))
def test_for_with_lambda_local_var(values):
    assert_matches_python(for_with_lambda_iter_local_var, values)


@pytest.mark.parametrize("x,type_", cases((0, 1, 2), (int, _tensor)))
def test_while_with_local_var(x, type_):
    assert_matches_python(while_with_local_var, type_(x))


@pytest.mark.parametrize("values", ([], [1], [1, 2]))
def test_loops_initializing_local_vars_in_python(values):
    assert_matches_python(for_initializes_local_var, values)
    assert_matches_python(while_initializes_local_var, len(values))


@pytest.mark.parametrize("n,fn", cases((1, 2), (range, rt.range)))
def test_for_defines_iterate(n, fn):
    assert_matches_python(for_defines_iterate, n, fn)


@pytest.mark.parametrize("n,fn,target", cases((0, 1, 2), (range, rt.range),
                                                          (for_reuses_iterate, for_alters_iterate)))
def test_for_reuses_or_alters_iterate(n, fn, target):
    assert_matches_python(target, n, fn)


@pytest.mark.parametrize("values,target", cases(
    ([], [1], [1, 2]), (for_reuses_iterate, for_alters_iterate)))
def test_for_reuses_or_alters_iterate_of_a_tensor(values, target):
    assert_matches_python(target, T(values, "int32"), rt.identity)


# -- loops that call functions (loop_with_function_call_test) -------------------------------------


def while_with_call_in_cond(n, fn):
    i = 0
    s = 0
    while i < fn(n):
        s = s * 10 + i
        i += 1
    return s


def for_with_call_in_target(l, fn):
    s = 0
    for i in fn(l):
        s = s * 10 + i
    return s


def while_with_local_call_in_cond(n):
    def local_fn(x):
        return x * 3

    i = 0
    s = 0
    while i < local_fn(n):
        s = s * 10 + i
        i += 1
    return s


def while_with_call(n, fn):
    i = 0
    s = 0
    while i < n:
        s = s * 10 + fn(i)
        i += 1
    return s


def for_with_call(l, fn):
    s = 0
    for i in l:
        s = s * 10 + fn(i)
    return s


def for_with_local_call(l):
    def local_fn(x):
        return x * 3

    s = 0
    for i in l:
        s = s * 10 + local_fn(i)
    return s


def while_with_closure_call(n):
    i = 0

    def i_via_closure():
        return i + 2

    i = 0
    s = 0
    while i < n:
        s = s * 10 + i_via_closure()
        i += 1
    return s


def for_with_closure_call(l):
    i = 0

    def i_via_closure():
        return i + 2

    s = 0
    for i in l:
        s = s * 10 + i_via_closure()
    return s, i


def while_with_lambda_closure_call(n):
    i = 0
    s = 0
    i_via_closure = lambda: i + 2  # noqa: E731
    while i < n:
        s = s * 10 + i_via_closure()
        i += 1
    return s


def for_with_lambda_closure_call(l):
    i = 0
    s = 0
    i_via_closure = lambda: i + 2  # noqa: E731
    for i in l:
        s = s * 10 + i_via_closure()
    return s, i


def global_fn(x):
    return x * 2


class Helper:
    def method(self, x):
        return x * 4


CALLEES = (global_fn, lambda x: x * 1, Helper().method, abs)


@pytest.mark.parametrize("n,type_,fn", cases((0, 1, 2), (int, _tensor), CALLEES),
                         ids=lambda v: getattr(v, "__name__", repr(v)))
def test_while_with_call(n, type_, fn):
    assert_matches_python(while_with_call_in_cond, type_(n), fn)
    assert_matches_python(while_with_call, type_(n), fn)


@pytest.mark.parametrize("values,type_,fn", cases(([], [1], [1, 2]), (_list, _tensor), CALLEES),
                         ids=lambda v: getattr(v, "__name__", repr(v)))
def test_for_with_call(values, type_, fn):
    assert_matches_python(for_with_call, type_(values), fn)
    if fn is not abs:
        assert_matches_python(for_with_call_in_target, type_(values), fn)


@pytest.mark.parametrize("n,type_", cases((0, 1, 2), (int, _tensor)))
def test_while_with_local_calls_and_closures(n, type_):
    assert_matches_python(while_with_local_call_in_cond, type_(n))
    assert_matches_python(while_with_closure_call, type_(n))
    assert_matches_python(while_with_lambda_closure_call, type_(n))


@pytest.mark.parametrize("values,type_", cases(([], [1], [1, 2]), (_list, _tensor)))
def test_for_with_local_calls_and_closures(values, type_):
    assert_matches_python(for_with_local_call, type_(values))
    assert_matches_python(for_with_closure_call, type_(values))
    assert_matches_python(for_with_lambda_closure_call, type_(values))


@pytest.mark.parametrize("n,type_,fn", cases((0, 1, 2), (int, _tensor), (range, rt.range)))
def test_for_with_range_call_in_target(n, type_, fn):
    assert_matches_python(for_with_call_in_target, type_(n), fn)
