"""Build of the optional C extension; everything else is declared in pyproject.toml.

The extension speeds up the first parsing pass. It is optional: where no C compiler is present
the build carries on and npuwatch uses the identical pure-Python implementation.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "npuwatch.parsers._speedups",
            sources=["src/npuwatch/parsers/_speedups.c"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
    ]
)
