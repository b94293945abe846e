"""A reload (SIGHUP): the agent takes up the files it follows and its rules at once, and says,
per section of the configuration, what else changed and waits for a restart."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from npuwatch.agent.topology import SectionChange, build, changes
from npuwatch.config import Config
from tests.agent.harness import Harness, append, fast_config, plog_line, plog_path


def config_with(base: Config, **sections: dict[str, object]) -> Config:
    data = base.model_dump()
    for section, values in sections.items():
        data[section] = {**data[section], **values}
    return Config.model_validate(data)


def test_nothing_changed_is_no_change(tmp_path: Path) -> None:
    config = fast_config(tmp_path / "logs", tmp_path / "state")
    assert changes(config, config) == []


def test_roots_and_rule_packs_are_applied_and_the_rest_waits_for_a_restart(
    tmp_path: Path,
) -> None:
    old = fast_config(tmp_path / "logs", tmp_path / "state")
    new = config_with(
        old,
        sources={"roots": [str(tmp_path / "more")], "max_line_bytes": "128KiB"},
        rules={"paths": [str(tmp_path / "site.yaml")], "reload_interval": "1m"},
        devices={"interval": "1m"},
        journal={"max_age": "7d"},
    )
    assert changes(old, new) == [
        SectionChange("sources", ("roots",), applied=True),
        SectionChange("sources", ("max_line_bytes",), applied=False),
        SectionChange("rules", ("paths",), applied=True),
        SectionChange("rules", ("reload_interval",), applied=False),
        SectionChange("journal", ("max_age",), applied=False),
        SectionChange("devices", ("interval",), applied=False),
    ]


def test_a_change_in_a_sink_names_the_sink_and_its_key(tmp_path: Path) -> None:
    old = fast_config(tmp_path / "logs", tmp_path / "state")
    sinks = old.sinks.model_dump()
    sinks["elasticsearch"]["namespace"] = "train_a"
    assert changes(old, config_with(old, sinks=sinks)) == [
        SectionChange("sinks", ("elasticsearch.namespace",), applied=False)
    ]


def test_a_running_agent_follows_a_new_root_and_keeps_saying_what_needs_a_restart(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    first = [plog_line(501, n) for n in range(5)]
    append(plog_path(harness.logs, 501), first)
    agent = harness.start()
    try:
        harness.wait_for_lines(Counter(first))
        more = tmp_path / "more"
        added = [plog_line(502, n) for n in range(7)]
        append(plog_path(more, 502), added)
        started = fast_config(harness.logs, harness.state)
        widened = config_with(
            started, sources={"roots": [str(harness.logs), str(more)]}, devices={"interval": 5}
        )
        said = agent.reload(build(widened, {}))
        assert said == [
            SectionChange("sources", ("roots",), applied=True),
            SectionChange("devices", ("interval",), applied=False),
        ]
        assert harness.wait_for_lines(Counter(first + added)) == Counter(first + added)
        # A second reload with the same file: the roots are taken up already; the interval
        # still waits for a restart.
        assert agent.reload(build(widened, {})) == [
            SectionChange("devices", ("interval",), applied=False)
        ]
    finally:
        harness.stop()
