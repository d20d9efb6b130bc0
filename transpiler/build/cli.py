"""The ``build`` and ``graph`` subcommands of ``python -m transpiler``.

``transpiler/cli.py`` registers them with ``add_parsers(subparsers)``; ``python -m transpiler.build``
runs them on their own.
"""
from __future__ import annotations

import argparse
import os
import sys

from transpiler.lazy import lazy_import

# Loaded when the command runs, so that `--help` and the other commands start fast.
_driver = lazy_import("transpiler.build.driver")
_graph = lazy_import("transpiler.build.graph")

def add_parsers(subparsers) -> None:
    """Add ``build``, ``graph`` and ``ledger`` to an ``argparse`` subparsers object; each sets ``func``."""
    add_build(subparsers)
    add_graph(subparsers)
    add_ledger(subparsers)


def add_build(subparsers) -> None:
    """Add the ``build`` subcommand."""
    build = subparsers.add_parser(
        "build", help="compile the rt.functions of modules into extension modules",
        description="Find every module under PATH that defines rt.functions, trace its signatures and "
                    "compile it into an extension module beside the source (or under OUTDIR), so that "
                    "importing the module loads the native code. Unchanged modules are skipped.")
    build.add_argument("paths", nargs="+", metavar="PATH", help="a module (.py) or a directory to search")
    build.add_argument("-o", "--outdir", metavar="OUTDIR",
                       help="put the extensions in a mirrored tree under OUTDIR instead of beside the sources")
    build.add_argument("-j", "--jobs", type=_positive_int, default=None, metavar="N",
                       help=f"modules to build in parallel (default: the number of CPUs, {os.cpu_count()})")
    build.add_argument("--force", action="store_true", help="rebuild every module, even if it is up to date")
    build.add_argument("-v", "--verbose", action="store_true",
                       help="show what the code generator did per signature, and the ops that run through Python")
    build.add_argument("--strict", action="store_true",
                       help="fail a module when a signature of it cannot be compiled to native code (by default "
                            "that is a warning, and the signature runs on the generic executor)")
    build.add_argument("--from-ledger", action="store_true",
                       help="also compile the signatures the built modules traced at run time, and the shapes their "
                            "shape-generic code ran most (see `ledger`)")
    build.add_argument("--tf-compat", action="store_true",
                       help="build programs written against `import tensorflow as tf` (or `import keras`): their "
                            "tf.functions are rt.functions, and `tensorflow`/`keras` mean rt while they import, at "
                            "build time and whenever the built module is imported (see runtime.tf_compat)")
    build.add_argument("--renderer", default=None, help=argparse.SUPPRESS)
    build.set_defaults(func=_run_build)


def add_graph(subparsers) -> None:
    """Add the ``graph`` subcommand."""
    graph = subparsers.add_parser(
        "graph", help="print the graphs of an rt.function's signatures",
        description="Import the module from source, trace the function's input_signature (and keep the "
                    "signatures traced at import), and print each concrete function's graph.")
    graph.add_argument("target", metavar="FILE.py:NAME",
                       help="the function: path/to/file.py:NAME or package.module:NAME (NAME may be Class.method)")
    graph.add_argument("--format", choices=("text", "dot", "svg", "html"), default="text",
                       help="text: the SSA listing (default); dot: a Graphviz digraph; svg, html: pictures of the "
                            "graphs as traced and after optimization, with fused loops and Python callbacks marked "
                            "(laid out by Graphviz's dot)")
    graph.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    graph.add_argument("--no-optimize", action="store_true", help="show the graphs as traced")
    graph.add_argument("--passes", metavar="A,B", help="only these optimization passes (comma separated)")
    graph.add_argument("--tf-compat", action="store_true",
                       help="the module is written against `import tensorflow as tf` (as build --tf-compat)")
    graph.set_defaults(func=_run_graph)


def add_ledger(subparsers) -> None:
    """Add the ``ledger`` subcommand."""
    ledger = subparsers.add_parser(
        "ledger", help="show the signatures built modules traced at run time",
        description="Show what built modules recorded at run time: each signature they traced (a shape or dtype "
                    "nobody built, a function without input_signature) and the shapes their shape-generic code "
                    "ran most. `build --from-ledger` compiles the ones marked *.")
    ledger.add_argument("paths", nargs="*", metavar="PATH",
                        help="modules (.py) or directories, as given to build (default: every ledger in the cache)")
    ledger.add_argument("--clear", action="store_true", help="empty the ledgers instead of showing them")
    ledger.add_argument("--tf-compat", action="store_true",
                        help="find tf.function modules under PATH too (as build --tf-compat)")
    ledger.set_defaults(func=_run_ledger)


def _positive_int(text: str) -> int:
    """``-j N``: argparse prefixes the error with the option (``argument -j/--jobs: ...``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of parallel builds (1, 2, ...), got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _run_build(args) -> int:
    try:
        return _driver.build(args.paths, outdir=args.outdir, jobs=args.jobs, force=args.force, verbose=args.verbose,
                             renderer=args.renderer or _driver.DEFAULT_RENDERER, strict=args.strict,
                             from_ledger=args.from_ledger, tf_compat=args.tf_compat)
    except KeyboardInterrupt:  # before any worker started (discovery, hashing)
        print("interrupted", file=sys.stderr)
        return 130


def _run_ledger(args) -> int:
    return _driver.show_ledgers(args.paths, clear=args.clear, tf_compat=args.tf_compat)


def _run_graph(args) -> int:
    passes = [p.strip() for p in args.passes.split(",") if p.strip()] if args.passes else None
    return _graph.show_graphs(args.target, fmt=args.format, optimize=not args.no_optimize, passes=passes,
                              output=args.output, tf_compat=args.tf_compat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transpiler.build")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_parsers(subparsers)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
