"""Build script: the pure-Python packages plus the compiled generic executor (Cython + OpenMP)."""
from setuptools import setup

setup()
