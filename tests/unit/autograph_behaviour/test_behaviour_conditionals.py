"""Conditionals: if/elif/else with variables created, modified, deleted or set to None in branches;
conditional expressions; early returns (also in try/finally and context managers); nesting with loops;
and/or/not and comparisons, with Python and tensor operands."""
from __future__ import annotations

import pytest
from behaviour_harness import T, V, assert_matches_python, assert_matches_tf, cases

import runtime as rt


def _tensor(v):
    return T(v)


def if_no_vars(c, v):
    v.assign(0)
    if c:
        v.assign_add(1)
    return v.read_value()


def if_else_no_vars(c, v):
    v.assign(0)
    if c:
        v.assign_add(1)
    else:
        v.assign_add(2)
    return v.read_value()


def if_one_var(n):
    i = 0
    if i < n:
        i += 1
    return i


def if_else_one_var(n):
    i = 0
    if i < n:
        i += 1
    else:
        i += 2
    return i


def if_two_vars(n):
    i = 0
    j = 1
    if i < n:
        i += 1
        j *= 10
    return i, j


def if_else_two_vars(n):
    i = 0
    j = 1
    if i < n:
        i += 1
        j *= 10
    else:
        i += 2
        j *= 20
    return i, j


def if_elif_else(n):
    if n > 2:
        r = n * 100
    elif n > 0:
        r = n * 10
    elif n == 0:
        r = rt.constant(-7)
    else:
        r = -n
    return r


def if_else_creates_var(c):
    if c:
        i = 1
    else:
        i = 2
    return i


def if_local_var(c):
    i = 0
    if c:
        j = 1
        i = j + 1
    return i


def if_else_local_var(c):
    i = 0
    if c:
        j = 1  # noqa: F841
    else:
        j = 2
        i = j + 1
    return i


def if_locally_modified_var(c):
    i = 0
    j = 2
    if c:
        j = j + 1
        i = j + 1
    return i


def successive_ifs(n1, n2):
    s = 0
    i = 0
    if i < n1:
        s = s * 10 + i
        i += 1
    i = 0
    if i < n2:
        s = s * 10 + i
        i += 1
    return s


def successive_if_elses(n1, n2):
    s = 0
    i = 0
    if i < n1:
        s = s * 10 + i
        i += 1
    else:
        s = s * 11 + i
        i += 2
    i = 0
    if i < n2:
        s = s * 10 + i
        i += 1
    else:
        s = s * 11 + i
        i += 2
    return s


def nested_ifs(n1, n2):
    i = 0
    l = 0
    if i < n1:
        j = 0
        s = 0
        if j < n2:
            s = s * 10 + i * j
            j += 1
        l = l * 1000 + s
        i += 1
    return l


def nested_if_elses(n1, n2):
    i = 0
    l = 0
    if i < n1:
        j = 0
        s = 0
        if j < n2:
            s = s * 10 + i * j
            j += 1
        else:
            s = s * 11 + i * j
            j += 2
        l = l * 1000 + s
        i += 1
    else:
        j = 0
        s = 0
        if j < n2:
            s = s * 12 + i * j
            j += 3
        else:
            s = s * 13 + i * j
            j += 4
        l = l * 2000 + s
        i += 1
    return l


@pytest.mark.parametrize("target,c,type_", cases((if_no_vars, if_else_no_vars), (True, False),
                                                             (bool, _tensor)),
                         ids=lambda v: getattr(v, "__name__", repr(v)))
def test_no_vars(target, c, type_):
    assert_matches_python(target, type_(c), V(0))


@pytest.mark.parametrize("target,n,type_", cases(
    (if_one_var, if_else_one_var, if_two_vars, if_else_two_vars, if_elif_else), (-1, 0, 1, 3), (int, _tensor)),
    ids=lambda v: getattr(v, "__name__", repr(v)))
def test_several_vars(target, n, type_):
    assert_matches_python(target, type_(n))


@pytest.mark.parametrize("target,c,type_", cases(
    (if_else_creates_var, if_local_var, if_else_local_var, if_locally_modified_var), (True, False), (bool, _tensor)),
    ids=lambda v: getattr(v, "__name__", repr(v)))
def test_local_vars(target, c, type_):
    assert_matches_python(target, type_(c))


@pytest.mark.parametrize("target,n1,t1,n2,t2", cases(
    (successive_ifs, successive_if_elses, nested_ifs, nested_if_elses), (0, 1), (bool, _tensor), (0, 1),
    (bool, _tensor)), ids=lambda v: getattr(v, "__name__", repr(v)))
def test_composition(target, n1, t1, n2, t2):
    assert_matches_python(target, t1(n1), t2(n2))


# -- imbalanced branches: legal in Python, an error naming the variable with a tensor condition ---


def if_creates_var(c):
    if c:
        i = 1
    return i


def else_creates_var(c):
    if c:
        pass
    else:
        i = 2
    return i


def if_destroys_var(c):
    i = 1
    if c:
        del i
    return i


def else_destroys_var(c):
    i = 2
    if c:
        pass
    else:
        del i
    return i


def if_else_destroys_var(c):
    i = 1
    if c:
        del i
    else:
        del i
    return i


def if_returns_none(c):
    i = 0
    j = 1
    if c:
        i = None
        j = 2
    return i, j


def if_else_returns_none(c):
    if c:
        i = None
        j = 1
    else:
        i = None
        j = 2
    return i, j


def else_returns_none(c):
    i = 1
    j = 1
    if c:
        pass
    else:
        i = None
        j = 2
    return i, j


def test_var_lifetime_imbalanced_legal():
    assert_matches_python(if_creates_var, True)
    assert_matches_python(else_creates_var, False)
    assert_matches_python(if_destroys_var, False)
    assert_matches_python(else_destroys_var, True)
    assert_matches_python(if_returns_none, True)
    assert_matches_python(if_else_returns_none, False)
    assert_matches_python(else_returns_none, False)


@pytest.mark.parametrize("target,c,match", [
    (if_creates_var, True, "'i' must also be initialized in the else branch"),
    (if_creates_var, False, "'i' must also be initialized in the else branch"),
    (else_creates_var, True, "'i' must also be initialized in the main branch"),
    (else_creates_var, False, "'i' must also be initialized in the main branch"),
    (if_returns_none, True, "'i' is None"),
    (if_returns_none, False, "'i' is None"),
    (else_returns_none, True, "'i' is None"),
], ids=lambda v: getattr(v, "__name__", repr(v)))
def test_imbalanced_branches_with_a_tensor_condition_like_tf(target, c, match):
    assert_matches_tf(target, T(c), match=match)


@pytest.mark.parametrize("c", (True, False))
def test_where_python_is_clearer_than_tf(c):
    """TensorFlow rejects these at the `if` (a ValueError); rt follows Python: a variable deleted on
    every path is unbound where it is read, and None on every path is None."""
    assert_matches_python(if_else_destroys_var, T(c), allow_exceptions=True)
    assert_matches_python(if_else_returns_none, T(c))


@pytest.mark.parametrize("target,c", [(if_creates_var, False), (else_creates_var, True),
                                      (if_else_destroys_var, True), (if_else_destroys_var, False)])
def test_imbalanced_branches_with_a_python_condition_raise_as_python(target, c):
    assert_matches_python(target, c, allow_exceptions=True)


# -- conditional expressions ------------------------------------------------------------------


def consecutive_conds(x):
    if x > 0:
        x = -x if x < 5 else x
    else:
        x = -2 * x if x < 5 else 1
    if x > 0:
        x = -x if x < 5 else x
    else:
        x = (3 * x) if x < 5 else x
    return x


def cond_with_multiple_values(x):
    if x > 0:
        x = -x if x < 5 else x
        y = 2 * x if x < 5 else x
        z = -y if y < 5 else y
    else:
        x = 2 * x if x < 5 else x
        y = -x if x < 5 else x
        z = -y if y < 5 else y
    return x, y, z


def nested_ifexp(x):
    return (x * 2 if x > 3 else x * 3) if x > 0 else (-x if x > -3 else x * x)


def ifexp_with_side_effect_only_in_taken_branch(x, v):
    y = v.assign_add(1) if x > 0 else v.assign_sub(1)
    return y + v.read_value()


def ifexp_of_python_values(x):
    a = 1 if x > 0 else 2
    return a * x


@pytest.mark.parametrize("x,type_", cases((-4, -1, 0, 1, 4, 5, 7), (int, _tensor)))
def test_conditional_expressions(x, type_):
    assert_matches_python(consecutive_conds, type_(x))
    assert_matches_python(cond_with_multiple_values, type_(x))
    assert_matches_python(nested_ifexp, type_(x))
    assert_matches_python(ifexp_with_side_effect_only_in_taken_branch, type_(x), V(10))
    assert_matches_python(ifexp_of_python_values, type_(x))


# -- early returns -----------------------------------------------------------------------------


def return_with_default(x):
    if x > 0:
        rt.print("x", x)
        return x
    return x * x


def return_dependent_on_local(c):
    t = rt.constant(1)
    if c:
        return t
    t = rt.stack([t, t])
    return rt.reduce_sum(t)


def return_possibly_undefined(x):
    if x > 0:
        if x < 5:
            return x
    else:
        return x * x * x


def nested_ifs_returns(x):
    if x > 0:
        if x < 5:
            return x
        else:
            return x * x
    else:
        return x * x * x


def possible_return_before_loop(c1, c2, n):
    if c1:
        if c2:
            return 1
    for _ in range(n):
        pass
    return 2


def nested_ifs_and_context_managers(x):
    with rt.name_scope(""):
        if x > 0:
            if x < 5:
                with rt.name_scope(""):
                    return x
            else:
                return x * x
        else:
            return x * x * x


def unreachable_return(x):
    with rt.name_scope(""):
        if x > 0:
            if x < 5:
                with rt.name_scope(""):
                    return x
            else:
                return x * x
        else:
            return x * x * x
    return x * x * x * x


def return_with_default_in_contexmanager(x):
    with rt.name_scope(""):
        if x > 0:
            return 1
        return 0


def return_in_try_with_finally(x):
    try:
        if x > 0:
            return 1
        else:
            return 0
    finally:
        x = x + 1


def return_with_default_in_try_with_finally(x):
    try:
        if x > 0:
            return 1
        return 0
    finally:
        x = x + 1


def return_in_finally(x):
    try:
        return 2
    finally:
        if x > 0:
            return 1  # noqa: B012
        else:
            return 0  # noqa: B012


def return_with_default_in_finally(x):
    try:
        return 2
    finally:
        if x > 0:
            return 1  # noqa: B012
        return 0  # noqa: B012


def return_in_finally_default_in_try(x):
    try:
        if x > 0:
            return 0
    finally:
        return 1  # noqa: B012


def _raising_helper():
    raise ValueError()


def raise_during_return_caught():
    try:
        return _raising_helper()
    except ValueError:
        pass
    return 1


def raise_during_return_caught_in_tail_branch(c):
    if c:
        return 2
    try:
        return _raising_helper()
    except ValueError:
        pass
    return 1


def elif_chain_returns(x):
    if x > 10:
        return x - 10
    elif x > 5:
        return x - 5
    elif x > 0:
        return x
    return -x


def return_tuple_in_branches(x):
    if x > 0:
        return x, x * 2
    return -x, x


def return_dict_in_branches(x):
    if x > 0:
        return {"a": x, "b": x + 1}
    return {"a": -x, "b": x - 1}


@pytest.mark.parametrize("x,type_", cases((-1, 0, 1, 3, 6, 12), (int, _tensor)))
def test_early_returns(x, type_):
    for target in (return_with_default, nested_ifs_returns, nested_ifs_and_context_managers, unreachable_return,
                   return_with_default_in_contexmanager, return_in_try_with_finally,
                   return_with_default_in_try_with_finally, return_in_finally, return_with_default_in_finally,
                   return_in_finally_default_in_try, elif_chain_returns, return_tuple_in_branches,
                   return_dict_in_branches):
        assert_matches_python(target, type_(x), check_output=False)


@pytest.mark.parametrize("c,type_", cases((True, False), (bool, _tensor)))
def test_returns_dependent_on_locals(c, type_):
    assert_matches_python(return_dependent_on_local, type_(c))
    assert_matches_python(raise_during_return_caught_in_tail_branch, type_(c))


def test_raise_during_return_caught():
    assert_matches_python(raise_during_return_caught)


@pytest.mark.parametrize("x", (0, 3, 5))
def test_return_possibly_undefined(x):
    assert_matches_python(return_possibly_undefined, x)
    assert_matches_tf(return_possibly_undefined, T(x), match="else branch must also have a return|None")


@pytest.mark.parametrize("c1,c2,n", cases((True, False), (True, False), (0, 1, 2)))
def test_possible_return_before_loop(c1, c2, n):
    assert_matches_python(possible_return_before_loop, c1, c2, n)


# -- nested control flow (nested_control_flow_test) ----------------------------------------------


def independent_ifs(x, y):
    z = 0
    if x > 0:
        if y > 0:
            z = x + y
    return z


def dependent_inner_if(x):
    y = 0
    if x > 0:
        y = -2 * x
        if y > 0:
            x = -3 * x
    else:
        y = 4 * x
    return x, y


def dependent_imbalanced_inner_if(x):
    y = 0
    if x > 0:
        if x < 3:
            y = -2 * x
            x = -3 * x
    return x, y


def _hidden_raise():
    raise ValueError("exception used for control flow")


def if_with_local_modification_masked_by_exception(x):
    y = 0
    if x > 0:
        try:
            if x > 1:
                _hidden_raise()
            y = 1
        except ValueError:
            pass
        if y == 0:
            y = 2
    return y


def if_in_for(a):
    k = 0
    for i in a:
        if i % 2 > 0:
            j = i // 2
            k += j
    return k


def while_with_continue_in_context_manager(x):
    z = 0
    while x > 0:
        with rt.name_scope(""):
            x = x - 1
            if x < 5:
                continue
            z = z + 1
    return z


def while_continue_in_try(x):
    z = 0
    while x > 0:
        x = x - 1
        try:
            if x < 5:
                continue
            z = z + 1
        finally:
            z = z + 10
    return z


def while_break_in_context_manager(x):
    z = 0
    while x > 0:
        with rt.name_scope(""):
            x = x - 1
            if x < 5:
                break
            z = z + 1
    return z


def while_break_in_try(x):
    z = 0
    while x > 0:
        x = x - 1
        try:
            if x < 5:
                break
            z = z + 1
        finally:
            z = z + 10
    return z


def loop_initializing_invariant_variable(n):
    for i in range(n):
        if i == 0:
            a = 1
        else:
            a = 2
    return a


@pytest.mark.parametrize("x,y,tx,ty", cases((-1, 1), (-1, 1), (int, _tensor), (int, _tensor)))
def test_independent_ifs(x, y, tx, ty):
    assert_matches_python(independent_ifs, tx(x), ty(y))


@pytest.mark.parametrize("x,type_", cases((-1, 1, 2, 4), (int, _tensor)))
def test_dependent_inner_ifs(x, type_):
    assert_matches_python(dependent_inner_if, type_(x))
    assert_matches_python(dependent_imbalanced_inner_if, type_(x))


@pytest.mark.parametrize("x", (-1, 0, 1, 2))
def test_if_with_local_modification_masked_by_exception(x):
    assert_matches_python(if_with_local_modification_masked_by_exception, x)


@pytest.mark.parametrize("a,type_", cases((0, 1, 2, 5), (range, lambda n: T(list(range(n)), "int32"))))
def test_if_in_for(a, type_):
    assert_matches_python(if_in_for, type_(a))


@pytest.mark.parametrize("x,type_", cases((0, 4, 10), (int, _tensor)))
def test_jumps_in_context_managers_and_try(x, type_):
    for target in (while_with_continue_in_context_manager, while_continue_in_try, while_break_in_context_manager,
                   while_break_in_try):
        assert_matches_python(target, type_(x))


@pytest.mark.parametrize("n,type_", cases((1, 2), (int, _tensor)))
def test_loop_initializing_invariant_variable(n, type_):
    assert_matches_python(loop_initializing_invariant_variable, type_(n))


def test_loop_initializing_invariant_variable_zero_iterations_like_tf():
    assert_matches_tf(loop_initializing_invariant_variable, 0)
    assert_matches_tf(loop_initializing_invariant_variable, T(0), match="loop must iterate at least once")


# -- logical expressions and comparisons -------------------------------------------------------


def composite_ors_with_callable(x, y, z):
    z1 = lambda: z  # noqa: E731
    return x or y or z1()


def composite_ors(x, y, z):
    return x or y or z


def composite_ands(x, y, z):
    return x and y and z


def composite_mixed(x, y, z):
    return x or y or z and y and z


def not_of_and(x, y, z):
    return not (x and y) or not z


def equality(x, y):
    return x == y


def inequality(x, y):
    return x != y


def multiple_equality(x, y, z):
    return x == y == z


def comparison(x, y, z):
    return x < y and y < z


def chained_comparison(x, y, z):
    return x < y <= z


def chained_comparison_in_if(x, y, z):
    if x <= y < z != x:
        return y * 2
    return z


def short_circuit_side_effects(x, v):
    a = x > 0 and v.assign_add(1) > 1
    b = x > 0 or v.assign_add(10) > 5
    return a, b, v.read_value()


@pytest.mark.parametrize("args,type_", cases(
    [(False, True, False), (False, False, False), (True, True, True), (True, False, True), (False, True, True),
     (False, False, True)], (bool, _tensor)))
def test_logical_expressions(args, type_):
    args = [type_(a) for a in args]
    for target in (composite_ors, composite_ands, composite_mixed, composite_ors_with_callable, not_of_and):
        assert_matches_python(target, *args)


@pytest.mark.parametrize("args,type_", cases(
    [(1, 2, 3), (2, 1, 3), (3, 2, 1), (3, 1, 2), (1, 3, 2), (2, 3, 1), (1, 1, 2), (1, 1, 1), (2, 2, 1)],
    (int, _tensor)))
def test_comparisons(args, type_):
    args = [type_(a) for a in args]
    for target in (comparison, chained_comparison, chained_comparison_in_if, multiple_equality):
        assert_matches_python(target, *args)
    assert_matches_python(equality, *args[:2])
    assert_matches_python(inequality, *args[:2])


@pytest.mark.parametrize("x,type_", cases((-1, 1), (int, _tensor)))
def test_and_or_short_circuit_side_effects(x, type_):
    assert_matches_python(short_circuit_side_effects, type_(x), V(0))
