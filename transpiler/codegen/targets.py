"""What a module's build compiles, and where the built module finds it again: found from the module's globals.

``build_targets`` lists the ``rt.function``s of an imported module that the build compiles (module-level ones,
class attributes that are not methods, ``rt.function`` methods bound to the instances the module's globals
reach, and Functions the module's import stored on objects, such as ``model.train_function``), each with the
key the built module attaches its native code by (``runtime.polymorphic_function.Origin``). The Functions it
cannot compile it names in ``notes`` with the reason.

``variable_paths`` gives each ``rt.Variable`` reachable from the globals its shortest path
(``model.layers[0].kernel``), which the built module follows on its first call (``runtime.aot.resolve_path``).

Both walk the globals breadth first (in definition order) through the attributes of any object (callables
included: a Keras model is one), list and tuple items and dict values under str/int keys, at most
``PATH_DEPTH`` steps deep and ``PATH_OBJECTS`` objects. Modules, classes, functions and ``rt.function``s are
not entered (what they hold is no place a built module could find again).
"""
from __future__ import annotations

import dataclasses
import types

from runtime.aot import format_path
from runtime.polymorphic_function import ConcreteFunction, Function, created_origins
from runtime.variables import Variable

PATH_DEPTH = 8              # attribute/item steps followed from a global
PATH_OBJECTS = 50_000      # objects visited at most (a module holding a huge structure stays cheap)

_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, Function,
           ConcreteFunction, str, bytes, int, float, complex, bool, type(None))


@dataclasses.dataclass
class Target:
    """One Function the build compiles.

    ``label`` is how the user names it (``scale``, ``Model.scale``, ``model.__call__``,
    ``model.train_function``); ``key`` is the origin key its native code is attached by (for a method, the
    class's Function's); a method bound to an instance also has the instance's ``path`` and the ``attribute``.
    """
    label: str
    function: Function
    key: str
    path: str | None = None
    attribute: str | None = None

    @property
    def ledger_key(self) -> str:
        """The name the built module records its run-time traces under (``runtime.aot``)."""
        return self.key if self.path is None else f"{self.key}@{self.path}"


def _members(value) -> list:
    """(kind, key, member) of what a path may step into from ``value``."""
    if isinstance(value, _OPAQUE):
        return []
    if isinstance(value, (list, tuple)):
        return [("item", i, v) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return [("item", k, v) for k, v in value.items() if isinstance(k, (str, int)) and not isinstance(k, bool)]
    attributes = getattr(value, "__dict__", None)
    if not isinstance(attributes, dict):
        return []
    return [("attr", k, v) for k, v in attributes.items() if isinstance(k, str) and k.isidentifier()]


def walk_globals(module):
    """``(value, path)`` of every object reachable from the module's globals, each once, nearest first."""
    seen: set[int] = set()
    level = [(value, name, []) for name, value in vars(module).items() if not name.startswith("__")]
    for _ in range(PATH_DEPTH + 1):
        following = []
        for value, name, steps in level:
            if id(value) in seen or len(seen) >= PATH_OBJECTS:
                continue
            seen.add(id(value))
            yield value, format_path(name, steps)
            if isinstance(value, Variable):
                continue
            for kind, key, member in _members(value)[:PATH_OBJECTS]:
                following.append((member, name, steps + [(kind, key)]))
        level = following


def variable_paths(module) -> dict[int, str]:
    """id(variable) -> the shortest path to it from the module's globals (``model.layers[0].kernel``)."""
    return {id(value): path for value, path in walk_globals(module) if isinstance(value, Variable)}


def is_method(cls: type, function: Function) -> bool:
    """``function`` (an attribute of ``cls``) was defined in the class body: instances bind it to ``self``. (One
    made from a function defined elsewhere, ``f = rt.function(g)``, is called as it is.)"""
    return getattr(function.python_function, "__qualname__", "").startswith(cls.__qualname__ + ".")


def _methods(cls: type, cache: dict) -> list[tuple[str, Function]]:
    """(attribute, Function) of the ``rt.function`` methods of ``cls`` (its bases' included)."""
    found = cache.get(cls)
    if found is None:
        found, names = [], set()
        for base in cls.__mro__:
            for attribute, member in vars(base).items():
                if attribute not in names and isinstance(member, Function) and member.origin is not None \
                        and is_method(base, member):
                    names.add(attribute)
                    found.append((attribute, member))
        cache[cls] = found
    return found


def build_targets(module) -> tuple[list[Target], list[str]]:
    """The Functions the build of ``module`` compiles, and a note for each ``rt.function`` it cannot (see the
    module docstring): ``(targets, notes)``."""
    name = module.__name__
    targets: list[Target] = []
    taken: set[int] = set()
    notes: list[str] = []
    methods_seen: dict[int, tuple] = {}       # id(class Function) -> (label, class, origin key)
    bound_any: set[int] = set()

    def add(target: Target) -> None:
        if id(target.function) not in taken:
            taken.add(id(target.function))
            targets.append(target)

    cache: dict = {}
    for value, path in walk_globals(module):
        if isinstance(value, Function):
            if value.origin is not None and value.origin.module == name and value.instance is None:
                add(Target(path, value, value.origin.key))
            continue
        if isinstance(value, type):
            if value.__module__ == name:
                for attribute, member in sorted(vars(value).items()):
                    if not isinstance(member, Function) or member.origin is None or member.origin.module != name:
                        continue
                    if is_method(value, member):
                        methods_seen.setdefault(id(member), (f"{value.__qualname__}.{attribute}", value,
                                                             member.origin.key))
                    else:
                        add(Target(f"{path}.{attribute}", member, member.origin.key))
            continue
        if isinstance(value, (*_OPAQUE, list, tuple, dict)):
            continue
        for attribute, member in _methods(type(value), cache):
            try:
                bound = getattr(value, attribute)
            except Exception:  # noqa: BLE001, S112 - the user's class may raise anything from its attributes
                continue
            if isinstance(bound, Function) and bound.instance is value:
                bound_any.add(id(member))
                add(Target(f"{path}.{attribute}", bound, member.origin.key, path, attribute))
    for member_id, (label, cls, _) in methods_seen.items():
        if member_id not in bound_any:
            notes.append(f"{label}: not compiled: a method, and no instance of {cls.__qualname__} is reachable from "
                         "the module's globals (methods are built for the instances the module creates at import); "
                         "traced at run time")
    known = {t.key for t in targets} | {key for _, _, key in methods_seen.values()}
    for key in created_origins(name):
        if key not in known:
            where = key.rpartition("#")[0].partition(":")[2]
            notes.append(f"{where}: not compiled: an rt.function the module's import created ({key}) that is not "
                         "reachable from its globals, so the built module could not find it again; traced at run "
                         "time")
    return targets, notes
