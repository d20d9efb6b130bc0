"""Run programs written against ``import tensorflow as tf`` on rt: ``python -m runtime.tf_compat script.py [args]``.

An opt-in import hook, active only for that run (or inside ``aliased()``), makes these imports give rt:

- ``tensorflow`` -> ``runtime`` (``import tensorflow as tf``), and ``tensorflow.X`` -> ``runtime.X``
  (``from tensorflow import keras``, ``from tensorflow.keras import layers``, ``import tensorflow.keras.layers``);
- ``keras`` -> ``runtime.keras``, and ``keras.X`` -> ``runtime.keras.X``: Keras 3 with the TensorFlow backend,
  which is what ``tf.keras`` is since TensorFlow 2.16, so a program mixing ``import keras`` and ``tf.function``
  gets one library.

Without the opt-in nothing changes: ``import tensorflow`` finds TensorFlow, or fails as usual. A name rt lacks is
the API table's error: ``tf.image`` raises ``AttributeError: rt has no image (TensorFlow's tf.image); see the
README's API table``, and ``import tensorflow.io`` a ``ModuleNotFoundError`` with the same words.

A module built with ``python -m transpiler build --tf-compat`` is an rt module: its ``tensorflow`` and ``keras``
are rt while it imports (``runtime.aot`` runs its source inside ``aliased()``), whoever imports it, and the rest of
the process keeps its own ``tensorflow``; imports inside its functions that run later are ordinary imports.

Example:
    >>> import runtime as rt
    >>> with aliased():
    ...     import tensorflow as tf
    ...     from tensorflow.keras import layers
    >>> tf is rt and layers is rt.keras.layers
    True
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import types
from collections.abc import Iterator, Sequence

# Top-level package names the hook maps, and the rt module each maps to.
ALIASES = {"tensorflow": "runtime", "keras": "runtime.keras"}


def target_name(name: str) -> str | None:
    """The rt module an aliased import name stands for (``tensorflow.keras.layers`` -> ``runtime.keras.layers``);
    None for a name the hook leaves alone.

    Example:
        >>> target_name("tensorflow.keras"), target_name("keras.layers"), target_name("tensorflow_datasets")
        ('runtime.keras', 'runtime.keras.layers', None)
    """
    top, dot, rest = name.partition(".")
    target = ALIASES.get(top)
    if target is None:
        return None
    return f"{target}.{rest}" if dot else target


def _is_aliased(name: str) -> bool:
    return target_name(name) is not None


def _missing_message(name: str) -> str:
    """The API table's words for an aliased name rt lacks (``tensorflow.io`` -> ``rt has no io (...)``)."""
    top, _, rest = name.partition(".")
    path = rest if top == "tensorflow" else f"keras.{rest}" if rest else "keras"
    return f"rt has no {path} (TensorFlow's tf.{path}); see the README's API table"


def resolve(name: str) -> types.ModuleType:
    """The rt module an aliased import name stands for: a module of the package (imported if needed), or a
    namespace an rt module holds as an attribute (``tensorflow.math`` -> ``rt.math``). ``ModuleNotFoundError``
    with the API table's words when rt has no such module."""
    target = target_name(name)
    if target is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as error:
        if error.name is not None and error.name != target and not target.startswith(error.name + "."):
            raise                                  # a module rt's own code imports is missing: not the user's name
    parent, _, attribute = target.rpartition(".")
    try:
        value = getattr(importlib.import_module(parent), attribute) if parent else None
    except (ImportError, AttributeError):
        value = None
    if isinstance(value, types.ModuleType):
        return value
    # named after the rt module, not the alias: ``from tensorflow.keras import datasets`` then shows these words
    # (the import system turns a ModuleNotFoundError of the alias's own name into "cannot import name")
    raise ModuleNotFoundError(_missing_message(name), name=target)


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``tensorflow``/``keras`` names and loads the rt module they stand for, unchanged: the module object
    itself goes into ``sys.modules`` under the alias (its ``__spec__`` and ``__name__`` stay rt's)."""

    def find_spec(self, name, path=None, target=None):
        if not _is_aliased(name):
            return None
        module = resolve(name)
        return importlib.machinery.ModuleSpec(name, self, loader_state=(module, module.__dict__.get("__spec__")))

    def create_module(self, spec):
        return spec.loader_state[0]

    def exec_module(self, module):
        # the import machinery set the module's __spec__ to the alias's; give the rt module its own back
        original = module.__spec__.loader_state[1] if module.__spec__ is not None else None
        try:
            module.__spec__ = original
        except AttributeError:
            pass


_FINDER = _AliasFinder()


def _aliased_entries() -> dict[str, types.ModuleType]:
    return {name: module for name, module in list(sys.modules.items()) if _is_aliased(name)}


def enabled() -> bool:
    """Whether the hook is active (inside ``aliased()``, or for a ``python -m runtime.tf_compat`` run)."""
    return _FINDER in sys.meta_path


def enable() -> None:
    """Make ``tensorflow`` and ``keras`` imports give rt from now on, in this process (what a compat run does).
    Modules of those names imported before (a real TensorFlow) are set aside: later imports get rt."""
    if enabled():
        return
    for name in _aliased_entries():
        del sys.modules[name]
    sys.meta_path.insert(0, _FINDER)


@contextlib.contextmanager
def aliased() -> Iterator[None]:
    """While active, ``import tensorflow`` (and ``tensorflow.X``, ``keras``, ``keras.X``) gives rt; afterwards
    ``sys.modules`` holds what it held before (a real TensorFlow imported earlier is back, the aliases are gone).
    Nested or inside a compat run, it changes nothing."""
    if enabled():
        yield
        return
    saved = _aliased_entries()
    for name in saved:
        del sys.modules[name]
    sys.meta_path.insert(0, _FINDER)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(_FINDER)
        for name in _aliased_entries():
            del sys.modules[name]
        sys.modules.update(saved)


def run_path(path: str, argv: Sequence[str] = ()) -> None:
    """Run the script at ``path`` as ``__main__`` with ``sys.argv = [path, *argv]``, the hook enabled (as
    ``python script.py`` would, its directory first on ``sys.path``)."""
    enable()
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    runpy.run_path(path, run_name="__main__")


def run_module(name: str, argv: Sequence[str] = ()) -> None:
    """Run module ``name`` as ``__main__`` (``python -m name``), the hook enabled."""
    enable()
    sys.argv = [name, *argv]
    sys.path.insert(0, os.getcwd())
    runpy.run_module(name, run_name="__main__", alter_sys=True)


USAGE = """usage: {prog} script.py [args ...]
       {prog} -m module [args ...]

Run a program written against `import tensorflow as tf` (or `import keras`) on rt: for this run, those imports
give rt (runtime.tf_compat). Everything after the script or module is the program's own command line.
"""


def main(argv: Sequence[str] | None = None, prog: str = "python -m runtime.tf_compat") -> int:
    """``python -m runtime.tf_compat [-m module | script.py] [args]`` (``rt run`` calls it too). Like ``python``,
    it reads only what comes before the program: the rest, options included, is the program's ``sys.argv``.
    Returns the exit status; the program's own ``sys.exit`` propagates."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE.format(prog=prog), end="", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "-m":
        if len(argv) < 2:
            print(f"{prog}: error: -m needs a module name", file=sys.stderr)
            return 2
        run_module(argv[1], argv[2:])
        return 0
    if argv[0].startswith("-"):
        print(f"{prog}: error: unknown option {argv[0]} (give script.py or -m module first)", file=sys.stderr)
        return 2
    if not os.path.isfile(argv[0]):
        print(f"{prog}: error: no such file: {argv[0]}", file=sys.stderr)
        return 2
    run_path(argv[0], argv[1:])
    return 0


if __name__ == "__main__":
    # run as ``python -m runtime.tf_compat``: this file is ``__main__``; the hook is the package module's (the one
    # ``runtime.aot`` asks), not a second copy's
    from runtime import tf_compat  # noqa: PLW0406 - the package module, not this __main__ copy
    sys.exit(tf_compat.main())
