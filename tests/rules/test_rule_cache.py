"""The rule cache: the same rules as reading the packs, without YAML, pydantic or the grammar;
every edit of a pack seen; a damaged or unwritable cache never in the way."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import npuwatch
from npuwatch.default_paths import cache_folder
from npuwatch.rules import pack_file, schema
from npuwatch.rules.condition import MAX_TREE_DEPTH
from npuwatch.rules.examples import run_examples
from npuwatch.rules.loader import DEFAULT_PACKS, RuleSet, load_rules
from npuwatch.rules.model import Context, Dedupe, Example, Examples, RuleSpec, Threshold
from npuwatch.rules.pack import Pack, RuleLoadError
from npuwatch.rules.rule_cache import RuleCache
from tests.conftest import FIXTURES, parse

SITE_RULE = """\
pack: site
disable: [operations.debug-logging-left-on]
rules:
  - id: site.gpu-fan
    title: Fan failure
    when: log.level == ERROR and message contains "fan"
    severity: warning
    layer: driver
    category: device
    advice: Replace the fan.
    extract: ['fan (?P<fan>\\d+)']
    threshold: {count: 2, within: 90s, by: [process.pid]}
    dedupe: 5m
    examples:
      match: ["[ERROR] DRV(1,p):2025-01-01-00:00:00.000.000 [fan.c:1] fan 3 stopped"]
      no_match: [{text: "[INFO] DRV(1,p):2025-01-01-00:00:00.000.000 [fan.c:1] fan ok"}]
"""


def described(ruleset: RuleSet) -> list[tuple[object, ...]]:
    """Everything a rule holds but its closures, which are compared by what they do."""
    return [
        (rule.spec, rule.pack, rule.origin, rule.keys, rule.exact, rule.node, rule.patterns)
        for rule in ruleset.rules
    ]


def site_pack(folder: Path, text: str = SITE_RULE) -> Path:
    path = folder / "site.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def read_back(cache: RuleCache, path: Path) -> list[Pack] | None:
    """What the cache holds for `path` alone as it is now."""
    entry = cache.entry([path])
    assert entry is not None
    return entry.read()


def test_a_hit_gives_the_rules_reading_the_packs_gives(tmp_path: Path) -> None:
    locations = [DEFAULT_PACKS, site_pack(tmp_path)]
    cache = RuleCache(tmp_path / "cache")
    read = load_rules(locations)
    written = load_rules(locations, cache)
    assert len(list(cache.folder.glob("rules-*.json"))) == 1
    hit = load_rules(locations, cache)
    assert described(hit) == described(written) == described(read)
    assert (hit.files, hit.disabled) == (read.files, read.disabled)
    assert "operations.debug-logging-left-on" not in hit.by_id()
    # The conditions and extract patterns compiled again from the cache do what the packs say.
    assert run_examples(hit.rules) == run_examples(read.rules)
    records = parse(b"[ERROR] DRV(1,p):2025-01-01-00:00:00.000.000 [fan.c:1] fan 3 stopped\n")
    for log in sorted((FIXTURES / "trees").rglob("*.log")):
        records.extend(parse(log.read_bytes(), path=str(log)))
    for cached, fresh in zip(hit.rules, read.rules, strict=True):
        assert [cached.predicate(r) for r in records] == [fresh.predicate(r) for r in records]
        if fresh.extractor is not None:
            assert cached.extractor is not None
            assert [cached.extractor(r) for r in records] == [fresh.extractor(r) for r in records]
    assert hit.by_id()["site.gpu-fan"].extractor is not None


def test_a_hit_never_loads_yaml_pydantic_or_the_grammar(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from npuwatch.rules.loader import DEFAULT_PACKS, load_rules
        from npuwatch.rules.rule_cache import RuleCache
        ruleset = load_rules([DEFAULT_PACKS], RuleCache(Path({str(tmp_path)!r})))
        heavy = ("yaml", "pydantic", "pyparsing", "npuwatch.rules.pack_file")
        print(len(ruleset.rules), *[name in sys.modules for name in heavy])
        """
    )

    def run() -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        )
        return done.stdout.split()

    rules = str(len(load_rules([DEFAULT_PACKS]).rules))
    assert run() == [rules, "True", "True", "True", "True"]  # the miss reads the packs
    assert run() == [rules, "False", "False", "False", "False"]


def test_an_edited_pack_is_read_again(tmp_path: Path) -> None:
    cache = RuleCache(tmp_path / "cache")
    path = site_pack(tmp_path)
    assert load_rules([path], cache).rules[0].spec.title == "Fan failure"
    # Same size, written within the same clock tick: still seen, the cache compares the bytes.
    site_pack(tmp_path, SITE_RULE.replace("Fan failure", "Fan fAilure"))
    assert load_rules([path], cache).rules[0].spec.title == "Fan fAilure"
    assert load_rules([path], cache).rules[0].spec.title == "Fan fAilure"


def test_a_pack_edited_while_it_is_read_is_read_again_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamp is of the bytes before reading: an edit during the read must not be kept with
    the packs read before it."""
    cache = RuleCache(tmp_path / "cache")
    path = site_pack(tmp_path)
    load_pack = pack_file.load_pack

    def load_then_edit(pack_path: Path) -> object:
        loaded = load_pack(pack_path)
        site_pack(tmp_path, SITE_RULE.replace("Fan failure", "Fan replaced"))
        return loaded

    monkeypatch.setattr(pack_file, "load_pack", load_then_edit)
    assert load_rules([path], cache).rules[0].spec.title == "Fan failure"
    monkeypatch.undo()
    assert load_rules([path], cache).rules[0].spec.title == "Fan replaced"


def test_a_broken_pack_is_reported_every_time_and_never_cached(tmp_path: Path) -> None:
    cache = RuleCache(tmp_path / "cache")
    path = site_pack(tmp_path)
    load_rules([path], cache)
    site_pack(tmp_path, SITE_RULE.replace("log.level == ERROR and", "log.level == ERROR and and"))
    for _ in range(2):
        with pytest.raises(RuleLoadError) as error:
            load_rules([path], cache)
        (problem,) = error.value.problems
        assert str(problem).startswith(f"{path}:6:") and "in 'when'" in str(problem)


def test_a_damaged_cache_file_is_a_miss(tmp_path: Path) -> None:
    cache = RuleCache(tmp_path / "cache")
    path = site_pack(tmp_path)
    load_rules([path], cache)
    (kept,) = cache.folder.glob("rules-*.json")
    for damage in (b"", b"not a cache file", kept.read_bytes()[:100]):
        kept.write_bytes(damage)
        assert read_back(cache, path) is None
        assert [rule.id for rule in load_rules([path], cache).rules] == ["site.gpu-fan"]
        assert read_back(cache, path) is not None  # written again


def test_a_cache_that_cannot_be_written_is_left_alone(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    path = site_pack(tmp_path)
    cache = RuleCache(blocker / "cache")
    assert [rule.id for rule in load_rules([path], cache).rules] == ["site.gpu-fan"]
    assert cache.entry([path]) is None  # not a folder: no cache at all
    if os.geteuid() != 0:  # root writes anywhere
        folder = tmp_path / "read-only"
        folder.mkdir(mode=0o500)
        assert load_rules([path], RuleCache(folder)).rules[0].id == "site.gpu-fan"
        assert list(folder.iterdir()) == []


def test_each_set_of_packs_has_its_own_file(tmp_path: Path) -> None:
    cache = RuleCache(tmp_path / "cache")
    path = site_pack(tmp_path)
    alone = load_rules([path], cache)
    with_defaults = load_rules([DEFAULT_PACKS, path], cache)
    assert len(list(cache.folder.glob("rules-*.json"))) == 2
    assert len(load_rules([path], cache).rules) == len(alone.rules) == 1
    assert len(load_rules([DEFAULT_PACKS, path], cache).rules) == len(with_defaults.rules)


def test_where_the_cache_is_kept() -> None:
    assert cache_folder({"NPUWATCH_CACHE": "/x/c", "HOME": "/h"}) == Path("/x/c")
    assert cache_folder({"NPUWATCH_CACHE": "", "HOME": "/h"}) is None
    assert cache_folder({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/npuwatch")
    assert cache_folder({"HOME": "/h"}) == Path("/h/.cache/npuwatch")
    assert cache_folder({}) is None


@pytest.mark.parametrize(
    ("plain", "validated"),
    [
        (RuleSpec, schema.RuleSchema),
        (Threshold, schema.ThresholdSchema),
        (Context, schema.ContextSchema),
        (Dedupe, schema.DedupeSchema),
        (Example, schema.ExampleSchema),
        (Examples, schema.ExamplesSchema),
    ],
)
def test_the_schema_and_the_plain_specs_have_the_same_fields_and_defaults(
    plain: type, validated: type[schema.BaseModel]
) -> None:
    fields = dataclasses.fields(plain)
    assert [f.name for f in fields] == list(validated.model_fields)
    for item in fields:
        default = validated.model_fields[item.name].get_default()
        if item.default is dataclasses.MISSING:
            assert validated.model_fields[item.name].is_required()
        elif isinstance(default, schema.BaseModel):
            assert dataclasses.asdict(item.default) == default.model_dump()
        else:
            assert item.default == default


def test_the_folder_is_made_0700_and_the_file_0600_whatever_the_umask(tmp_path: Path) -> None:
    cache = RuleCache(tmp_path / "made" / "cache")
    pack = site_pack(tmp_path)  # written under the usual umask: a pack others may change is refused
    previous = os.umask(0)
    try:
        load_rules([pack], cache)
    finally:
        os.umask(previous)
    (kept,) = cache.folder.glob("rules-*.json")
    assert stat.S_IMODE(cache.folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "made").stat().st_mode) == 0o700
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert kept.read_bytes().startswith(b"npuwatch-rule-cache 1 ")


def test_a_folder_others_can_write_is_not_used_and_said_once(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    said: list[str] = []
    cache = RuleCache(folder, warn=said.append)
    path = site_pack(tmp_path)
    for _ in range(3):
        assert [rule.id for rule in load_rules([path], cache).rules] == ["site.gpu-fan"]
    assert list(folder.iterdir()) == []
    assert said == [
        f"the rule cache in {folder} is not used: {folder} is writable by others (mode 777) "
        "(set NPUWATCH_CACHE to a folder of your own, or to nothing)"
    ]


def test_a_cache_file_that_is_a_link_or_another_users_is_a_miss(tmp_path: Path) -> None:
    cache = RuleCache(tmp_path / "cache")
    path = site_pack(tmp_path)
    load_rules([path], cache)
    (kept,) = cache.folder.glob("rules-*.json")
    elsewhere = tmp_path / "elsewhere.json"
    kept.rename(elsewhere)
    kept.symlink_to(elsewhere)
    assert read_back(cache, path) is None
    kept.unlink()
    elsewhere.rename(kept)
    assert read_back(cache, path) is not None
    kept.chmod(0o622)
    assert read_back(cache, path) is None
    kept.chmod(0o600)
    if os.geteuid() == 0:  # only root can give a file away
        os.chown(kept, 65534, 65534)
        assert read_back(cache, path) is None


def test_every_damaged_or_forged_cache_file_is_a_miss(tmp_path: Path) -> None:
    cache = RuleCache(tmp_path / "cache")
    path = site_pack(tmp_path)
    load_rules([path], cache)
    (kept,) = cache.folder.glob("rules-*.json")
    header, body = kept.read_bytes().split(b"\n", 1)
    good = json.loads(body)
    condition = good["packs"][0]["rules"][0]["condition"]

    def forged(change: Callable[[Any], None]) -> bytes:
        document = json.loads(body)
        change(document)
        return header + b"\n" + json.dumps(document).encode()

    def rule(document: Any) -> Any:
        return document["packs"][0]["rules"][0]

    damages = [
        header.replace(b" 1 ", b" 1 0") + b"\n" + body,  # another stamp
        header + b"\n" + b"[" * 100_000 + b"]" * 100_000,  # nested past json's recursion limit
        header + b"\n" + body[:-40],
        forged(lambda d: d["packs"].append(d["packs"][0])),  # more packs than files
        forged(lambda d: rule(d)["spec"].update(fallback=True)),
        forged(lambda d: rule(d)["spec"].update(severity="meh")),
        forged(lambda d: rule(d)["spec"]["threshold"].update(count=0)),
        forged(lambda d: rule(d)["spec"]["dedupe"].update(within=float("inf"))),
        forged(lambda d: rule(d).update(condition=[["not", 0, 0]])),  # a node inside itself
        forged(lambda d: rule(d).update(condition=[*condition, ["and", [5, 0], 0]])),
        forged(lambda d: rule(d).update(condition=[["cmp", "message", "eval", ["x"], "", 0]])),
        forged(lambda d: rule(d).update(condition=[["cmp", "message", "~", ["(a"], "", 0]])),
        forged(
            lambda d: rule(d).update(
                condition=[condition[0], *(["not", n, 0] for n in range(MAX_TREE_DEPTH + 1))]
            )
        ),
    ]
    for damage in damages:
        kept.write_bytes(damage)
        assert read_back(cache, path) is None, damage[:200]
        assert [rule.id for rule in load_rules([path], cache).rules] == ["site.gpu-fan"]
        assert read_back(cache, path) is not None  # written again


def test_nothing_in_npuwatch_imports_a_serialiser_that_runs_code() -> None:
    runs_code = re.compile(r"^\s*(import|from)\s+(pickle|_pickle|marshal|shelve|dill)\b", re.M)
    sources = sorted(Path(npuwatch.__file__).parent.rglob("*.py"))
    assert len(sources) > 100
    assert [p for p in sources if runs_code.search(p.read_text(encoding="utf-8"))] == []
