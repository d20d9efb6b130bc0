"""The runtime half of the converter: what converted code calls as ``rt__.<name>``.

Each module is named after the converter that emits its calls
(``transpiler/converters/control_flow.py`` emits ``rt__.if_stmt``, defined in
``control_flow.py`` here).
"""
from runtime.operators.call_trees import converted_call
from runtime.operators.comparisons import compare_chain, in_, not_in
from runtime.operators.conditional_expressions import if_exp
from runtime.operators.control_flow import for_stmt, if_stmt, retval, while_stmt
from runtime.operators.exceptions import assert_stmt
from runtime.operators.logical import and_, not_, or_
from runtime.operators.py_builtins import len_, range_
from runtime.operators.variables import (Undefined, UndefinedReturnValue, Untracked, ld, ldu, store_attr,
                                         store_item)

__all__ = ["converted_call", "compare_chain", "in_", "not_in", "if_exp", "for_stmt", "if_stmt", "while_stmt",
           "assert_stmt", "and_", "not_", "or_", "len_", "range_", "Undefined", "UndefinedReturnValue", "Untracked",
           "ld", "ldu", "retval", "store_attr", "store_item"]
