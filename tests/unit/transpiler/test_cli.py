"""python -m transpiler to_code FILE.py:NAME | package.module:NAME | Class.method."""
import textwrap

from transpiler.cli import main

SOURCE = textwrap.dedent("""\
    import runtime as rt

    @rt.function
    def f(x):
        if x > 0:
            x = -x
        return x

    class M:
        def step(self, n):
            while n > 0:
                n -= 1
            return n
    """)


def test_to_code_file_and_method(tmp_path, capsys):
    path = tmp_path / "mod.py"
    path.write_text(SOURCE)
    assert main(["to_code", f"{path}:f"]) == 0
    out = capsys.readouterr().out
    compile(out, "<out>", "exec")
    assert out.startswith("def f(x):") and "rt__.if_stmt" in out
    assert main(["to_code", f"{path}:M.step"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("def step(self, n):") and "rt__.while_stmt" in out
    assert main(["to_code", str(path)]) == 0          # every rt.function in the file
    assert "def f(x):" in capsys.readouterr().out


def test_to_code_module_path(capsys):
    assert main(["to_code", "json.encoder:py_encode_basestring"]) == 0
    assert "def py_encode_basestring" in capsys.readouterr().out


def test_to_code_on_a_syntax_error_names_the_file_and_line(tmp_path, capsys):
    path = tmp_path / "broken.py"
    path.write_text("import runtime as rt\n\n@rt.function\ndef f(x):\n    return x +\n")
    assert main(["to_code", f"{path}:f"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:5: syntax error" in err and "return x +" in err
    assert "Traceback" not in err and "libcst" not in err
