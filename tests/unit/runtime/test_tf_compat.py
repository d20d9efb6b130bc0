"""runtime.tf_compat: TensorFlow programs run on rt when (and only when) asked.

- ``aliased()`` and a compat run make ``tensorflow``, ``tensorflow.X``, ``keras``, ``keras.X`` rt's modules, and
  leave ``sys.modules`` as it was afterwards (a real TensorFlow imported before comes back);
- without the opt-in, importing ``runtime`` (or ``runtime.tf_compat``) installs nothing;
- a name rt lacks gives the API table's words, as an attribute or as an import;
- ``python -m runtime.tf_compat`` and ``rt run`` run a script or a module with its own command line and exit
  status.
"""
from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import runtime as rt
from runtime import tf_compat

PROJECT = Path(__file__).resolve().parents[3]


def test_aliased_imports_give_rt_and_leave_sys_modules_as_they_were():
    sentinel = types.ModuleType("tensorflow")          # stands for a real TensorFlow imported before
    saved = {name: sys.modules.get(name) for name in ("tensorflow", "keras")}
    sys.modules["tensorflow"] = sentinel
    # other tests of the session may have imported the real TensorFlow's submodules: they must stay as they are
    before = {name: module for name, module in sys.modules.items()
              if name.startswith(("tensorflow.", "keras.")) and module is not None}
    try:
        with tf_compat.aliased():
            import keras
            import tensorflow as tf
            import tensorflow.keras.layers as layers_module
            from tensorflow.keras import Model, layers
            from tensorflow.keras.layers import Dense
            assert tf is rt and keras is rt.keras and tf.keras is rt.keras
            assert layers is rt.keras.layers and layers_module is rt.keras.layers and Dense is rt.keras.layers.Dense
            assert Model is rt.keras.Model
            import tensorflow.math
            assert tensorflow.math is rt.math            # a namespace rt holds as an attribute
            assert tf_compat.enabled()
        assert sys.modules["tensorflow"] is sentinel
        after = {name: module for name, module in sys.modules.items()
                 if name.startswith(("tensorflow.", "keras.")) and module is not None}
        assert after == before
        assert not tf_compat.enabled()
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    # the rt modules keep their own identity
    assert rt.__spec__.name == "runtime" and rt.keras.__spec__.name == "runtime.keras" and rt.__name__ == "runtime"


def test_names_rt_lacks_give_the_api_tables_words():
    words = "see the README's API table"
    with tf_compat.aliased():
        import tensorflow as tf
        with pytest.raises(AttributeError, match=r"rt has no image \(TensorFlow's tf.image\); " + words):
            _ = tf.image.resize
        with pytest.raises(ModuleNotFoundError, match=r"rt has no io \(TensorFlow's tf.io\)"):
            import tensorflow.io
        with pytest.raises(ModuleNotFoundError, match=r"rt has no keras.datasets \(TensorFlow's tf.keras.datasets\)"):
            import tensorflow.keras.datasets
        with pytest.raises(ImportError, match="datasets"):     # Python's own words for a from-import
            from tensorflow.keras import datasets  # noqa: F401
        with pytest.raises(ModuleNotFoundError, match=r"rt has no keras.applications"):
            import keras.applications  # noqa: F401
        with pytest.raises(AttributeError, match=r"rt has no keras.layers.GRU \(TensorFlow's tf.keras.layers.GRU\)"):
            _ = tf.keras.layers.GRU
        with pytest.raises(AttributeError, match=r"rt has no train.Saver"):
            _ = tf.train.Saver


def test_without_the_opt_in_tensorflow_is_not_shadowed():
    code = ("import sys, runtime, runtime.tf_compat\n"
            "from runtime.tf_compat import _AliasFinder\n"
            "assert not any(isinstance(f, _AliasFinder) for f in sys.meta_path)\n"
            "try:\n"
            "    import tensorflow\n"
            "except ImportError:\n"
            "    print('absent')\n"
            "else:\n"
            "    print('runtime' if tensorflow is runtime else 'tensorflow')\n")
    environment = dict(os.environ, PYTHONPATH=str(PROJECT), TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in ("absent", "tensorflow")


SCRIPT = '''
import sys
import tensorflow as tf
from tensorflow import keras

@tf.function
def double(x):
    return x * 2

print(tf.__name__, keras.__name__, sys.argv[1:], float(double(tf.constant(2.0))))
sys.exit(int(sys.argv[-1]))
'''


@pytest.mark.parametrize("entry", [["-m", "runtime.tf_compat"], ["-m", "transpiler", "run"]])
def test_a_compat_run_runs_the_script_with_its_own_arguments_and_exit_status(tmp_path, entry):
    script = tmp_path / "program.py"
    script.write_text(SCRIPT)
    environment = dict(os.environ, PYTHONPATH=str(PROJECT))
    result = subprocess.run([sys.executable, *entry, str(script), "--epochs", "-m", "3"], capture_output=True,
                            text=True, env=environment, timeout=120, check=False, cwd=tmp_path)
    assert result.stdout.strip() == "runtime runtime.keras ['--epochs', '-m', '3'] 4.0", result.stderr
    assert result.returncode == 3
    as_module = subprocess.run([sys.executable, *entry, "-m", "program", "0"], capture_output=True, text=True,
                               env=environment, timeout=120, check=False, cwd=tmp_path)
    assert as_module.stdout.strip() == "runtime runtime.keras ['0'] 4.0" and as_module.returncode == 0, \
        as_module.stderr


def test_a_compat_run_without_a_program_says_how():
    assert tf_compat.main([]) == 2
    assert tf_compat.main(["no_such_file.py"]) == 2
    assert tf_compat.main(["--epochs"]) == 2


def test_log_device_placement_names_the_cpu(capsys):
    rt.debugging.set_log_device_placement(True)
    try:
        rt.add(rt.constant(1.0), 2.0)
    finally:
        rt.debugging.set_log_device_placement(False)
    rt.add(rt.constant(1.0), 2.0)
    assert capsys.readouterr().err == "Executing op AddV2 in device /job:localhost/replica:0/task:0/device:CPU:0\n"
