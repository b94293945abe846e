"""A process's lives: folded as facts arrive, the same as folding everything at once."""

from __future__ import annotations

import random

from npuwatch.correlation.lives import ProcessLog
from npuwatch.correlation.processes import ProcessView
from npuwatch.parsers.hccl.model import CollectiveEvent, Extracted, Fact, ProcessKey

T0 = 1_765_400_000_000_000  # µs
S = 1_000_000
KEY = ProcessKey("host-a", 100)


def log_of(items: list[Extracted]) -> ProcessLog:
    log = ProcessLog(KEY.host, KEY.pid)
    for item in items:
        if isinstance(item, Fact):
            log.add_fact(item)
        else:
            log.add_event(item)
    return log


def summary(views: list[ProcessView]) -> list[object]:
    return [
        (
            view.key,
            view.values,
            {name: vars(m) for name, m in view.memberships.items()},
            view.first_us,
            view.last_us,
            view.resumed,
            [(e.kind, e.time_us, e.tag) for e in view.events],
            view.dropped,
            view.problems,
        )
        for view in views
    ]


def random_items(rng: random.Random) -> list[Extracted]:
    items: list[Extracted] = []
    for index in range(rng.randint(1, 30)):
        time_us = None if rng.random() < 0.1 else T0 + rng.randint(0, 60) * rng.choice([1, 30]) * S
        roll = rng.random()
        if roll < 0.4:
            name = rng.choice(["phy_device", "logic_device", "device_ip", "exec_timeout_s"])
            value = rng.choice([0, 1, -1, "192.168.1.1", "192.168.1.2", 300.0])
            items.append(Fact(KEY, name, value, time_us))
        elif roll < 0.6:
            name = rng.choice(["rank", "rank_count", "root"])
            value = rng.choice([0, 3, 8, -2, True])
            items.append(Fact(KEY, name, value, time_us, rng.choice(["world", "tp0", None])))
        elif roll < 0.7 and time_us is not None:
            items.append(Fact(KEY, "hccl_env", rng.choice(["HCCL_EXEC_TIMEOUT", "X"]), time_us))
        elif roll < 0.75 and time_us is not None:
            items.append(Fact(KEY, "resumed", True, time_us))
        elif roll < 0.85:
            items.append(Fact(KEY, "heard", T0 + rng.randint(0, 1800) * S, None))
        elif roll < 0.9:
            items.append(Fact(KEY, "events_dropped", 2, None))
        else:
            items.append(CollectiveEvent("notify", KEY, time_us, tag=f"op{index}"))
    if rng.random() < 0.5:  # most logs are read in time order
        items.sort(key=lambda item: (item.time_us is None, item.time_us or 0))
    return items


def in_time_order(items: list[Extracted]) -> list[Extracted]:
    """The facts sorted by time (those without one last), then the events as they came."""
    facts = [item for item in items if isinstance(item, Fact)]
    facts.sort(key=lambda fact: (fact.time_us is None, fact.time_us or 0))
    return [*facts, *(item for item in items if not isinstance(item, Fact))]


def test_lives_asked_for_while_facts_arrive_are_those_of_everything_folded_in_time_order() -> None:
    for seed in range(300):
        rng = random.Random(seed)
        items = random_items(rng)
        log = ProcessLog(KEY.host, KEY.pid)
        for count, item in enumerate(items, 1):
            if isinstance(item, Fact):
                log.add_fact(item)
            else:
                log.add_event(item)
            if rng.random() < 0.3 or count == len(items):
                expected = log_of(in_time_order(items[:count])).lives()
                assert summary(log.lives()) == summary(expected), seed


def test_a_restart_that_arrives_after_a_verdict_cuts_the_process_into_two_lives() -> None:
    log = log_of(
        [
            Fact(KEY, "hccl_env", "HCCL_EXEC_TIMEOUT", T0),
            Fact(KEY, "phy_device", 3, T0 + S),
            Fact(KEY, "rank", 3, T0 + S, "world"),
            Fact(KEY, "rank", 5, T0 + 900 * S, "world"),
        ]
    )
    assert [view.memberships["world"].rank for view in log.lives()] == [5]
    log.add_fact(Fact(KEY, "hccl_env", "HCCL_EXEC_TIMEOUT", T0 + 600 * S))
    lives = log.lives()
    assert [(view.key.incarnation, view.memberships["world"].rank) for view in lives] == [
        (0, 3),
        (1, 5),
    ]
    assert "phy_device" not in lives[1].values  # a restart keeps nothing of the life before


def test_a_fact_older_than_those_folded_takes_its_place_in_time() -> None:
    log = log_of([Fact(KEY, "device_ip", "192.168.1.2", T0 + 60 * S)])
    assert log.lives()[0].values["device_ip"] == "192.168.1.2"
    log.add_fact(Fact(KEY, "device_ip", "192.168.1.1", T0))  # from a file read later
    (view,) = log.lives()
    assert view.values["device_ip"] == "192.168.1.2"
    assert view.first_us == T0
