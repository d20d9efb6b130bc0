"""``python -m transpiler.build build|graph ...`` (the same subcommands as ``python -m transpiler``)."""
import sys

from transpiler.build.cli import main

sys.exit(main())
