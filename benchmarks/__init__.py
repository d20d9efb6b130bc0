"""Speed benchmarks of built code against numpy, jax.jit, tf.function, Numba and hand-written C.

Run on demand, never in the test suite:

    python -m benchmarks [--strict] [--quick] [--only CLASS] [--wave first|second] [--threads-sweep]

It builds ``benchmarks/kernels.py`` (SPEC's speed targets) and ``benchmarks/ml.py`` (the ML workloads)
with ``python -m transpiler build`` into ``benchmarks/_build/``, compiles the C references
(``*_ref.c``) with the generated code's own flags, and prints one table per wave of times, targets,
ratios, PASS/FAIL and the largest differences between results. ``harness.py`` says how to add a class.
"""
