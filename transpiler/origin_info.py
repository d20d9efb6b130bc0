"""Where each converted line comes from.

Before conversion every statement gets a trailing comment ``# rt__L<line>`` (its
line in the user's file), or ``# rt__L<first>-<last>`` when the statement (or a
compound statement's header) spans several lines: the lines come from libcst's
``PositionProvider``, whatever the layout. Converters carry the marker over to the
statements they generate (as ``# rt__L<first>``: generated code has its own layout).
After conversion ``source_map`` reads the markers back (converted line -> original
line; a statement that kept its number of lines maps line by line) and
``strip_markers`` removes them. This pass also canonicalizes ``elif`` into
``else: if`` and one-line suites into indented blocks, so every statement has a
place for its marker.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize

import libcst as cst
from libcst.metadata import PositionProvider


_MARKER = re.compile(r"\s*#?\s*rt__L(\d+)(?:-(\d+))?\s*$")


class _Mark(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line_offset: int):
        super().__init__()
        self.offset = line_offset

    def _lines(self, node) -> tuple[int, int]:
        """The user's first and last line of a simple statement, or of a compound statement's header."""
        span = self.get_metadata(PositionProvider, node)
        body = getattr(node, "body", None)
        if isinstance(body, cst.IndentedBlock):
            last = self.get_metadata(PositionProvider, body.header).start.line    # the line of the colon
        elif isinstance(body, cst.SimpleStatementSuite):
            last = self.get_metadata(PositionProvider, body).start.line
        else:
            last = span.end.line
        return span.start.line + self.offset, last + self.offset

    def _mark(self, original, updated, lines):
        first, last = lines
        marker = f"# rt__L{first}" if last == first else f"# rt__L{first}-{last}"
        if isinstance(updated, cst.SimpleStatementLine):
            old = updated.trailing_whitespace.comment
            text = f"{old.value}  {marker}" if old is not None else marker
            return updated.with_changes(trailing_whitespace=updated.trailing_whitespace.with_changes(
                whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(text)))
        body = getattr(updated, "body", None)
        if isinstance(body, cst.SimpleStatementSuite):
            body = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=list(body.body))])
            updated = updated.with_changes(body=body)
        if isinstance(body, cst.IndentedBlock):
            old = body.header.comment
            text = f"{old.value}  {marker}" if old is not None else marker
            updated = updated.with_changes(body=body.with_changes(header=cst.TrailingWhitespace(
                whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(text))))
        return updated

    def on_leave(self, original_node, updated_node):
        if isinstance(updated_node, (cst.SimpleStatementLine, cst.BaseCompoundStatement, cst.Else,
                                     cst.ExceptHandler, cst.Finally)):
            updated_node = self._mark(original_node, updated_node, self._lines(original_node))
        if isinstance(updated_node, cst.If) and isinstance(updated_node.orelse, cst.If):
            inner = updated_node.orelse
            updated_node = updated_node.with_changes(orelse=cst.Else(body=cst.IndentedBlock(body=[inner])))
        return updated_node


def mark_origins(module: cst.Module, first_line: int) -> cst.Module:
    """Mark each statement with the line it has in the user's file (the module's line 1 is ``first_line``)."""
    return cst.MetadataWrapper(module, unsafe_skip_copy=True).visit(_Mark(first_line - 1))   # a fresh parse


def _marker_comments(code: str) -> dict[int, tuple[tuple[int, int], int, str]]:
    """Per line of ``code`` that ends with a marker comment: ((first, last) marked line, comment column, comment
    text).

    Comments are found with ``tokenize`` (a ``#`` inside a string is not a comment)."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT:
            m = _MARKER.search(token.string)
            if m:
                first = int(m.group(1))
                found[token.start[0]] = ((first, int(m.group(2) or first)), token.start[1], token.string)
    return found


def source_map(code: str) -> dict[int, int]:
    """Converted line -> original line, from the markers in ``code`` (every line gets the closest marker).

    A statement's marker is on its last line (a simple statement) or on its header (a compound one). A statement
    (or header) that spans as many lines as the user's maps line by line (the layout of a multi-line literal or
    call is kept); otherwise every line it spans maps to the user's first line. Uses ``ast`` for the statements'
    extents."""
    markers = _marker_comments(code)
    mapping: dict[int, int] = {}
    for node in ast.walk(ast.parse(code)):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        last = body[0].lineno - 1 if isinstance(body, list) and body and isinstance(body[0], ast.stmt) \
            else node.end_lineno
        last = max(last, node.lineno)
        hits = [markers[i][0] for i in range(last, node.lineno - 1, -1) if i in markers]
        if hits:
            first, user_last = hits[0]
            line_by_line = user_last - first == last - node.lineno
            for i in range(node.lineno, last + 1):
                mapping.setdefault(i, first + (i - node.lineno if line_by_line else 0))
    for line, ((marked, _), _, _) in markers.items():
        mapping.setdefault(line, marked)
    n_lines = code.count("\n") + 1
    last_seen = None
    for i in range(1, n_lines + 1):
        if i in mapping:
            last_seen = mapping[i]
        elif last_seen is not None:
            mapping[i] = last_seen
    first = min(mapping.values()) if mapping else 1
    for i in range(1, n_lines + 1):
        mapping.setdefault(i, first)
    return mapping


def strip_marker_comments(code: str) -> str:
    """``code`` without its marker comments (a comment of the user's before a marker stays)."""
    markers = _marker_comments(code)
    if not markers:
        return code
    lines = code.split("\n")
    for line, (_, column, comment) in markers.items():
        m = _MARKER.search(comment)
        rest = comment[:m.start()].rstrip()
        text = lines[line - 1]
        keep = text[:column] + rest if rest and rest != "#" else text[:column]
        lines[line - 1] = keep.rstrip()
    return "\n".join(lines)


class _Strip(cst.CSTTransformer):
    def leave_Comment(self, original_node, updated_node):
        m = _MARKER.search(updated_node.value)
        if not m:
            return updated_node
        rest = updated_node.value[:m.start()].rstrip()
        if not rest or rest == "#":
            return cst.RemovalSentinel.REMOVE
        return updated_node.with_changes(value=rest)

    def leave_TrailingWhitespace(self, original_node, updated_node):
        if updated_node.comment is None:
            return updated_node.with_changes(whitespace=cst.SimpleWhitespace(""))
        return updated_node


def strip_markers(node: cst.CSTNode) -> cst.CSTNode:
    return node.visit(_Strip())
