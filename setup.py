"""Build hook: compile every Cython module under dsasim/ (the compiled core). Metadata lives in pyproject.toml."""

from pathlib import Path

from Cython.Build import cythonize
from setuptools import setup

sources = sorted(str(p) for p in Path("dsasim").rglob("*.pyx"))
setup(ext_modules=cythonize(sources, language_level=3, compiler_directives={"embedsignature": True})
      if sources else [])
