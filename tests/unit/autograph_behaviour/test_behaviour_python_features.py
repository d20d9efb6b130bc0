"""Python features inside converted functions: calls (nested functions, closures, lambdas, factories,
decorators, methods, keyword/default/varargs, recursion on a Python condition), comprehensions and
generator expressions, try/except/finally, print, global/nonlocal, del, augmented assignment on
subscripts, unpacking targets, enumerate/zip, builtins (len, range, abs, min, max, sum, dict, list),
extended slices, datasets and iterators, dtypes and None dims."""
from __future__ import annotations

import collections
import functools
import itertools

import numpy as np
import pytest
from behaviour_harness import DS, DSRange, It, T, V, assert_matches_python, assert_matches_tf, cases

import runtime as rt


def _tensor(v):
    return T(v)


# -- calls to user functions (call_to_user_function_test, call_to_lambda_function_test) --------


def function_1(x):
    return x * x * x


def function_2(x):
    return -1 * x + 11


def factory(n):
    if n == 1:
        return function_1
    return function_2


def static_fn(x):
    return function_1(x) + function_2(x)


def factory_dynamic_fn(x):
    f = factory(1)
    a = f(x)
    f = factory(2)
    return a + f(x)


def param_dynamic_fn(f, x):
    return f(x)


def dynamic_fn_with_kwargs(f, x):
    return f(x=x)


def variable_dynamic_allowlisted_fn(x):
    f = rt.identity
    return f(x)


def inline_lambda(x):
    l = lambda x: x * x if x > 0 else -x  # noqa: E731
    return l(x)


def external_lambda(x, l):
    return l(x)


def nested_function_with_control_flow(x):
    def helper(y, scale=2):
        if y > 0:
            return y * scale
        return -y
    return helper(x) + helper(x - 3, scale=3)


def closure_over_loop_variable(n):
    s = 0
    k = 3

    def add_k(v):
        return v + k
    for i in rt.range(n):
        s = add_k(s) + i
    return s


def nonlocal_counter(x):
    count = 0

    def bump(v):
        nonlocal count
        count += 1
        return v * 2
    y = bump(bump(x))
    return y, count


def _decorator(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) + 1
    return wrapper


@_decorator
def decorated_helper(x):
    if x > 2:
        return x * 10
    return x


def calls_decorated(x):
    return decorated_helper(x) * 2


def varargs_helper(*values, scale=1, **extra):
    total = 0
    for v in values:
        total += v * scale
    return total + extra.get("bias", 0)


def calls_with_varargs(x, y):
    return varargs_helper(x, y, x, scale=2, bias=y), varargs_helper(*[x, y]), varargs_helper(**{"bias": x})


def defaults_helper(x, a=1, b=None, *, c=3):
    if b is None:
        b = x
    return x * a + b * c


def calls_with_defaults(x):
    return defaults_helper(x), defaults_helper(x, 2), defaults_helper(x, b=5), defaults_helper(x, c=-1, a=0)


def recursive_helper(x, depth):
    if depth == 0:
        return x
    if x > 0:
        return recursive_helper(x - 1, depth - 1) * 2
    return recursive_helper(x + 1, depth - 1) + 1


def recursion_through_a_python_condition(x):
    return recursive_helper(x, 3)


def partial_call(x):
    p = functools.partial(defaults_helper, a=3)
    return p(x)


@pytest.mark.parametrize("x,type_", cases((-2, 1, 4), (int, _tensor)))
def test_calls(x, type_):
    x = type_(x)
    for target in (static_fn, factory_dynamic_fn, variable_dynamic_allowlisted_fn, inline_lambda,
                   nested_function_with_control_flow, nonlocal_counter, calls_decorated, calls_with_defaults,
                   recursion_through_a_python_condition, partial_call):
        assert_matches_python(target, x)
    assert_matches_python(param_dynamic_fn, function_1, x)
    assert_matches_python(dynamic_fn_with_kwargs, function_1, x)
    assert_matches_python(external_lambda, x, lambda x: x == 0)
    assert_matches_python(calls_with_varargs, x, type_(3))


@pytest.mark.parametrize("n", (0, 1, 4))
def test_closure_in_a_tensor_loop(n):
    assert_matches_python(closure_over_loop_variable, T(n))


# -- methods, class attributes ---------------------------------------------------------------


class Model:
    scale = 3                       # a class attribute

    def __init__(self, offset):
        self.offset = offset

    def apply(self, x):
        if x > 0:
            return x * self.scale + self.offset
        return self.helper(x)

    def helper(self, x):
        return x - self.offset

    @staticmethod
    def static(x):
        return x * 2

    @classmethod
    def from_class(cls, x):
        return x * cls.scale

    @property
    def doubled(self):
        return self.offset * 2

    def uses_all(self, x):
        return self.apply(x) + Model.static(x) + self.from_class(x) + self.doubled


@pytest.mark.parametrize("x,type_", cases((-3, 0, 5), (int, _tensor)))
def test_methods(x, type_):
    m = Model(4)
    assert_matches_python(m.apply, type_(x))
    assert_matches_python(m.uses_all, type_(x))
    assert_matches_python(Model.static, type_(x))
    assert_matches_python(Model.from_class, type_(x))


class Stateful(rt.Module):
    def __init__(self):
        super().__init__()
        self.v = rt.Variable(0)

    @rt.function
    def step(self, x):
        for i in rt.range(x):
            if i % 2 == 0:
                self.v.assign_add(i)
            else:
                self.v.assign_sub(1)
        return self.v.read_value()


def test_module_method_with_a_variable():
    m = Stateful()
    plain = Stateful()
    for x in (3, 4, 0):
        expected = Stateful.step.python_function(plain, rt.constant(x))
        assert int(m.step(rt.constant(x))) == int(expected)


# -- comprehensions, generator expressions ------------------------------------------------------


def list_comprehension(x):
    return [x * i for i in range(3) if i != 1]


def dict_comprehension(x):
    return {f"k{i}": x + i for i in range(2)}


def nested_comprehension(x):
    return [[x * i + j for j in range(2)] for i in range(2)]


def generator_expression_sum(x):
    return sum(x * i for i in range(4))


def comprehension_over_tensor_rows(m):
    return [rt.reduce_sum(row) for row in m]


def set_comprehension_size(x):
    return len({i % 3 for i in range(7)}) * x


def any_all_of_generators(x):
    return any(v > 2 for v in [1, 2, 3]), all(v > 0 for v in [1, 2]), x


@pytest.mark.parametrize("x,type_", cases((-1, 2), (int, _tensor)))
def test_comprehensions(x, type_):
    for target in (list_comprehension, dict_comprehension, nested_comprehension, generator_expression_sum,
                   set_comprehension_size, any_all_of_generators):
        assert_matches_python(target, type_(x))


def test_comprehension_over_a_static_tensor():
    assert_matches_python(comprehension_over_tensor_rows, T([[1, 2], [3, 4], [5, 6]]))


# -- try / except / finally ---------------------------------------------------------------------


def try_except_else_finally(x, fail):
    log = []
    try:
        if fail:
            raise KeyError("k")
        y = x + 1
    except KeyError:
        y = x - 1
        log.append("except")
    else:
        log.append("else")
    finally:
        log.append("finally")
    return y, log


def try_with_tensor_if_inside(x):
    try:
        if x > 0:
            y = x * 2
        else:
            y = -x
    finally:
        z = 1
    return y + z


def except_reraises_as_other_type(x):
    try:
        return {"a": x}["b"]
    except KeyError as e:
        raise ValueError(f"missing {e}") from e


def nested_try_in_loop(n):
    s = 0
    for i in rt.range(n):
        try:
            s += i
        finally:
            s += 1
    return s


@pytest.mark.parametrize("x,fail,type_", cases((-2, 3), (True, False), (int, _tensor)))
def test_try_statements(x, fail, type_):
    assert_matches_python(try_except_else_finally, type_(x), fail)
    assert_matches_python(try_with_tensor_if_inside, type_(x))
    assert_matches_python(except_reraises_as_other_type, type_(x), allow_exceptions=True)


@pytest.mark.parametrize("n", (0, 3))
def test_try_finally_in_a_tensor_loop(n):
    assert_matches_python(nested_try_in_loop, T(n))


# -- print, global, del ------------------------------------------------------------------------


def lone_print(x):
    print(x)


def print_multiple_values(x):
    print("x is", x, {"foo": "bar"}, sep="|", end="!\n")


def print_in_cond(x):
    if x == 0:
        print(x)


@pytest.mark.parametrize("x", (0, 1, "text", [1, 2]))
def test_print_of_python_values(x):
    assert_matches_python(lone_print, x)
    assert_matches_python(print_multiple_values, x)
    assert_matches_python(print_in_cond, x)


def rt_print(x, y):
    rt.print("x is", x)
    rt.print("y is", y, output_stream=__import__("sys").stdout)
    return x


def test_rt_print_runs_on_every_call(capsys):
    f = rt.function(rt_print)
    for _ in range(2):
        f(rt.constant([1, 2]), rt.constant(3.5))
    captured = capsys.readouterr()
    assert captured.out == "y is 3.5\ny is 3.5\n" and captured.err == "x is [1 2]\nx is [1 2]\n"


_counter = 0


def global_update(x):
    global _counter
    _counter += 1
    if x > 0:
        return x + _counter
    return x - _counter


def test_global_mutation_happens_while_tracing_only():
    global _counter
    _counter = 0
    f = rt.function(global_update)
    assert int(f(rt.constant(5))) == 6 and int(f(rt.constant(-5))) == -6   # traced once
    assert _counter == 1


def del_then_reassign(x):
    y = x * 2
    del y
    y = x + 1
    if x > 0:
        z = y
        del z
    return y


def del_item_and_attribute(x):
    d = {"a": x, "b": x * 2}
    del d["a"]
    ns = collections.namedtuple("NS", "v")(x)
    obj = type("Obj", (), {})()
    obj.attr = ns.v
    del obj.attr
    return d, hasattr(obj, "attr")


@pytest.mark.parametrize("x,type_", cases((-1, 2), (int, _tensor)))
def test_del(x, type_):
    assert_matches_python(del_then_reassign, type_(x))
    assert_matches_python(del_item_and_attribute, type_(x))


# -- assignment forms ----------------------------------------------------------------------------


def augmented_subscripts(x, n):
    d = {"a": x, "b": [x, x]}
    l = [x, x * 2]
    for _ in rt.range(n):
        d["a"] += 1
        d["b"][1] *= 2
        l[-1] -= 3
        l[0] //= 2
    return d, l


def tuple_unpacking_targets(x):
    a, (b, c), *rest = x, (x + 1, x + 2), x + 3, x + 4
    d = {}
    d["p"], d["q"] = b, c
    first, *_ = rest
    a, b = b, a
    return a, b, c, d, first, rest


def swap_in_tensor_loop(n):
    a, b = rt.constant(0), rt.constant(1)
    for _ in rt.range(n):
        a, b = b, a + b
    return a, b


def unpack_in_for_target(m):
    s = 0
    for i, (a, b) in enumerate(m):
        s += i * a - b
    return s


def walrus_and_ternary(x):
    if (y := x * 2) > 3:
        return y
    return -y


@pytest.mark.parametrize("x,n", cases((1, 6), (0, 3)))
def test_augmented_assignment_on_subscripts(x, n):
    assert_matches_python(augmented_subscripts, T(x), T(n))


@pytest.mark.parametrize("x,type_", cases((-1, 5), (int, _tensor)))
def test_unpacking(x, type_):
    assert_matches_python(tuple_unpacking_targets, type_(x))
    assert_matches_python(walrus_and_ternary, type_(x))


@pytest.mark.parametrize("n", (0, 1, 7))
def test_swap_in_a_tensor_loop(n):
    assert_matches_python(swap_in_tensor_loop, T(n))


def test_unpacking_in_for_targets():
    assert_matches_python(unpack_in_for_target, [(1, 2), (3, 4)])
    assert_matches_python(unpack_in_for_target, T([[1, 2], [3, 4], [5, 7]]))


# -- enumerate, zip, range, len and other builtins ------------------------------------------------


def enumerate_zip(a, b):
    s = 0
    for i, (x, y) in enumerate(zip(a, b)):
        s = s * 10 + i * x + y
    return s


def enumerate_with_start(a):
    s = 0
    for i, x in enumerate(a, 1):
        s += i * x
    return s


def range_with_tensor_bounds(start, stop, step):
    s = 0
    for i in range(start, stop, step):
        s = s * 3 + i
    return s


def rt_range_negative_step(start, stop):
    s = 0
    for i in rt.range(start, stop, -2):
        s = s * 3 + i
    return s


def len_of_tensor(x):
    return len(x), rt.size(x), rt.shape(x)[0]


def builtins_on_tensors(x, y):
    return abs(x), abs(x - y), rt.maximum(x, y), rt.minimum(x, y)


def python_min_of_tensors(x, y):
    return min(x, y)


def builtin_calls(x):
    return dict(foo=x), list(range(3)), tuple([x, x])


def dict_call_aliased(x):
    def fake_dict(x):
        return x
    dict = fake_dict  # noqa: A001
    return dict(x)


def len_call_dynamic(x):
    def gen_len():
        return len
    return gen_len()(x)


def nested_call(x):
    return list(range(len(x)))


@pytest.mark.parametrize("a,b,type_", cases(([], [1], [3, 1, 2]), ([], [5], [4, 6, 8]),
                                                        (list, lambda v: T(v, "int32"))))
def test_enumerate_zip(a, b, type_):
    assert_matches_python(enumerate_zip, type_(a), type_(b))
    assert_matches_python(enumerate_with_start, type_(a))


@pytest.mark.parametrize("bounds,type_", cases(
    [(0, 5, 1), (5, 0, -1), (7, -3, -3), (2, 9, 4), (3, 3, 1), (4, 1, 1), (-4, 4, 3)], (int, _tensor)))
def test_range_bounds_and_steps(bounds, type_):
    assert_matches_python(range_with_tensor_bounds, *[type_(b) for b in bounds])


@pytest.mark.parametrize("start,stop,type_", cases((5, 0, -3), (-4, 1, 6), (int, _tensor)))
def test_rt_range_with_a_negative_step(start, stop, type_):
    assert_matches_python(rt_range_negative_step, type_(start), type_(stop))


def test_range_with_a_zero_step_is_an_error():
    """(TensorFlow's range loop spins forever here; Python and rt.range reject a zero step.)"""
    with pytest.raises(ValueError):
        range_with_tensor_bounds(0, 5, 0)
    with pytest.raises(rt.errors.InvalidArgumentError, match="delta must not be zero"):
        rt.function(range_with_tensor_bounds)(rt.constant(0), rt.constant(5), rt.constant(0))


@pytest.mark.parametrize("x", ([1, 2, 3], [[1.0], [2.0]], [True]))
def test_len_and_builtins(x):
    assert_matches_python(len_of_tensor, T(x))
    assert_matches_python(nested_call, T(x))
    assert_matches_python(len_call_dynamic, T(x))
    assert_matches_python(builtin_calls, T(x))
    assert_matches_python(dict_call_aliased, T(x))


@pytest.mark.parametrize("x,y", [(-3, 2), (4, 4), (0, -1)])
def test_abs_min_max(x, y):
    assert_matches_python(builtins_on_tensors, T(x), T(y))
    assert_matches_tf(python_min_of_tensors, T(x), T(y), match="as a Python bool")    # as TensorFlow: an error


def len_of_none_dim(x):
    return len(x)


def test_len_of_a_none_dim_is_a_tensor():
    f = rt.function(len_of_none_dim, input_signature=[rt.TensorSpec([None], rt.int32)])
    for n in (0, 3):
        assert int(f(rt.constant(np.arange(n, dtype=np.int32)))) == n


# -- extended slices, newaxis (ext_slice_test) -------------------------------------------------


def basic_ext_slice(n):
    return n[:, :], n[0, :], n[:, 0], n[-1, ::-1], n[::2, 1:], n[1:-1, ::-2]


def basic_expand_dims(n):
    return n[:, rt.newaxis] - n[rt.newaxis, :]


def slice_of_application(n, x):
    return n(x)[:, rt.newaxis] - n(x)[rt.newaxis, :]


def ellipsis_slice(n):
    return n[..., 0], n[..., rt.newaxis, 1:]


@pytest.mark.parametrize("x", (np.eye(3, dtype=np.float32), np.arange(12, dtype=np.int32).reshape(3, 4)))
def test_extended_slices(x):
    assert_matches_python(basic_ext_slice, T(x))
    assert_matches_python(basic_expand_dims, T(x[0]))
    assert_matches_python(slice_of_application, lambda v: v, T(x))
    assert_matches_python(ellipsis_slice, T(x))


# -- datasets and iterators (datasets_test) --------------------------------------------------------


def dataset_no_vars_loop(ds, v):
    for e in ds:
        v.assign_add(e)
    return v.read_value()


def dataset_single_var_loop(ds):
    s = rt.constant(0, dtype=rt.int64)
    for e in ds:
        s = s * 10 + e
    return s


def dataset_two_vars_loop(ds):
    s = rt.constant(0, dtype=rt.int64)
    p = rt.constant(1, dtype=rt.int64)
    for e in ds:
        s += e
        p *= e
    return s, p


def dataset_loop_with_break(ds):
    s = rt.constant(0, dtype=rt.int64)
    for e in ds:
        s = s * 10 + e
        if s > 100:
            break
    return s


def dataset_loop_with_continue_and_else(ds):
    s = rt.constant(0, dtype=rt.int64)
    for e in ds:
        if e % 2 == 0:
            continue
        s = s * 10 + e
    else:
        s = -s
    return s


def iterator_resuming_loop(ds):
    s = rt.constant(0, dtype=rt.int64)
    itr = iter(ds)
    for e in itr:
        s = s * 10 + e
        break
    for e in itr:
        s = s * 10 + e
        break
    for e in itr:
        s = s * 10 + e
    return s


def iterator_next(ds):
    itr = iter(ds)
    return next(itr)


def iterator_next_multiple_calls(ds):
    itr = iter(ds)
    return 10 * next(itr) + next(itr)


def iterator_next_in_loop(ds, n):
    itr = iter(ds)
    s = rt.constant(0, dtype=rt.int64)
    for _ in range(n):
        s = s * 10 + next(itr)
    return s


def dataset_pipeline(ds):
    s = rt.constant(0, dtype=rt.int64)
    for b in ds.map(lambda x: x * 2).filter(lambda x: x % 3 != 0).batch(2):
        s = s * 100 + rt.reduce_sum(b)
    return s


def test_dataset_loops():
    for target in (dataset_single_var_loop, dataset_two_vars_loop, dataset_loop_with_break,
                   dataset_loop_with_continue_and_else, dataset_pipeline):
        for ds in (DSRange(7), DSRange(0), DSRange(3)):
            assert_matches_python(target, ds)
    assert_matches_python(dataset_no_vars_loop, DS([1, 2, 3], "int64"), V(np.int64(0)), calls=1)


def test_iterators():
    for target in (iterator_resuming_loop, iterator_next, iterator_next_multiple_calls):
        assert_matches_python(target, DSRange(7), calls=1)
    assert_matches_python(iterator_next_in_loop, DSRange(7), 7, calls=1)
    assert_matches_python(dataset_single_var_loop, It(DSRange(4)), calls=1)


# -- dtypes and None dims ------------------------------------------------------------------------


def integer_arithmetic(a, b):
    return a // b, a % b, a * b, a - b, a + b, abs(a) if a.dtype != rt.uint8 else a


def float_arithmetic(a, b):
    return a / b, a // b, a % b, a ** 2, rt.maximum(a, b), rt.sign(a)


def mixed_python_scalars(x):
    return x + 1, 2 * x, x / 2, x // 2 if x.dtype.is_integer else x, 1 - x


def bool_logic(a, b):
    return rt.logical_and(a, b), rt.logical_or(a, b), rt.logical_not(a), a == b, a != b


INT_PAIRS = [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (2**31 - 1, 1), (-2**31, 1), (5, 7)]


@pytest.mark.parametrize("dtype", ("int8", "int16", "int32", "int64", "uint8"))
def test_integer_dtypes(dtype):
    info = np.iinfo(dtype)
    for a, b in INT_PAIRS:
        if not (info.min <= a <= info.max and info.min <= b <= info.max) or (dtype == "uint8" and (a < 0 or b < 0)):
            continue
        assert_matches_python(integer_arithmetic, T(a, dtype), T(b, dtype))
        assert_matches_python(mixed_python_scalars, T([a, b], dtype))


@pytest.mark.parametrize("dtype", ("float16", "float32", "float64"))
def test_float_dtypes(dtype):
    for a, b in [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (0.0, 3.0), (-0.0, 1.0), (1e30 if dtype != "float16" else 6e4,
                                                                                   3.0)]:
        assert_matches_python(float_arithmetic, T(a, dtype), T(b, dtype))
    assert_matches_python(mixed_python_scalars, T([1.5, -2.25], dtype))


def test_bool_dtype():
    for a, b in itertools.product((True, False), repeat=2):
        assert_matches_python(bool_logic, T(a), T(b))


def none_dim_program(x):
    s = rt.reduce_sum(x)
    if s > 0:
        y = x * 2
    else:
        y = -x
    i = 0
    while i < rt.size(x):
        y = rt.concat([y[1:], y[:1]], 0)
        i += 1
    return y, rt.shape(y), len(x)


def test_none_dims_with_several_sizes():
    f = rt.function(none_dim_program, input_signature=[rt.TensorSpec([None], rt.float32)])
    for n in (0, 1, 2, 5):
        x = rt.constant(np.arange(n, dtype=np.float32) - 1)
        expected = none_dim_program(x)
        got = f(x)
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
    assert f.experimental_get_tracing_count() == 1
