"""The guides' examples as a package that ``python -m transpiler build examples/`` compiles.

One module per guide topic (``function_basics``, ``simple_relu``, ... ``power``, ``training``, ``cnn_training``).
Each defines its ``rt.function``s at module level and declares the signatures the
build compiles to native code: an ``input_signature`` where the guide uses one,
otherwise module-level ``f.get_concrete_function(...)`` calls for the signatures
that the example calls with. Each has a ``run()`` that calls the functions on the
guide's inputs and returns ``(label, value, reference)`` triples, the reference
computed by eager execution (see ``examples._check``).

Build and run them:

    python -m transpiler build examples/
    python -m examples
"""

MODULES = (
    "function_basics",
    "simple_relu",
    "polymorphism",
    "eager_vs_graph",
    "non_strict",
    "tracing_rules",
    "input_signature",
    "python_args_retrace",
    "concrete_functions",
    "autograph_loops",
    "graph_size",
    "tensor_array",
    "side_effects",
    "variables",
    "globals_objects",
    "recursion",
    "power",
    "training",
    "cnn_training",
)
