"""Faults that no HCCL line opened: ranks of a job that logged errors and stopped.

A rank whose AI Core raised an exception, or whose process died on a runtime error, often
takes the job down before any HCCL timeout can fire: the launcher stops every rank seconds
later, and no collective failure line is ever written. FaultDiag calls this "errors but no
timeout" (101, CORRELATION.md §1.6 step 5) and blames every device with an error.

An ERROR alone is not a fault, though: healthy jobs log ERRORs that change nothing. So a rank's
errors open a fault only when they were its last words: the rank belongs to a communicator
with other ranks in the input, no HCCL event put it in a fault already, and it was not heard
of more than a grace after its last burst of errors began. Ranks whose last errors began
within one execution timeout of each other are one fault (beyond it, HCCL would have reported
a timeout if the job had still been waiting).

Only where the input is complete (a collection, journals read after the fact): a live stream
cannot tell a rank that died from one that is merely quiet, as every healthy rank is at CANN's
default log level (ERROR), so the cluster service never opens these faults (Correlator's
`input_is_complete`).
"""

from __future__ import annotations

from collections import Counter

from npuwatch.correlation.prepare import GRACE_S, Ev, Prepared


def error_faults(prepared: Prepared, faults: list[list[Ev]]) -> list[list[Ev]]:
    """The faults of ranks that stopped after their errors, outside every fault of `faults`."""
    in_faults = {ev.process for fault in faults for ev in fault}
    spans = _spans(faults)
    shared = _shared_communicators(prepared)
    stopped: list[Ev] = []
    for key, first in prepared.errors.items():
        view = prepared.views.get(key)
        if key in in_faults or view is None or first.time_us is None:
            continue
        communicators = [c for c in view.memberships if c is not None and shared[c] > 1]
        last_error = prepared.errors_until.get(key, first.time_us)
        if not communicators or (view.last_us or 0) > last_error + int(GRACE_S * 1e6):
            continue
        window = int((prepared.timeout_s(key, "notify") + GRACE_S) * 1e6)
        if any(
            start - window <= first.time_us <= end + window
            for communicator in communicators
            for start, end in spans.get(communicator, ())
        ):
            continue  # the errors are part of that fault's story (its first error, say)
        widest = max(communicators, key=lambda c: shared[c])
        stopped.append(first._replace(communicator=widest))
    if not stopped:
        return []
    stopped.sort(key=lambda ev: (ev.time_us or 0, ev.process))
    out: list[list[Ev]] = [[stopped[0]]]
    for ev in stopped[1:]:
        window = int(prepared.timeout_s(ev.process, "notify") * 1e6)
        if (ev.time_us or 0) - (out[-1][0].time_us or 0) > window:
            out.append([])
        out[-1].append(ev)
    return [_one_communicator(fault) for fault in out]


def _spans(faults: list[list[Ev]]) -> dict[str | None, list[tuple[int, int]]]:
    """When each communicator's faults began and ended."""
    spans: dict[str | None, list[tuple[int, int]]] = {}
    for fault in faults:
        times = [ev.time_us for ev in fault if ev.time_us is not None]
        if times:
            for communicator in {ev.communicator for ev in fault}:
                spans.setdefault(communicator, []).append((min(times), max(times)))
    return spans


def _shared_communicators(prepared: Prepared) -> Counter[str | None]:
    """How many processes of the input are members of each communicator (two or more: a job
    of ranks)."""
    return Counter(
        communicator for view in prepared.views.values() for communicator in view.memberships
    )


def _one_communicator(fault: list[Ev]) -> list[Ev]:
    """The fault's events (one a rank: `prepared.errors` holds each rank's first) under the
    communicator most of its ranks share (a rank is in a world group and in smaller ones)."""
    common: Counter[str | None] = Counter(ev.communicator for ev in fault)
    communicator = common.most_common(1)[0][0]
    return [ev._replace(communicator=communicator) for ev in fault]
