"""What a rule pack file may say (pydantic, `extra="forbid"`): the loader validates each pack
with these models, then keeps the plain settings of rules/model.py, which load without pydantic.

pack: hccl-timeouts
description: Timeouts in collective communication.
disable: [cann.generic.error]        # switch off rules of other packs by id
rules:
  - id: hccl.notify-wait-timeout
    title: HCCL notify wait timed out
    when: error.code == EI0002 or (log.logger == HCCL and message contains "notify wait")
    severity: error                   # critical, error, warning, info
    layer: communication
    category: timeout
    advice: Find the rank named as remote rank; its own first error is the cause.
    extract: ['remote rank\\[(?P<remote_rank>\\d+)\\]']
    threshold: {count: 3, within: 60s, by: [process.pid]}
    context: {before: 50, after: 5}
    dedupe: {within: 60s, by: [host.name, process.pid]}
    symptom: true                     # usually a consequence of a failure elsewhere
    fallback: 0                       # 1, 2: fire only when no rule of a lower tier matched
    examples:
      match: ['EI0002: [PID: 41] 2025-09-14-09:37:31.402.000 The wait execution ...']
      no_match: ['[INFO] HCCL(1,p):2025-01-01-00:00:00.000.000 [a.cc:1] [1]all good']
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from npuwatch.quantities import parse_duration
from npuwatch.rules.model import Layer, Severity

Duration = Annotated[float, BeforeValidator(parse_duration)]
"""Seconds, as the configuration writes them: finite, not negative, at most 100 years."""


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ThresholdSchema(_Schema):
    count: int = Field(ge=1, description="Matches needed within the window to fire.")
    within: Duration = Field(description="The window, e.g. 60s or 10m.")
    by: tuple[str, ...] = Field(default=(), description="Fields that group the count.")


class ContextSchema(_Schema):
    before: int = Field(50, ge=0, le=1000)
    after: int = Field(5, ge=0, le=1000)


class DedupeSchema(_Schema):
    within: Duration = 60.0
    by: tuple[str, ...] = ("host.name", "process.pid")


class ExampleSchema(_Schema):
    text: str
    path: str | None = None


def _example(value: object) -> object:
    return {"text": value} if isinstance(value, str) else value


class ExamplesSchema(_Schema):
    match: tuple[Annotated[ExampleSchema, BeforeValidator(_example)], ...] = ()
    no_match: tuple[Annotated[ExampleSchema, BeforeValidator(_example)], ...] = ()


def _dedupe(value: object) -> object:
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        return {"within": value}
    return value


class RuleSchema(_Schema):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=120)
    title: str = Field(min_length=1)
    when: str = Field(min_length=1)
    severity: Severity
    layer: Layer
    category: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    advice: str = Field(min_length=1)
    extract: tuple[str, ...] = ()
    threshold: ThresholdSchema | None = None
    context: ContextSchema = ContextSchema()
    dedupe: Annotated[DedupeSchema, BeforeValidator(_dedupe)] = DedupeSchema()
    symptom: bool = False
    fallback: int = Field(0, ge=0, le=3)
    examples: ExamplesSchema = ExamplesSchema()


class PackSchema(_Schema):
    pack: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    description: str = ""
    disable: tuple[str, ...] = ()
    rules: tuple[RuleSchema, ...] = ()
