"""Build of the optional C extensions; everything else is declared in pyproject.toml.

The extensions speed up the first parsing pass, the columns of journal blocks and the trigram
filters of their text frames. They are
optional: where no C compiler is present the build carries on and npuwatch uses the identical
pure-Python implementations (and says so: `npuwatch --version`, `doctor`).

From Python 3.11 on they are built for the stable ABI (Py_LIMITED_API, src/npuwatch/
limited_api.h): one `cp311-abi3` wheel per machine serves every later Python. Built by 3.10,
they use that Python's own API, in a wheel for 3.10 alone.
"""

import sys

from setuptools import Extension, setup

STABLE_ABI = sys.version_info >= (3, 11)
"""The limited API's buffer protocol (PyObject_GetBuffer) is in it from 3.11."""

FLAGS = ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"]


def extension(name: str, source: str) -> Extension:
    return Extension(
        name,
        sources=[source],
        depends=["src/npuwatch/limited_api.h"],
        include_dirs=["src/npuwatch"],
        define_macros=[("Py_LIMITED_API", "0x030B0000")] if STABLE_ABI else [],
        py_limited_api=STABLE_ABI,
        optional=True,
        extra_compile_args=FLAGS,
    )


setup(
    ext_modules=[
        extension("npuwatch.parsers._speedups", "src/npuwatch/parsers/_speedups.c"),
        extension("npuwatch.journal._columns", "src/npuwatch/journal/_columns.c"),
        extension("npuwatch.journal._trigrams", "src/npuwatch/journal/_trigrams.c"),
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}} if STABLE_ABI else {},
)
