"""Build of the optional C extensions; everything else is declared in pyproject.toml.

The extensions speed up the first parsing pass and the columns of journal blocks. They are
optional: where no C compiler is present the build carries on and npuwatch uses the identical
pure-Python implementations.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "npuwatch.parsers._speedups",
            sources=["src/npuwatch/parsers/_speedups.c"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        ),
        Extension(
            "npuwatch.journal._columns",
            sources=["src/npuwatch/journal/_columns.c"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        ),
    ]
)
