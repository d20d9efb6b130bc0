"""The one template renderer: fills ``{{name}}`` placeholders in ``templates/`` files.

Every value is escaped for the place it goes: ``py`` values become Python literals
(``repr``: quotes, newlines, backslashes and non-ASCII are escaped), ``c_comment``
text cannot close a comment, ``c_string`` text goes inside a C string literal, ``ident`` must
be an identifier, ``raw`` is generated code that the emitters already made safe.
"""
from __future__ import annotations

import os
import re

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Installed: the package data of ``transpiler.templates`` (see setup.py); in a checkout: the top-level templates/.
TEMPLATES = next((d for d in (os.path.join(_PACKAGE, "templates"), os.path.join(os.path.dirname(_PACKAGE), "templates"))
                  if os.path.isdir(d)), os.path.join(_PACKAGE, "templates"))
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def py_literal(value) -> str:
    """A Python/Cython literal for a str, bytes, int or bool (``repr`` escapes everything unsafe)."""
    if not isinstance(value, (str, bytes, int, bool, type(None))):
        raise TypeError(f"cannot render {type(value).__name__} as a literal")
    text = repr(value)
    if isinstance(value, str) and not text.isascii():
        text = repr(value).encode("ascii", "backslashreplace").decode("ascii")
    return text


def c_comment(text: str) -> str:
    return text.replace("*/", "* /").replace("\n", " ").encode("ascii", "replace").decode("ascii")


def c_string(text: str) -> str:
    """The inside of a C string literal: backslashes, quotes, ``?`` (trigraphs) and everything but printable
    ASCII escaped (as three-digit octal, which no following digit can extend)."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in '\\"?' or not 32 <= byte < 127:
            out.append(f"\\{byte:03o}")
        else:
            out.append(char)
    return "".join(out)


def ident(text: str) -> str:
    if not text.isidentifier() or not text.isascii():
        raise ValueError(f"not a safe identifier: {text!r}")
    return text


ESCAPERS = {"py": py_literal, "c_comment": c_comment, "c_string": c_string, "ident": ident, "raw": str}


def render(template_name: str, **values) -> str:
    """Fill a template; each value is a (kind, value) pair with kind in ESCAPERS."""
    with open(os.path.join(TEMPLATES, template_name), encoding="utf-8") as f:
        text = f.read()

    def fill(match):
        key = match.group(1)
        if key not in values:
            raise KeyError(f"template {template_name} needs a value for {{{{{key}}}}}")
        kind, value = values[key]
        return ESCAPERS[kind](value)
    return _PLACEHOLDER.sub(fill, text)
