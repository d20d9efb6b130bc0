"""``if``/``while``/``for`` statements: graph control flow when the condition (or the iterated
value) is a symbolic tensor, plain Python otherwise.

The converted code passes the statement's parts as functions: the branches or the
loop body, ``get_state()``/``set_state(values)`` for the variables the statement
modifies, and their names (``symbol_names``) so that every error names them.
"""
from __future__ import annotations

import contextlib
import io
import math
import sys
import threading
import weakref

from runtime import context, nest
from runtime.autograph.converted_code import is_converted_code
from runtime.graph import Graph
from runtime.operators.variables import Undefined, UndefinedReturnValue, Untracked, is_undefined
from runtime.ops import api as rt
from runtime.shapes import as_shape
from runtime.tensor import is_symbolic, is_tensor


def _no_state():
    return ()


def _no_set_state(_):
    return None


def where() -> str:
    """`` (file, line N)`` of the innermost converted-code frame on the stack, for messages."""
    frame = sys._getframe(1)
    while frame is not None:
        if is_converted_code(frame.f_code):
            return f" ({frame.f_code.co_filename}, line {frame.f_lineno})"
        frame = frame.f_back
    return ""


def _label(name: str) -> str:
    return "the return value" if name.startswith("rt__retval") else f"'{name}'"


def _is_python_number(v) -> bool:
    return isinstance(v, (bool, int, float)) and not isinstance(v, type)


def _dtype_of(v):
    if isinstance(v, rt.TensorArray):
        return None
    if is_tensor(v):
        return v.dtype
    if _is_python_number(v):
        return rt.convert_to_tensor(v).dtype
    return None


# ---------------------------------------------------------------------------
# Return values that only some paths set
#
# ``rt__retval`` holds the function's return value once ``rt__do_return`` is true. A tensor ``if`` or
# loop where one path returns and another does not merges the value with a placeholder of the same
# type (never read: that path has not returned). If the paths that did not return still reach the
# end of the function, Python would return None there, which a graph cannot represent next to a
# tensor: ``retval`` then raises, naming the statement. The statement is remembered on the merged
# ``rt__do_return`` flag (a symbolic tensor) and follows it through later merges.

_partial_returns: dict[int, tuple] = {}      # id(flag tensor) -> (weakref to it, " (file, line N)")


def _partial_site(flag) -> str | None:
    entry = _partial_returns.get(id(flag)) if is_symbolic(flag) else None
    return entry[1] if entry is not None and entry[0]() is flag else None


def _mark_partial(flag, site: str | None) -> None:
    if site is None or not is_symbolic(flag):
        return
    key = id(flag)
    _partial_returns[key] = (weakref.ref(flag, lambda _: _partial_returns.pop(key, None)), site)


def _is_return_value(name: str) -> bool:
    return name.startswith("rt__retval")


def _is_return_flag(name: str) -> bool:
    return name.startswith("rt__do_return")


def retval(value, do_return=True):
    """The function's result: None when no ``return`` ran; an error when only some paths returned a value."""
    if isinstance(value, UndefinedReturnValue):
        return None
    site = _partial_site(do_return)
    if site is not None and value is not None:
        raise ValueError(f"this function returns a value on some paths but reaches its end without a `return` on "
                         f"others (where Python returns None), at the tensor `if` or loop{site}; a traced function "
                         f"returns one structure on every path: add a `return` with a value of the same type on "
                         f"the other paths, or return None everywhere")
    return value


def _same_python_constant(a, b) -> bool:
    """``a`` and ``b`` are the same Python constant (then a tensor `if` keeps it as a Python value)."""
    if a is None or b is None or type(a) is not type(b) or not isinstance(a, (bool, int, float, str, bytes)):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


# ---------------------------------------------------------------------------
# if

def if_stmt(cond, body, orelse, get_state, set_state, symbol_names, nouts):
    """``if cond: body() else: orelse()``; a graph conditional when ``cond`` is symbolic."""
    if is_symbolic(cond):
        _tf_if_stmt(cond, body, orelse, get_state or _no_state, set_state or _no_set_state,
                    tuple(symbol_names), nouts)
    elif cond:
        body()
    else:
        orelse()


class _SwapBranches(Exception):
    """The main branch leaves the return value unset: trace the else branch first."""


class _IfTrace:
    """The two branches of one tensor ``if``, traced by ``rt.cond``: their outputs, checked and paired."""

    def __init__(self, init, names, nouts, set_state, get_state, where_):
        self.init, self.names, self.nouts = init, names, nouts
        self.set_state, self.get_state, self.where = set_state, get_state, where_
        self.first: list = []            # outputs of the branch traced first, as it left them
        self.second: list = []
        self.swapped = False
        self.partial_site = None         # set when one branch returns a value and the other does not

    def run_first(self, fn):
        self.set_state(self.init)
        fn()
        out = list(self.get_state()[:self.nouts])
        if not self.swapped and any(isinstance(v, UndefinedReturnValue) for v in out):
            raise _SwapBranches()        # trace the branch that returns first: the other copies its type
        self.first[:] = out
        return [False if is_undefined(v) else v for v in out]

    def run_second(self, fn, label, first_label):
        self.set_state(self.init)
        fn()
        out = list(self.get_state()[:self.nouts])
        fixed = []
        for name, mine, other in zip(self.names, out, self.first):
            _check_pair(name, mine, other, label, first_label, self.where)
            if isinstance(mine, UndefinedReturnValue) and other is None:
                mine = None              # no return here, `return None` there: None either way
            elif isinstance(other, UndefinedReturnValue) and mine is None:
                pass
            elif is_undefined(mine):
                if not is_undefined(other) and _is_return_value(name):
                    self.partial_site = self.where
                mine = False if is_undefined(other) else _zeros_like(other)   # never read: no return here
            fixed.append(mine)
        self.second[:] = out
        return fixed


def _check_trackable(values, statement: str, where_: str) -> None:
    """Items assigned with a computed key cannot be carried through a graph conditional or loop."""
    for v in values:
        if isinstance(v, Untracked):
            name = v.symbol_name
            hint = ("write rt.TensorArray elements instead (ta = ta.write(i, value)), or "
                    if statement == "loop" else "")
            raise ValueError(f"'{name}' is assigned inside this tensor {statement}, whose body is traced once for "
                             f"every path, but its key is computed (or changes inside the {statement}), so its value "
                             f"cannot be carried through the graph {statement}: {hint}assign the value to a variable "
                             f"and store it in '{name}' after the {statement}{where_}")


# ---------------------------------------------------------------------------
# State held by an object in tensors (a dataset iterator's position)
#
# An object with ``_rt_state_components()`` (its tensors), ``_rt_from_state_components(tensors)`` (the same object
# at another position) and ``_rt_state_key()`` (what it iterates, to tell another object apart) enters a graph
# conditional or loop as the tuple of its components and leaves it rebuilt from the outputs: ``next(it)`` in the
# body (which makes ``it`` state, see the converter) then takes one element per iteration. A Python iterator cannot
# be carried so: its position would move once, while tracing.

def _componentwise(get_state, set_state, names, statement: str, where_: str):
    """``get_state``/``set_state`` that give/take the components of the state objects in ``get_state()``."""
    templates = {}
    for i, (name, value) in enumerate(zip(names, get_state())):
        if is_undefined(value) or is_tensor(value):
            continue
        if hasattr(type(value), "_rt_state_components"):
            templates[i] = value
        elif hasattr(type(value), "__next__"):
            raise TypeError(f"'{name}' is a Python iterator ({type(value).__name__}) advanced inside this tensor "
                            f"{statement}, whose body is traced once: its position cannot move per iteration or "
                            f"branch at run time. Iterate over a tensor or an rt.data.Dataset (iter(dataset) "
                            f"gives an iterator whose position is graph state) instead{where_}")
    if not templates:
        return get_state, set_state

    def get():
        values = list(get_state())
        for i, template in templates.items():
            value = values[i]
            kind = hasattr(type(value), "_rt_state_components")
            if not kind or value._rt_state_key() != template._rt_state_key():
                other = "another iterator" if kind else f"a {type(value).__name__}"
                raise TypeError(f"'{names[i]}' is an iterator before this tensor {statement} and is rebound to {other} "
                                f"inside it; a graph {statement} can only carry the position of one iterator{where_}")
            values[i] = tuple(value._rt_state_components())
        return tuple(values)

    def set_(values):
        values = list(values)
        for i, template in templates.items():
            if isinstance(values[i], tuple):
                values[i] = template._rt_from_state_components(list(values[i]))
        set_state(tuple(values))

    return get, set_


def _tf_if_stmt(cond, body, orelse, get_state, set_state, symbol_names, nouts):
    names = symbol_names[:nouts]
    where_ = where()
    get_state, set_state = _componentwise(get_state, set_state, symbol_names, "`if`", where_)
    init = tuple(get_state())
    _check_trackable(init, "`if`", where_)
    trace = _IfTrace(init, names, nouts, set_state, get_state, where_)
    with _located(where_):
        try:
            result = rt.cond(cond, lambda: trace.run_first(body),
                             lambda: trace.run_second(orelse, "else", "main"), output_names=list(names))
            main_out, else_out = trace.first, trace.second
        except _SwapBranches:
            trace.swapped = True
            result = rt.cond(rt.logical_not(cond), lambda: trace.run_first(orelse),
                             lambda: trace.run_second(body, "main", "else"), output_names=list(names))
            main_out, else_out = trace.second, trace.first
    final = list(result)
    for i, (name, a, b) in enumerate(zip(names, main_out, else_out)):
        if is_undefined(a) and is_undefined(b):
            final[i] = a
        elif _same_python_constant(a, b):
            final[i] = a                 # e.g. `rt__do_return = True` on both paths stays True
        elif all(v is None or isinstance(v, UndefinedReturnValue) for v in (a, b)):
            final[i] = None              # no return value on either path: None
        if _is_return_flag(name):
            _mark_partial(final[i], trace.partial_site or _partial_site(a) or _partial_site(b))
    set_state(tuple(final) + init[nouts:])


@contextlib.contextmanager
def _located(where_):
    """Errors raised by rt.cond / rt.while_loop for this statement also name the user's file and line."""
    try:
        yield
    except (TypeError, ValueError) as e:
        if where_ and len(e.args) == 1 and isinstance(e.args[0], str) and ", line " not in e.args[0]:
            e.args = (e.args[0] + where_,)
        raise


def _check_pair(name, mine, other, this_label, other_label, where_):
    """Both branches of a tensor ``if`` must define a variable, with one dtype."""
    if isinstance(mine, Undefined) and not is_undefined(other):
        raise ValueError(f"'{name}' must also be initialized in the {this_label} branch: the {other_label} "
                         f"branch of this tensor `if` sets it{where_}")
    if isinstance(other, Undefined) and not is_undefined(mine):
        raise ValueError(f"'{name}' must also be initialized in the {other_label} branch: the {this_label} "
                         f"branch of this tensor `if` sets it{where_}")
    if is_undefined(mine) or is_undefined(other):
        return
    by_branch = {this_label: mine, other_label: other}
    a, b = by_branch["main"], by_branch["else"]
    if (a is None) != (b is None) and _is_return_value(name):
        raise ValueError(f"this function returns None on some paths and a value on others (the paths meet at this "
                         f"tensor `if`; a `return None` or bare `return` inside a tensor loop also counts); a traced "
                         f"function returns one structure on every path{where_}")
    if (a is None) != (b is None):
        missing = "main" if a is None else "else"
        raise ValueError(f"{_label(name)} is None in the {missing} branch of a tensor `if` but a value in the "
                         f"other branch; both branches must give it a tensor value{where_}")
    if isinstance(a, rt.TensorArray) != isinstance(b, rt.TensorArray):
        raise TypeError(f"{_label(name)} is a {type(a).__name__} in the main branch but a {type(b).__name__} "
                        f"in the else branch of a tensor `if`{where_}")
    da, db = _dtype_of(a), _dtype_of(b)
    if da is not None and db is not None and da is not db:
        raise TypeError(f"{_label(name)} has dtype {da} in the main branch but {db} in the else branch; "
                        f"both branches of a tensor `if` must give it the same dtype (use rt.cast){where_}")


def _zeros_like(value):
    if isinstance(value, rt.TensorArray) or value is None:
        return value
    if is_tensor(value):     # from another branch's graph: only its dtype and shape can be used here
        dims = value.shape.as_list() if value.shape.rank is not None else []
        return rt.zeros([d if d is not None else 0 for d in dims], value.dtype)
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return type(value)(0)
    if isinstance(value, (tuple, list)):
        return type(value)(_zeros_like(v) for v in value)
    if isinstance(value, dict):
        return {k: _zeros_like(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------
# loops: shared

class _LoopState(threading.local):
    def __init__(self):
        self.outer_lists: list[dict[int, str]] = []    # per tensor loop being traced: id(list) -> name


_loops = _LoopState()


def outer_list_name(lst) -> str | None:
    """If ``lst`` is a Python list from outside a tensor loop being traced, its name."""
    for names in reversed(_loops.outer_lists):
        name = names.get(id(lst))
        if name is not None:
            return name
    return None


def _outer_lists_of(fn) -> dict[int, str]:
    out = {}
    code, closure = fn.__code__, fn.__closure__ or ()
    for name, cell in zip(code.co_freevars, closure):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, list):
            out[id(value)] = name
    return out


def _check_loop_vars(names, values, where_):
    for name, v in zip(names, values):
        if isinstance(v, list) and not _is_return_value(name):     # (a returned list is a structure)
            raise TypeError(f"'{name}' is a Python list modified in a tensor loop; a tensor loop runs its body "
                            f"once while tracing, so the list cannot grow per iteration. Use rt.TensorArray "
                            f"instead (e.g. {name} = rt.TensorArray(rt.float32, size=0, dynamic_size=True) "
                            f"and {name} = {name}.write(i, value)){where_}")
        if v is None and not name.startswith("rt__"):
            raise ValueError(f"'{name}' is None before a tensor loop that modifies it; a loop variable of a "
                             f"tensor loop must be a tensor (or a Python number) before the loop{where_}")
        if not (is_undefined(v) or is_tensor(v) or _is_python_number(v)
                or isinstance(v, (rt.TensorArray, tuple, dict, list)) or v is None):
            raise TypeError(f"'{name}' holds a {type(v).__name__} and is modified in a tensor loop; loop variables "
                            f"must be tensors, Python numbers or rt.TensorArray{where_}")


def _flat_names(names, values):
    out = []
    for name, v in zip(names, values):
        n = len(nest.flatten(v))
        out.extend([name] * n if n == 1 else [f"{name}[{i}]" for i in range(n)])
    return out


def _invariant_of(opts, leaf, value, n_leaves: int):
    """The shape ``set_loop_options(shape_invariants=[(var, shape), ...])`` gives one leaf of a loop variable
    (matched by identity), or None."""
    found = None
    for var, shape in opts.get("shape_invariants") or ():
        if var is leaf or (var is value and n_leaves == 1):
            found = shape
    return found


def _shape_invariants(opts, names, values):
    """The user's shape invariants of the loop variables' leaves (None when there are none)."""
    flat = []
    for v in values:
        leaves = nest.flatten(v)
        flat.extend(_invariant_of(opts, leaf, v, len(leaves)) for leaf in leaves)
    return flat if any(inv is not None for inv in flat) else None


def _placeholder_name(name: str) -> str:
    """A graph node name for a loop variable (``d['a']`` -> ``d_a``)."""
    cleaned = "".join(c if c.isalnum() else "_" for c in name).strip("_")
    return cleaned or "loop_var"


def _infer_undefined(body_fn, get_state, set_state, init, names, where_, opts):
    """Trace one iteration in a scratch graph to learn the type of the loop variables that are undefined
    before the loop. Returns, per variable, an initial value of that type (zeros: never read, the loop
    runs at least once or the value is a return value guarded by its flag) and the shape invariant of
    each of its leaves (the probe's shape, where a dim is not static). The probe's loop variables have
    the shapes the loop gives them: the user's shape invariants where there are some (a return value
    taken from a variable whose invariant is ``[None]`` has an unknown length too)."""
    outer = context.current_graph()
    scratch = Graph(f"{outer.name}_loop_probe" if outer is not None else "loop_probe", outer)
    try:
        with context.graph_scope(scratch), contextlib.redirect_stdout(io.StringIO()):
            # Loop variables are symbolic inside the real loop: make them so in the probe too.
            probe_init = []
            for name, v in zip(names, init):
                if (is_tensor(v) or _is_python_number(v)) and not isinstance(v, rt.TensorArray):
                    t = v if is_tensor(v) else rt.convert_to_tensor(v)
                    shape = _invariant_of(opts, v, v, 1) if is_tensor(v) else None
                    v = scratch.add_placeholder(_placeholder_name(name), t.dtype,
                                                t.shape if shape is None else as_shape(shape))
                probe_init.append(v)
            set_state(probe_init)
            body_fn()
            probe = get_state()
    finally:
        set_state(init)
    values, invariants = [], []
    for name, v, p in zip(names, init, probe):
        if not is_undefined(v) or is_undefined(p):
            values.append(v)        # defined before the loop, or the body does not define it either
            invariants.append(None)
            continue
        if p is None and _is_return_value(name):
            values.append(None)     # `return None` in the loop: kept out of it (see _run_tensor_loop)
            invariants.append(None)
            continue
        leaves = []
        shapes = []
        for leaf in nest.flatten(p):
            if isinstance(leaf, rt.TensorArray) or not (is_tensor(leaf) or _is_python_number(leaf)):
                raise ValueError(f"'{name}' is defined only inside a tensor loop and holds a "
                                 f"{type(leaf).__name__}; initialize it before the loop{where_}")
            t = rt.convert_to_tensor(leaf) if not is_tensor(leaf) else leaf
            if t.shape.rank is None:
                raise ValueError(f"'{name}' is defined only inside a tensor loop and its rank is not known; "
                                 f"initialize it before the loop{where_}")
            leaves.append(rt.zeros([d if d is not None else 0 for d in t.shape.as_list()], t.dtype))
            shapes.append(None if t.shape.is_fully_defined() else t.shape)
        values.append(nest.pack_sequence_as(p, leaves) if nest.is_sequence(p) else leaves[0])
        invariants.append(shapes)
    return values, invariants


def _run_tensor_loop(test, body, get_state, set_state, symbol_names, opts, extra_vars=(), where_="",
                     relax_shapes=False):
    """Stage a loop with ``rt.while_loop`` over (extra_vars..., state...). ``test(extra)`` and
    ``body(extra) -> new extra`` see the state through get_state/set_state. ``relax_shapes``: a loop
    variable may change its shape (a dataset loop, as in TensorFlow), see ``rt.while_loop``."""
    names = list(symbol_names)
    get_state, set_state = _componentwise(get_state, set_state, names, "loop", where_)
    init = list(get_state())
    _check_trackable(init, "loop", where_)
    _check_loop_vars(names, init, where_)
    n_extra = len(extra_vars)
    undefined = [i for i, v in enumerate(init) if is_undefined(v)]
    guard_names = []
    inferred = [None] * len(init)         # per variable: shape invariants of a value first set in the loop
    returns_here = False                  # the return value is first set in this loop
    returns_none = []                     # return values the loop sets to None: None after it
    if undefined:
        placeholders, inferred = _infer_undefined(lambda: body(list(extra_vars)), get_state, set_state, init,
                                                  names, where_, opts)
        still = [names[i] for i, v in enumerate(placeholders) if is_undefined(v)]
        for i in undefined:
            if is_undefined(placeholders[i]):
                continue
            if placeholders[i] is None:
                returns_none.append(i)
                placeholders[i] = init[i]
                continue
            if isinstance(init[i], UndefinedReturnValue):
                returns_here = True
            else:
                guard_names.append(names[i])
        if still:
            bad = [n for n in still if not _is_return_value(n)]
            if bad:
                raise ValueError(f"'{bad[0]}' is used in a tensor loop before it is assigned{where_}")
            # a return value no iteration sets: keep it out of the loop
        init = placeholders
    kept = [i for i, v in enumerate(init) if not is_undefined(v)]
    kept_names = [names[i] for i in kept]
    iterated = [rt.constant(False)] if guard_names else []
    loop_init = tuple(extra_vars) + tuple(iterated) + tuple(init[i] for i in kept)
    n_guard = len(iterated)

    def full_state(values):
        state = list(init)
        for i, v in zip(kept, values):
            state[i] = v
        return state

    def aug_test(*vars_):
        set_state(full_state(vars_[n_extra + n_guard:]))
        return test(list(vars_[:n_extra]))

    body_fn = body
    outer_lists = _outer_lists_of(body.__self__) if hasattr(body, "__self__") else {}

    def aug_body(*vars_):
        set_state(full_state(vars_[n_extra + n_guard:]))
        _loops.outer_lists.append(outer_lists)
        try:
            new_extra = body_fn(list(vars_[:n_extra]))
        finally:
            _loops.outer_lists.pop()
        new_state = list(get_state())
        structure_key = nest.structure_key
        for i in kept:
            if is_undefined(new_state[i]):
                raise ValueError(f"{_label(names[i])} is deleted or left undefined by the body of a tensor "
                                 f"loop{where_}")
            if structure_key(new_state[i]) != structure_key(init[i]):
                raise TypeError(f"{_label(names[i])} does not have the same nested structure after one iteration: "
                                f"{_structure(init[i])} before the loop, {_structure(new_state[i])} after{where_}")
        _check_loop_vars(kept_names, [new_state[i] for i in kept], where_)
        return tuple(new_extra) + ((rt.constant(True),) if n_guard else ()) + tuple(new_state[i] for i in kept)

    aug_body.__name__ = "loop_body"
    kept_values = [init[i] for i in kept]
    invariants = _shape_invariants(opts, kept_names, kept_values)
    if any(inferred[i] for i in kept):
        if invariants is None:
            invariants = [None] * len(rt_nest_flatten(kept_values))
        position = 0
        for i in kept:
            shapes = inferred[i] or [None] * len(rt_nest_flatten([init[i]]))
            for shape in shapes:
                if invariants[position] is None:
                    invariants[position] = shape
                position += 1
    if invariants is not None:
        invariants = [None] * (len(rt_nest_flatten(extra_vars)) + n_guard) + invariants
    loop_names = ([f"rt__loop_var_{i}" for i in range(len(rt_nest_flatten(extra_vars)))] +
                  (["rt__iterated"] if n_guard else []) + _flat_names(kept_names, kept_values))
    with _located(where_):
        final = rt.while_loop(aug_test, aug_body, loop_init, shape_invariants=invariants,
                              maximum_iterations=opts.get("maximum_iterations"), loop_var_names=loop_names,
                              relax_shapes=relax_shapes)
    final = list(final)
    if n_guard:
        rt.Assert(final[n_extra], [f"loop must iterate at least once to initialize "
                                   f"{', '.join(repr(n) for n in guard_names)}{where_}"])
    state = full_state(final[n_extra + n_guard:])
    for i in returns_none:
        state[i] = None
    for i, name in enumerate(names):
        if _is_return_flag(name):    # the loop may end without returning: see `retval`
            _mark_partial(state[i], where_ if returns_here else _partial_site(init[i]))
    set_state(state)
    return final[:n_extra]


def _structure(value) -> str:
    """``{'a': tensor}``, ``(tensor, tensor)``, ``tensor``: a loop variable's structure, for errors."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_structure(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_structure(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})" if isinstance(value, tuple) else f"[{inner}]"
    return "a TensorArray" if isinstance(value, rt.TensorArray) else "a tensor"


def rt_nest_flatten(values):
    return nest.flatten(list(values))


# ---------------------------------------------------------------------------
# while

def while_stmt(test, body, get_state, set_state, symbol_names, opts):
    """``while test(): body()``; a graph loop (``rt.while_loop``) when the test is symbolic."""
    get_state, set_state = get_state or _no_state, set_state or _no_set_state
    opts = opts or {}
    cond = test()
    if is_symbolic(cond):
        where_ = where()
        _loops_body = body

        def body_with_extra(extra):
            _loops_body()
            return extra

        _run_tensor_loop(lambda extra: test(), _Bound(body_with_extra, body), get_state, set_state,
                         symbol_names, opts, (), where_)
        return
    while True:
        if is_symbolic(cond):
            user_names = [repr(n) for n in symbol_names if not n.startswith("rt__")]
            jumps = len(user_names) < len(symbol_names)
            cause = (", ".join(user_names) + " set in the loop" if user_names else "") + \
                (" or " if user_names and jumps else "") + ("a `break` or `return` under a tensor condition"
                                                            if jumps else "")
            raise NotImplementedError(
                "the condition of while loop started as non-Tensor, then changed to Tensor (it depends on "
                f"{cause or 'a variable set in the loop'}); make it a tensor before the loop (e.g. start from "
                f"rt.constant(...)) so the whole loop is staged as a graph loop{where()}")
        if not cond:
            break
        body()
        cond = test()


class _Bound:
    """A callable carrying the original loop body (to find the Python lists it closes over)."""

    def __init__(self, fn, original):
        self.fn, self.__self__ = fn, original

    def __call__(self, *args):
        return self.fn(*args)


# ---------------------------------------------------------------------------
# for

def for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts):
    """``for target in iter_: body(target)`` (while ``extra_test()``); a graph loop over symbolic tensors."""
    get_state, set_state = get_state or _no_state, set_state or _no_set_state
    opts = opts or {}
    if is_symbolic(iter_):
        _tf_for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts)
        return
    graph_loop = getattr(iter_, "_rt_graph_loop", None)
    graph_loop = graph_loop() if graph_loop is not None else None
    if graph_loop is not None:
        _tf_iterable_for_stmt(graph_loop, extra_test, body, get_state, set_state, symbol_names, opts)
        return
    if isinstance(iter_, rt.TensorArray):
        iter_ = iter_.stack()
        if is_symbolic(iter_):
            _tf_for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts)
            return
    for item in iter_:
        if extra_test is not None:
            go = extra_test()
            if is_symbolic(go):
                raise NotImplementedError(
                    "a `break` or `return` that depends on a tensor condition is not supported in Python for loops: "
                    "a loop over a Python iterable is unrolled while tracing and cannot stop at run time. Iterate "
                    f"over a tensor instead (e.g. `for i in rt.range(n)`){where()}")
            if not go:
                break
        body(item)


def _tf_for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts):
    where_ = where()
    if iter_.shape.rank == 0:
        raise TypeError(f"cannot iterate over a scalar tensor {iter_}{where_}")
    n = iter_.shape[0] if iter_.shape.rank is not None else None
    n = rt.shape(iter_)[0] if n is None else n

    def test(extra):
        i = extra[0]
        c = rt.less(i, n)
        if extra_test is not None:
            go = extra_test()
            if is_symbolic(go) or is_tensor(go):
                c = rt.logical_and(c, go)
            elif not go:
                c = rt.logical_and(c, rt.constant(False))
        return c

    def loop_body(extra):
        i = extra[0]
        body(rt.gather(iter_, i))
        return [i + 1]

    _run_tensor_loop(test, _Bound(loop_body, body), get_state, set_state, symbol_names, opts,
                     (rt.constant(0),), where_)


def _tf_iterable_for_stmt(graph_loop, extra_test, body, get_state, set_state, symbol_names, opts):
    """A tensor loop over an iterable that stages its own iteration (``rt.data.Dataset`` while tracing).

    The iterable's ``_rt_graph_loop()`` gives an object with ``initial()`` (its flat loop variables),
    ``valid(vars)`` (a scalar bool tensor: is there an element), ``element(vars)`` and
    ``advance(vars)`` (the loop variables of the next element); a loop over an iterator (``continues``) also
    has ``stop(vars)`` (the variables of a loop left early) and ``finish(vars)`` (leave the iterator there).
    """
    where_ = where()

    def test(extra):
        c = graph_loop.valid(extra)
        if extra_test is not None:
            go = extra_test()
            if is_symbolic(go) or is_tensor(go):
                c = rt.logical_and(c, go)
            elif not go:
                c = rt.logical_and(c, rt.constant(False))
        return c

    continues = getattr(graph_loop, "continues", False)

    def loop_body(extra):
        body(graph_loop.element(extra))
        if extra_test is None or not continues:
            return graph_loop.advance(extra)
        # an iterator the loop may leave early: fetch the next element only when it goes on, so that the
        # iterator stops just past the element the body saw
        go = extra_test()
        if not is_tensor(go):
            return graph_loop.advance(extra) if go else graph_loop.stop(extra)
        return list(rt.cond(go, lambda: list(graph_loop.advance(extra)), lambda: list(graph_loop.stop(extra))))

    # tf.data's loops relax a state variable's shape when an iteration changes it (the element shapes of a
    # dataset are often unknown): no shape error here, unlike other tensor loops
    final = _run_tensor_loop(test, _Bound(loop_body, body), get_state, set_state, symbol_names, opts,
                             tuple(graph_loop.initial()), where_, relax_shapes=True)
    finish = getattr(graph_loop, "finish", None)
    if finish is not None:
        finish(final)           # an iterator continues where the loop left it
