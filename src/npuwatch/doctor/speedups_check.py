"""Whether this npuwatch runs its C speedups: a host on the pure-Python path parses the same
records at about 2.4 times the CPU a line, next to the training job."""

from __future__ import annotations

from npuwatch import __version__
from npuwatch.doctor.host import Host
from npuwatch.doctor.report import Check
from npuwatch.speedups import ADVICE


def speedups_check(host: Host) -> Check:
    found = host.speedups()
    facts: dict[str, object] = {
        "version": __version__,
        "speedups": found.label,
        "loaded": list(found.loaded),
        "missing": dict(found.missing),
    }
    detail = f"{__version__}, {found.summary()}"
    if found.on:
        return Check("npuwatch.speedups", "environment", "npuwatch", "ok", detail, facts=facts)
    return Check(
        "npuwatch.speedups", "environment", "npuwatch", "warn", detail, ADVICE, facts=facts
    )
