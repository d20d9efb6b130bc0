"""Harness of the AutoGraph behaviour suite, in the style of TensorFlow's own reference tests
(``tensorflow/python/autograph/tests/reference_test_base.py``).

A test names a user function and its arguments. ``assert_matches_python`` runs the function as plain
Python on eager tensors and as a traced ``rt.function``, capturing what each returns, prints to
stdout and raises, and requires the same answer: the same nested structure, equal values (a Python
number on one side may be a tensor on the other, as in TensorFlow; its kind -- bool, integer,
float -- must agree), the same dtype where both are tensors, the same printed text, and the same
exception type.

``assert_matches_tf`` is the oracle for what plain Python cannot run (a tensor condition
on a symbolic value, a trace-time error): the same source is run by ``tf.function`` with
``rt`` bound to ``tensorflow`` in the function's globals, and results or exception types must agree.
TensorFlow's outcomes are recorded in ``tf_oracle.json`` (result values and dtypes, printed text, the
exception's class names), so that without TensorFlow the rt side is still run and compared with them;
with TensorFlow installed each live outcome must equal its record. After changing or adding a case,
record again with ``RT_RECORD_TF_ORACLE=1 python -m pytest tests/unit/autograph_behaviour``.

Arguments are plain values or markers that each side materializes afresh (so stateful inputs --
variables, iterators -- start equal): ``T(value, dtype)`` a tensor, ``V(value)`` a variable,
``DS(values)`` / ``DSRange(n)`` a dataset, ``It(ds)`` an iterator over one.
"""
from __future__ import annotations

import atexit
import contextlib
import io
import itertools
import json
import os
import re
import types
from pathlib import Path

import numpy as np

import runtime as rt


class T:
    """A tensor argument: ``rt.constant(value, dtype)`` (or ``tf.constant``)."""

    def __init__(self, value, dtype: str | None = None):
        self.value, self.dtype = value, dtype

    def make(self, api):
        return api.constant(self.value, getattr(api, self.dtype)) if self.dtype else api.constant(self.value)

    def __repr__(self):
        return f"T({self.value!r}{', ' + self.dtype if self.dtype else ''})"


class R(T):
    """A tensor argument ``range(n)`` (``rt.range`` / ``tf.range``)."""

    def make(self, api):
        return api.range(self.value)

    def __repr__(self):
        return f"R({self.value!r})"


class V(T):
    """A variable argument, fresh on every run."""

    def make(self, api):
        return api.Variable(super().make(api))

    def __repr__(self):
        return f"V({self.value!r})"


class DS:
    """A dataset argument: ``Dataset.from_tensor_slices(constant(values, dtype))``."""

    def __init__(self, values, dtype: str = "int32"):
        self.values, self.dtype = values, dtype

    def make(self, api):
        return api.data.Dataset.from_tensor_slices(api.constant(self.values, getattr(api, self.dtype)))

    def __repr__(self):
        return f"DS({self.values!r})"


class DSRange(DS):
    """``Dataset.range(n)`` (int64 elements)."""

    def __init__(self, n: int):
        super().__init__(n)

    def make(self, api):
        return api.data.Dataset.range(self.values)

    def __repr__(self):
        return f"DSRange({self.values})"


class It:
    """``iter(dataset)``, fresh on every run."""

    def __init__(self, ds: DS):
        self.ds = ds

    def make(self, api):
        return iter(self.ds.make(api))

    def __repr__(self):
        return f"It({self.ds!r})"


def cases(*values) -> list[tuple]:
    """Every combination of ``values`` (``itertools.product``) as a list, as ``pytest.mark.parametrize`` wants."""
    return list(itertools.product(*values))


def materialize(arg, api):
    """``arg`` with every marker made for ``api`` (``runtime`` or ``tensorflow``)."""
    if isinstance(arg, (T, DS, It)):
        return arg.make(api)
    if isinstance(arg, list):
        return [materialize(a, api) for a in arg]
    if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
        return tuple(materialize(a, api) for a in arg)
    if isinstance(arg, dict):
        return {k: materialize(v, api) for k, v in arg.items()}
    return arg


class Outcome:
    def __init__(self, result=None, out: str = "", error: BaseException | None = None):
        self.result, self.out, self.error = result, out, error

    def __repr__(self):
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {self.error}"
        return f"returned {self.result!r}" + (f", printed {self.out!r}" if self.out else "")


def run(fn, args, kwargs=None) -> Outcome:
    """Calls ``fn(*args, **kwargs)``, capturing its result, stdout and exception."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            result = fn(*args, **(kwargs or {}))
    except Exception as e:  # noqa: BLE001 -- the exception is the outcome being compared
        return Outcome(out=buffer.getvalue(), error=e)
    return Outcome(result, buffer.getvalue())


def _is_tensor(v) -> bool:
    return hasattr(v, "dtype") and hasattr(v, "numpy") and hasattr(v, "shape")


def _kind(v) -> str:
    """'b', 'i', 'u', 'f' (numpy dtype kinds) of a number or tensor; '' for anything else."""
    if _is_tensor(v):
        return np.dtype(v.numpy().dtype).kind
    if isinstance(v, (bool, np.bool_)):
        return "b"
    if isinstance(v, (int, np.integer)):
        return "i" if not isinstance(v, np.unsignedinteger) else "u"
    if isinstance(v, (float, np.floating)):
        return "f"
    if isinstance(v, np.ndarray):
        return v.dtype.kind
    return ""


def _dtype_name(v) -> str:
    return str(v.dtype.name if hasattr(v.dtype, "name") else v.dtype)


def differences(a, b, path: str = "result", both_tensors_dtype: bool = True) -> list[str]:
    """Where the nested values ``a`` (reference) and ``b`` differ (empty when they agree)."""
    if isinstance(a, (list, tuple)) and not _is_tensor(a):
        if type(a) is not type(b) and not (isinstance(b, (list, tuple)) and type(a).__name__ == type(b).__name__):
            return [f"{path}: {type(a).__name__} vs {type(b).__name__} ({a!r} vs {b!r})"]
        if len(a) != len(b):
            return [f"{path}: length {len(a)} vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]", both_tensors_dtype)]
    if isinstance(a, dict):
        if not isinstance(b, dict) or set(a) != set(b):
            return [f"{path}: {a!r} vs {b!r}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}[{k!r}]", both_tensors_dtype)]
    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return [] if (a is None and b is None) or (a == b) else [f"{path}: {a!r} vs {b!r}"]
    ka, kb = _kind(a), _kind(b)
    if not ka or not kb:
        return [] if a is b or a == b else [f"{path}: {a!r} vs {b!r}"]
    if ka != kb:
        return [f"{path}: kind {ka} vs {kb} ({a!r} vs {b!r})"]
    if both_tensors_dtype and _is_tensor(a) and _is_tensor(b) and _dtype_name(a) != _dtype_name(b):
        return [f"{path}: dtype {_dtype_name(a)} vs {_dtype_name(b)}"]
    va = np.asarray(a.numpy() if _is_tensor(a) else a)
    vb = np.asarray(b.numpy() if _is_tensor(b) else b)
    if va.shape != vb.shape or not np.array_equal(va, vb, equal_nan=ka in "fc"):
        return [f"{path}: {va!r} vs {vb!r}"]
    return []


def _report(name: str, args, reference: Outcome, other: Outcome, reference_name: str, other_name: str) -> str:
    return (f"{name}{tuple(args)!r}:\n  {reference_name}: {reference!r}\n  {other_name}: {other!r}")


def compare(name, args, reference: Outcome, other: Outcome, reference_name: str, other_name: str,
            check_output: bool = True) -> None:
    report = _report(name, args, reference, other, reference_name, other_name)
    if reference.error is not None or other.error is not None:
        assert reference.error is not None and other.error is not None, report
        # the same type, or a TensorFlow subclass of it (OperatorNotAllowedInGraphError is a TypeError)
        names = getattr(reference.error, "names", None) or [t.__name__ for t in type(reference.error).__mro__]
        assert type(other.error).__name__ in names, report
        return
    problems = differences(reference.result, other.result)
    if check_output and reference.out != other.out:
        problems.append(f"printed {reference.out!r} vs {other.out!r}")
    assert not problems, report + "\n  " + "\n  ".join(problems)


def assert_matches_python(fn, *args, check_output: bool = True, allow_exceptions: bool = False, calls: int = 2,
                          **kwargs):
    """Plain Python on eager tensors == ``rt.function(fn)``, called ``calls`` times (the second call
    runs the traced graph without tracing, so it also checks the cached ConcreteFunction)."""
    plain = run(fn, materialize(args, rt), materialize(kwargs, rt))
    function = rt.function(fn)
    for call in range(calls):
        traced = run(function, materialize(args, rt), materialize(kwargs, rt))
        if not allow_exceptions:
            assert traced.error is None, _report(fn.__name__, args, plain, traced, "python", "rt.function")
        # Python side effects (print) happen only while tracing, on the first call
        compare(fn.__name__, args, plain, traced, "python", f"rt.function (call {call + 1})",
                check_output=check_output and call == 0)
    return plain


def tensorflow():
    import pytest
    return pytest.importorskip("tensorflow")


def _tensorflow_if_installed():
    try:
        import tensorflow
    except ImportError:
        return None
    return tensorflow


# -- the recorded oracle ---------------------------------------------------------------------------------

ORACLE_PATH = Path(__file__).with_name("tf_oracle.json")
RECORD = bool(os.environ.get("RT_RECORD_TF_ORACLE"))
_oracle: dict | None = None


def _load_oracle() -> dict:
    global _oracle
    if _oracle is None:
        _oracle = json.loads(ORACLE_PATH.read_text(encoding="utf-8")) if ORACLE_PATH.exists() else {}
        if RECORD:
            atexit.register(_save_oracle)
    return _oracle


def _save_oracle() -> None:
    ORACLE_PATH.write_text(json.dumps(dict(sorted(_oracle.items())), indent=1) + "\n", encoding="utf-8")


def oracle_key(fn, args, kwargs) -> str:
    """The case: the function (module-qualified) and the markers of its arguments."""
    return f"{fn.__module__}.{fn.__qualname__}{tuple(args)!r}{dict(kwargs)!r}"


def encode(value):
    """A result of tf.function (tensors, Python values, nested lists/tuples/dicts) as JSON data."""
    if _is_tensor(value):
        array = np.asarray(value.numpy())
        dtype = _dtype_name(value)
        if array.dtype.kind in "OSU":
            return {"tensor": dtype, "shape": list(array.shape),
                    "bytes": [v.hex() if isinstance(v, bytes) else str(v).encode().hex() for v in array.ravel()]}
        return {"tensor": dtype, "shape": list(array.shape), "value": array.ravel().tolist()}
    if isinstance(value, (bool, np.bool_)):
        return {"bool": bool(value)}
    if isinstance(value, (int, np.integer)):
        return {"int": int(value)}
    if isinstance(value, (float, np.floating)):
        return {"float": float(value)}
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return {"sequence": type(value).__name__, "items": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
    raise TypeError(f"cannot record a {type(value).__name__} ({value!r}) as the oracle's result")


class RecordedTensor:
    """A recorded tf.function tensor: dtype (by TensorFlow's name), shape and values."""

    class _DType:
        def __init__(self, name):
            self.name = name

    def __init__(self, data: dict):
        self.dtype = self._DType(data["tensor"])
        if "bytes" in data:
            values = np.array([bytes.fromhex(v) for v in data["bytes"]], dtype=object)
        else:
            values = np.array(data["value"], dtype=np.dtype(data["tensor"]))
        self._array = values.reshape(data["shape"])
        self.shape = self._array.shape

    def numpy(self):
        return self._array

    def __repr__(self):
        return f"<recorded tf.Tensor: dtype={self.dtype.name}, numpy={self._array!r}>"


class _Sequence(list):
    """A recorded tuple/list/namedtuple: compares by its type's name (``differences``)."""


def decode(data):
    if data is None or isinstance(data, str):
        return data
    if "tensor" in data:
        return RecordedTensor(data)
    for kind, cast in (("bool", bool), ("int", int), ("float", float)):
        if kind in data:
            return cast(data[kind])
    if "sequence" in data:
        items = [decode(v) for v in data["items"]]
        if data["sequence"] in ("list", "tuple"):
            return list(items) if data["sequence"] == "list" else tuple(items)
        return type(data["sequence"], (_Sequence,), {})(items)
    return {decode(k): decode(v) for k, v in data["dict"]}


class RecordedError(Exception):
    """A recorded exception: only its class names (its own and its bases') are kept."""

    def __init__(self, names: list[str], message: str):
        super().__init__(message)
        self.names = names


def encode_outcome(outcome: Outcome) -> dict:
    if outcome.error is not None:
        return {"error": [t.__name__ for t in type(outcome.error).__mro__], "out": outcome.out}
    return {"result": encode(outcome.result), "out": outcome.out}


def decode_outcome(data: dict) -> Outcome:
    if "error" in data:
        return Outcome(out=data["out"], error=RecordedError(data["error"], f"(recorded) {data['error'][0]}"))
    return Outcome(decode(data["result"]), data["out"])


def as_tf(fn):
    """``fn`` with ``rt`` bound to ``tensorflow`` in its globals (``rt``'s names follow TensorFlow's)."""
    tf = tensorflow()
    glob = dict(fn.__globals__, rt=tf)
    copy = types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


def assert_matches_tf(fn, *args, check_output: bool = False, match: str | None = None, **kwargs):
    """``tf.function`` of the same source (the oracle) == ``rt.function(fn)``: equal results (dtypes
    included) or the same exception type; ``match`` is a regex rt's error message must contain.

    Without TensorFlow the oracle is its recorded outcome (``tf_oracle.json``); with TensorFlow the live
    outcome is compared with rt's and must equal the record (or replaces it under RT_RECORD_TF_ORACLE=1)."""
    oracle_data = _load_oracle()
    key = oracle_key(fn, args, kwargs)
    tf = _tensorflow_if_installed()
    if tf is not None:
        oracle = run(tf.function(as_tf(fn)), materialize(args, tf), materialize(kwargs, tf))
        live = encode_outcome(oracle)
        if RECORD:
            oracle_data[key] = live
        else:
            assert oracle_data.get(key) == live, (
                f"tf.function's outcome of {key} is not the recorded one in {ORACLE_PATH.name}:\n"
                f"  live:     {live}\n  recorded: {oracle_data.get(key)}\n"
                "record again with RT_RECORD_TF_ORACLE=1 python -m pytest tests/unit/autograph_behaviour")
        name = "tf.function"
    else:
        assert key in oracle_data, (
            f"no recorded tf.function outcome of {key} in {ORACLE_PATH.name}: with TensorFlow installed, record "
            "it with RT_RECORD_TF_ORACLE=1 python -m pytest tests/unit/autograph_behaviour")
        oracle = decode_outcome(oracle_data[key])
        name = "tf.function (recorded)"
    traced = run(rt.function(fn), materialize(args, rt), materialize(kwargs, rt))
    compare(fn.__name__, args, oracle, traced, name, "rt.function", check_output=check_output)
    if match is not None:
        assert traced.error is not None and re.search(match, str(traced.error), re.DOTALL), traced
    return traced


def assert_raises_like_tf(fn, *args, match: str, **kwargs):
    """Both ``tf.function`` and ``rt.function`` raise the same exception type whose message matches."""
    traced = assert_matches_tf(fn, *args, match=match, **kwargs)
    assert traced.error is not None
    return traced
