"""How long the fuzz properties run: a small budget in the normal test run, a long one on demand.

The normal run (CI, a contributor's `pytest`) gives every property a few dozen examples, a few
minutes for the whole of tests/fuzz on two cores. `NPUWATCH_FUZZ=long` (what bench/fuzz.sh sets)
multiplies every budget by LONG_FACTOR. `NPUWATCH_FUZZ=explore` is the long budget without the
explicit examples (the reproducers of defects already known), to see what the generated inputs
find beyond them. Either way a failure prints the falsifying example and a
`@reproduce_failure` blob (print_blob), and Hypothesis keeps the example in its database, so the
next run tries it first.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

LONG_FACTOR = 40
"""Examples of the long run for each example of the normal one."""

_KNOWN = ("ci", "long", "explore")
BUDGET = os.environ.get("NPUWATCH_FUZZ", "ci") or "ci"
if BUDGET not in _KNOWN:
    raise RuntimeError(f"NPUWATCH_FUZZ={BUDGET!r}: use one of {', '.join(_KNOWN)}")

settings.register_profile(
    "npuwatch-fuzz",
    deadline=None,  # a hang is caught by hang_guard, and a slow example is no failure
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,  # each example may start a command or write a tree
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,  # tmp_path is used as a parent, never reused
    ],
)


def fuzz_settings(examples: int) -> settings:
    """The settings of a property that runs `examples` examples in the normal run."""
    profile = settings.get_profile("npuwatch-fuzz")
    if BUDGET == "ci":
        return settings(profile, max_examples=examples)
    phases = list(Phase) if BUDGET == "long" else [p for p in Phase if p is not Phase.explicit]
    return settings(profile, max_examples=examples * LONG_FACTOR, phases=phases)
