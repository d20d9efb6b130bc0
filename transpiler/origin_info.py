"""Where each converted line comes from.

Before conversion every statement gets a trailing comment ``# rt__L<line>`` (its
line in the user's file); converters carry the marker over to the statements they
generate. After conversion ``source_map`` reads the markers back (converted line ->
original line) and ``strip_markers`` removes them. This pass also canonicalizes
``elif`` into ``else: if`` and one-line suites into indented blocks, so every
statement has a place for its marker.
"""
from __future__ import annotations

import re

import libcst as cst
from libcst.metadata import PositionProvider

from transpiler.converters.base import marker_of

_MARKER = re.compile(r"\s*#?\s*rt__L(\d+)\s*$")


class _Mark(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line_offset: int):
        super().__init__()
        self.offset = line_offset

    def _line(self, node) -> int:
        return self.get_metadata(PositionProvider, node).start.line + self.offset

    def _mark(self, original, updated, line):
        marker = f"# rt__L{line}"
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
            updated_node = self._mark(original_node, updated_node, self._line(original_node))
        if isinstance(updated_node, cst.If) and isinstance(updated_node.orelse, cst.If):
            inner = updated_node.orelse
            updated_node = updated_node.with_changes(orelse=cst.Else(body=cst.IndentedBlock(body=[inner])))
        return updated_node


def mark_origins(module: cst.Module, first_line: int) -> cst.Module:
    """Mark each statement with the line it has in the user's file (the module's line 1 is ``first_line``)."""
    return cst.MetadataWrapper(module).visit(_Mark(first_line - 1))


def source_map(code: str) -> dict[int, int]:
    """Converted line -> original line, from the markers in ``code`` (every line gets the closest marker)."""
    module = cst.parse_module(code)
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    mapping: dict[int, int] = {}

    class _Collect(cst.CSTVisitor):
        def on_visit(self, node):
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                m = marker_of(node)
                if m is not None:
                    line = int(m.split("L")[1])
                    pos = positions[node]
                    if isinstance(node, cst.SimpleStatementLine):
                        for i in range(pos.start.line, pos.end.line + 1):
                            mapping[i] = line
                    else:
                        mapping.setdefault(pos.start.line, line)
                        # the header of a compound statement may span lines (e.g. a long condition)
                        body = getattr(node, "body", None)
                        hdr_end = positions[body.header].start.line if isinstance(body, cst.IndentedBlock) \
                            else pos.start.line
                        for i in range(pos.start.line, hdr_end + 1):
                            mapping.setdefault(i, line)
            return True

    wrapper.module.visit(_Collect())
    n_lines = code.count("\n") + 1
    last = None
    for i in range(1, n_lines + 1):
        if i in mapping:
            last = mapping[i]
        elif last is not None:
            mapping[i] = last
    first = min(mapping.values()) if mapping else 1
    for i in range(1, n_lines + 1):
        mapping.setdefault(i, first)
    return mapping


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
