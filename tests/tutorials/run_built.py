"""Run a built tutorial program and report, as one JSON line: what its ``main(**options)`` returned (as lists), and
for each of its step Functions (paths from the module: ``train_step``, ``model.train_function``) the number of
run-time traces and whether each concrete function runs native code.

``python run_built.py MODULE '["train_step", ...]' '{"epochs": 1}'`` in a process whose ``sys.path`` holds the built
tree: the module is imported as any other (a ``--tf-compat`` build reads ``tensorflow`` as rt by itself).
"""
import contextlib
import importlib
import io
import json
import sys

import numpy as np


def plain(value):
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if hasattr(value, "numpy"):
        value = value.numpy()
    value = np.asarray(value)
    if value.dtype.kind == "c":
        return {"real": value.real.tolist(), "imag": value.imag.tolist()}
    return value.tolist()


def resolve(module, path):
    value = module
    for part in path.split("."):
        value = getattr(value, part)
    return value


def main():
    name, steps, options = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    module = importlib.import_module(name)
    aliased_after_import = "tensorflow" in sys.modules or "keras" in sys.modules
    with contextlib.redirect_stdout(io.StringIO()):
        result = module.main(**options)
    report = {}
    for path in steps:
        function = resolve(module, path)
        report[path] = {"traces": function.experimental_get_tracing_count(),
                        "native": [bool(c.native) for c in function.concrete_functions()]}
    print(json.dumps({"file": module.__file__, "steps": report, "result": plain(result),
                      "aliased_after_import": aliased_after_import}))


if __name__ == "__main__":
    main()
