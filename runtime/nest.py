"""Nested structures (tuples, lists, dicts, namedtuples) flattened to leaves and rebuilt."""
from __future__ import annotations


def is_sequence(value) -> bool:
    return isinstance(value, (tuple, list, dict))


def flatten(structure) -> list:
    """Leaves in order (dicts by sorted key)."""
    out: list = []
    _flatten(structure, out)
    return out


def _flatten(value, out):
    if isinstance(value, dict):
        for key in sorted(value, key=repr):
            _flatten(value[key], out)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _flatten(item, out)
    else:
        out.append(value)


def pack_sequence_as(structure, flat):
    """Rebuild ``structure`` with the leaves taken in order from ``flat``."""
    it = iter(flat)
    result = _pack(structure, it)
    rest = list(it)
    if rest:
        raise ValueError(f"pack_sequence_as: {len(rest)} leaves left over")
    return result


def _pack(value, it):
    if isinstance(value, dict):
        packed = {key: _pack(value[key], it) for key in sorted(value, key=repr)}
        return type(value)((key, packed[key]) for key in value) if type(value) is not dict else \
            {key: packed[key] for key in value}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_pack(v, it) for v in value])
    if isinstance(value, (tuple, list)):
        return type(value)(_pack(v, it) for v in value)
    return next(it)


def structure_key(value):
    """The shape of a structure without its leaves (to compare two structures)."""
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), structure_key(value[k])) for k in sorted(value, key=repr)))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__, tuple(structure_key(v) for v in value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(structure_key(v) for v in value))
    return "*"


def map_structure(fn, structure):
    return pack_sequence_as(structure, [fn(leaf) for leaf in flatten(structure)])


def flatten_up_to(shallow, value) -> list:
    """Flatten ``value`` only as deep as ``shallow`` goes (a leaf of shallow takes the whole subtree).

    Raises ValueError when ``value`` lacks a level that ``shallow`` has.
    """
    if isinstance(shallow, dict):
        if not isinstance(value, dict) or set(shallow) != set(value):
            raise ValueError(f"expected a dict with keys {sorted(shallow, key=repr)}, got {value!r}")
        out = []
        for key in sorted(shallow, key=repr):
            out.extend(flatten_up_to(shallow[key], value[key]))
        return out
    if isinstance(shallow, (tuple, list)):
        if not isinstance(value, (tuple, list)) or len(value) != len(shallow):
            raise ValueError(f"expected a sequence of {len(shallow)} items, got {value!r}")
        out = []
        for s, v in zip(shallow, value):
            out.extend(flatten_up_to(s, v))
        return out
    return [value]
