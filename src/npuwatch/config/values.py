"""The pydantic types of the quantities an operator writes (quantities.py parses them)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator

from npuwatch.quantities import parse_byte_size, parse_duration

Duration = Annotated[float, BeforeValidator(parse_duration)]
"""Seconds, written in configuration as a number or as "200ms", "10s", "5m", "1h", "30d"."""

ByteSize = Annotated[int, BeforeValidator(parse_byte_size)]
"""Bytes, written in configuration as an int or as "64KiB", "64KB", "1 MiB", "10GiB"."""
