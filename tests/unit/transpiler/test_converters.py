"""Converter tests: dedented source before -> after, one converter at a time."""
import textwrap

import libcst as cst

from transpiler import origin_info
from transpiler.conversion import convert_source
from transpiler.converters.asserts import AssertTransformer
from transpiler.converters.base import Context
from transpiler.converters.break_statements import BreakTransformer
from transpiler.converters.call_trees import CallTreeTransformer
from transpiler.converters.conditional_expressions import ConditionalExpressionTransformer
from transpiler.converters.continue_statements import ContinueTransformer
from transpiler.converters.logical_expressions import LogicalTransformer
from transpiler.converters.return_statements import ReturnTransformer
from transpiler.naming import Namer


def run(converter, source: str) -> str:
    module = cst.parse_module(textwrap.dedent(source))
    out = converter.transform(module, Context(Namer.for_module(module)))
    return origin_info.strip_markers(out).code


def check(converter, before, after):
    got = run(converter, before)
    assert got == textwrap.dedent(after), "\n" + got


def test_logical_expressions():
    check(LogicalTransformer, """\
        def f(a, b, c):
            return a and b and c or not a
        """, """\
        def f(a, b, c):
            return rt__.or_(lambda: rt__.and_(lambda: a, lambda: b, lambda: c), lambda: rt__.not_(a))
        """)


def test_conditional_expression():
    check(ConditionalExpressionTransformer, """\
        def f(x):
            return x if x > 0 else -x
        """, """\
        def f(x):
            return rt__.if_exp(x > 0, lambda: x, lambda: -x, 'x > 0')
        """)


def test_assert():
    check(AssertTransformer, """\
        def f(x):
            assert x > 0, "positive"
        """, """\
        def f(x):
            rt__.assert_stmt(x > 0, lambda: "positive")
        """)


def test_call_trees():
    check(CallTreeTransformer, """\
        def f(x, *a, **k):
            g(x, *a, y=1, **k)
            super().f()
            rt__.ld(x)
        """, """\
        def f(x, *a, **k):
            rt__.converted_call(g, (x, *a), {'y': 1, **k})
            rt__.converted_call(super().f, (), None)
            rt__.ld(x)
        """)


def test_break_and_for_else():
    check(BreakTransformer, """\
        def f(xs):
            for x in xs:
                if x:
                    break
                y = x
            else:
                y = 0
        """, """\
        def f(xs):
            rt__break = False
            for x in xs:
                rt__.loop_while(not rt__break)
                if x:
                    rt__break = True
                if not rt__break:
                    y = x
            if not rt__break:
                y = 0
        """)


def test_while_else_without_break():
    check(BreakTransformer, """\
        def f(i):
            while i < 3:
                i += 1
            else:
                i = 0
        """, """\
        def f(i):
            while i < 3:
                i += 1
            i = 0
        """)


def test_continue():
    check(ContinueTransformer, """\
        def f(i):
            while i < 3:
                i += 1
                if i == 2:
                    continue
                g(i)
        """, """\
        def f(i):
            while i < 3:
                rt__continue = False
                i += 1
                if i == 2:
                    rt__continue = True
                if not rt__continue:
                    g(i)
        """)


def test_return_moves_rest_into_else():
    check(ReturnTransformer, """\
        def f(x):
            if x > 0:
                return x
            return -x
        """, """\
        def f(x):
            rt__do_return = False
            rt__retval = rt__.UndefinedReturnValue()
            if x > 0:
                rt__retval = x
                rt__do_return = True
            else:
                rt__retval = -x
                rt__do_return = True
            return rt__.retval(rt__retval, rt__do_return)
        """)


def test_return_in_loop():
    check(ReturnTransformer, """\
        def f(n):
            while n > 0:
                if n == 3:
                    return n
                n -= 1
            return 0
        """, """\
        def f(n):
            rt__do_return = False
            rt__retval = rt__.UndefinedReturnValue()
            while not rt__do_return and n > 0:
                if n == 3:
                    rt__retval = n
                    rt__do_return = True
                else:
                    n -= 1
            if not rt__do_return:
                rt__retval = 0
                rt__do_return = True
            else:
                rt__do_return = True
            return rt__.retval(rt__retval, rt__do_return)
        """)


def test_plain_return_is_untouched():
    check(ReturnTransformer, """\
        def f(x):
            y = x + 1
            return y
        """, """\
        def f(x):
            y = x + 1
            return y
        """)


def test_full_pipeline_if():
    code = convert_source(textwrap.dedent("""\
        def f(x):
            if x > 0:
                y = 1
            else:
                y = 2
            return y
        """)).code
    assert code == textwrap.dedent("""\
        def f(x):
            y = rt__.Undefined('y')
            def rt__get_state():
                return (y,)
            def rt__set_state(rt__vars):
                nonlocal y
                (y,) = rt__vars
            def rt__if_body():
                nonlocal y
                y = 1
            def rt__else_body():
                nonlocal y
                y = 2
            rt__.if_stmt(x > 0, rt__if_body, rt__else_body, rt__get_state, rt__set_state, ('y',), 1)
            return rt__.ld(y)
        """), code


def test_full_pipeline_for_and_while_compile():
    code = convert_source(textwrap.dedent("""\
        @rt.function
        def f(n):
            s = 0
            for i in range(n):
                if i % 2:
                    continue
                s += i
            while s > 10 and not s < 0:
                s -= 3
            return s
        """)).code
    compile(code, "<converted>", "exec")
    assert code.startswith("def f(n):")
    assert "rt__.for_stmt(" in code and "rt__.while_stmt(" in code
    assert "@rt.function" not in code


def test_globals_and_nonlocals_are_declared():
    code = convert_source(textwrap.dedent("""\
        def f(x):
            global g
            if x:
                g = 1
        """)).code
    assert "global g" in code and "nonlocal g" not in code


def test_generated_names_do_not_collide():
    code = convert_source(textwrap.dedent("""\
        def f(rt__if_body):
            if rt__if_body:
                rt__if_body = 2
            return rt__if_body
        """)).code
    assert "def rt__if_body_1():" in code


def test_cache_hits():
    src = "def f(x):\n    if x:\n        x = 1\n    return x\n"
    a = convert_source(src, "a.py", 1)
    b = convert_source(src, "a.py", 1)
    assert a is b


# -- source positions for any layout (issue 19, item 2) ----------------------------------------------------------

BLACK_STYLE = '''\
def f(
    x,
    scale,
):
    table = {
        "a": x,
        "b": x * scale,
    }
    if x > 0:
        items = [
            table["a"],
            table["b"],
        ]
    else:
        items = [
            x,
            x,
        ]
    return items[0] + items[
        1
    ] - undefined_name
'''


def test_multi_line_literals_closed_left_of_their_opening_convert():
    # black's layout: the closing bracket sits left of where the literal began (it raised "line N, column 12-9 is
    # not a valid range" from compile)
    converted = convert_source(BLACK_STYLE, "black.py", 10)
    assert converted.name == "f" and "table = {" in converted.code


def _positions_by_line(converted):
    """Every (line, column, end line, end column) the compiled converted function has, by its first line."""
    outer = next(c for c in converted.module_code.co_consts if hasattr(c, "co_code"))
    codes, found = [outer], set()
    while codes:
        code = codes.pop()
        found |= {p for p in code.co_positions() if p[0] is not None}
        codes += [c for c in code.co_consts if hasattr(c, "co_code")]
    return found


def test_lines_of_a_multi_line_statement_map_to_the_users_lines_and_columns():
    converted = convert_source(BLACK_STYLE, "black.py", 10)
    source = BLACK_STYLE.splitlines()
    positions = _positions_by_line(converted)
    for line, end_line, col, end_col in positions:
        assert 10 <= line <= end_line <= 10 + len(source), (line, end_line)
        if col is not None and col >= 0 and line == end_line:
            assert col <= end_col <= len(source[line - 10]), (line, col, end_col)
    # `x * scale` on the dict's third line keeps its own line and columns
    text = source[6]
    assert (16, 16, text.index("x * scale"), text.index("x * scale") + len("x * scale")) in positions
    # the name read on the return statement's last line
    text = source[20]
    assert (30, 30, text.index("undefined_name"), text.index("undefined_name") + len("undefined_name")) in positions


def test_an_error_in_a_continuation_line_names_that_line(tmp_path):
    import importlib.util
    import traceback

    import runtime as rt

    path = tmp_path / "black_user.py"
    path.write_text("import runtime as rt\n" + BLACK_STYLE)
    spec = importlib.util.spec_from_file_location("black_user", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        rt.function(module.f)(rt.constant(1.0), rt.constant(2.0))
    except NameError as e:
        frames = [(frame.filename, frame.lineno) for frame in traceback.extract_tb(e.__traceback__)]
    else:
        raise AssertionError("no NameError")
    assert (str(path), 22) in frames, frames
