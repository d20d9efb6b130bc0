"""The package's version, written once: ``rt.__version__``, and ``pyproject.toml`` reads it from here."""
__version__ = "0.1.0"
