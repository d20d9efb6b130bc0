"""Speed benchmarks of built code against numpy and hand-written C (SPEC "Speed targets").

Run on demand, never in the test suite:

    python -m benchmarks [--strict] [--quick]

It builds ``benchmarks/kernels.py`` with ``python -m transpiler build`` into
``benchmarks/_build/``, compiles ``benchmarks/power_ref.c`` with ``gcc -O3``, and
prints one table of figures, ratios, thresholds and PASS/FAIL.
"""
