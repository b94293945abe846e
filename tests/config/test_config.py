"""The agent configuration: defaults, the TOML file, NPUWATCH_* overrides and their errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

import npuwatch.config
from npuwatch.config import Config, config_path_from, example_config, load_config
from npuwatch.config.loading import ConfigError, ConfigUnreadable
from npuwatch.config.sections import AgentSection, JournalSection, RulesSection, SourcesSection
from npuwatch.config.sinks import ConsoleSinkSection, PrometheusSinkSection, SearchSinkSection
from npuwatch.config.values import ByteSize, Duration
from npuwatch.quantities import format_bytes, format_duration

NO_ENVIRONMENT: dict[str, str] = {}


class Quantities(BaseModel):
    model_config = ConfigDict(extra="forbid")

    duration: Duration = 0.0
    size: ByteSize = 0


@pytest.fixture
def no_default_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(npuwatch.config, "DEFAULT_CONFIG_PATH", tmp_path / "absent.toml")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "npuwatch.toml"
    path.write_text(text, encoding="utf-8")
    return path


def problem_lines(path: Path | None, environ: dict[str, str]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ)
    return [str(problem) for problem in caught.value.problems]


@pytest.mark.usefixtures("no_default_file")
def test_without_a_file_the_agent_runs_with_the_defaults() -> None:
    config = load_config(None, NO_ENVIRONMENT)
    assert config == Config()
    assert config.agent.state_directory == Path("/var/lib/npuwatch")
    assert config.sources.include == ["*.log", "*.log.*", "slogdlog*"]
    assert config.journal.commit_interval == 0.5
    assert config.journal.max_bytes == 10 * 1024**3
    assert config.sinks.console.enabled is False


def test_without_a_path_the_default_file_is_read_when_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        npuwatch.config, "DEFAULT_CONFIG_PATH", write(tmp_path, "[journal]\nsync = 'normal'\n")
    )
    assert load_config(None, NO_ENVIRONMENT).journal.sync == "normal"


def test_a_path_given_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(ConfigUnreadable) as caught:
        load_config(missing, NO_ENVIRONMENT)
    assert str(caught.value) == f"{missing}: no such file"


def test_every_key_of_a_full_file_is_read(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[agent]
host_name = "node-7"
state_directory = "/srv/npuwatch"
drain_timeout = "45s"
timezone = "Asia/Shanghai"

[sources]
roots = ["/data/log", "/var/log/npu/slog"]
users = ["root", "hpc"]
include = ["*.log"]
exclude = ["debug/*"]
watch = false
rescan_interval = "1m"
idle_flush = 2
idle_close = "2m"
deleted_grace = "10s"
max_open_files = 64
read_chunk_bytes = "256KiB"
max_line_bytes = "16KiB"
max_record_lines = 200
max_record_bytes = "512KiB"
fingerprint_bytes = 1024
queue_bytes = "32MiB"

[rules]
builtin = false
paths = ["/etc/npuwatch/rules.d"]
reload_interval = "30s"

[journal]
path = "/data/journal"
max_age = "7d"
max_bytes = "2GiB"
segment_bytes = "64MiB"
commit_interval = "1s"
sync = "normal"

[sinks.console]
enabled = true
format = "json"
events_only = true
""",
    )
    config = load_config(path, NO_ENVIRONMENT)
    assert config.agent.host_name == "node-7"
    assert config.agent.drain_timeout == 45
    assert config.agent.timezone == "Asia/Shanghai"
    assert config.sources.roots == [Path("/data/log"), Path("/var/log/npu/slog")]
    assert config.sources.users == ["root", "hpc"]
    assert config.sources.exclude == ["debug/*"]
    assert config.sources.watch is False
    assert config.sources.rescan_interval == 60
    assert config.sources.idle_flush == 2
    assert config.sources.read_chunk_bytes == 256 * 1024
    assert config.sources.fingerprint_bytes == 1024
    assert config.sources.queue_bytes == 32 * 1024**2
    assert config.rules.builtin is False
    assert config.rules.paths == [Path("/etc/npuwatch/rules.d")]
    assert config.journal.max_age == 7 * 86400
    assert config.journal.segment_bytes == 64 * 1024**2
    assert config.journal.sync == "normal"
    assert config.sinks.console.format == "json"
    assert config.sinks.console.events_only is True
    assert config.journal_path() == Path("/data/journal")


def test_the_journal_lives_in_the_state_directory_unless_placed_elsewhere() -> None:
    assert Config().journal_path() == Path("/var/lib/npuwatch/journal")
    relative = Config.model_validate({"journal": {"path": "j"}})
    assert relative.journal_path() == Path("/var/lib/npuwatch/j")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (10, 10.0),
        (2.5, 2.5),
        ("45", 45.0),
        ("200ms", 0.2),
        ("10s", 10.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("30d", 2_592_000.0),
        ("1h30m", 5400.0),
        ("1s500ms", 1.5),
        (" 2M ", 120.0),
    ],
)
def test_durations_are_seconds_or_numbers_with_units(text: object, seconds: float) -> None:
    assert Quantities.model_validate({"duration": text}).duration == seconds


@pytest.mark.parametrize("text", ["soon", "10 parsecs", "-5s", -1, "1h30", "", True])
def test_a_wrong_duration_says_which_forms_are_accepted(text: object) -> None:
    with pytest.raises(ValidationError, match="expected a duration such as 10s, 5m, 1h or 30d"):
        Quantities.model_validate({"duration": text})


@pytest.mark.parametrize(
    ("text", "size"),
    [
        (512, 512),
        ("512", 512),
        ("100B", 100),
        ("64KiB", 64 * 1024),
        ("64KB", 64_000),
        ("64kb", 64_000),
        ("1MiB", 1024**2),
        ("2MB", 2_000_000),
        ("10GiB", 10 * 1024**3),
        ("1 GiB", 1024**3),
        ("3GB", 3_000_000_000),
        ("1TiB", 1024**4),
        ("1tb", 1000**4),
        ("1.5KiB", 1536),
        ("1.1TB", 1_100_000_000_000),
    ],
)
def test_sizes_are_bytes_or_numbers_with_units(text: object, size: int) -> None:
    assert Quantities.model_validate({"size": text}).size == size


@pytest.mark.parametrize("text", ["lots", "64 KiBs", "-1", -1, "1.5", "KiB", 2.5, False])
def test_a_wrong_size_says_which_forms_are_accepted(text: object) -> None:
    with pytest.raises(ValidationError, match=r"expected a size in bytes such as 512, 64KiB"):
        Quantities.model_validate({"size": text})


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.2, "200ms"), (10, "10s"), (60, "1m"), (5400, "1h30m"), (2_592_000, "30d"), (0, "0s")],
)
def test_durations_are_written_in_their_short_form(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert Quantities.model_validate({"duration": text}).duration == seconds


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (512, "512B"),
        (64 * 1024, "64KiB"),
        (1024**2, "1MiB"),
        (10 * 1024**3, "10GiB"),
        (64_000, "64KB"),
    ],
)
def test_sizes_are_written_in_their_short_form(size: int, text: str) -> None:
    assert format_bytes(size) == text
    assert Quantities.model_validate({"size": text}).size == size


def test_a_wrong_value_in_the_file_names_the_file_the_key_and_what_was_expected(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, '[journal]\nmax_age = "soon"\n')
    assert problem_lines(path, NO_ENVIRONMENT) == [
        f"{path}: journal.max_age: expected a duration such as 10s, 5m, 1h or 30d, got 'soon'"
    ]


def test_every_problem_of_the_file_is_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[journal]\nsync = "fast"\nmax_bytes = "lots"\n[agent]\ntimezone = "Mars/Olympus"\n',
    )
    lines = problem_lines(path, NO_ENVIRONMENT)
    assert len(lines) == 3
    assert f"{path}: journal.sync: input should be 'full' or 'normal', got 'fast'" in lines
    assert any(
        line.startswith(f"{path}: journal.max_bytes: expected a size in bytes") for line in lines
    )
    assert any(
        line.startswith(f"{path}: agent.timezone: unknown time zone 'Mars/Olympus'")
        for line in lines
    )


def test_an_unknown_key_in_the_file_lists_the_known_keys(tmp_path: Path) -> None:
    path = write(tmp_path, '[sources]\nrootz = ["/data/log"]\n')
    [line] = problem_lines(path, NO_ENVIRONMENT)
    assert line.startswith(
        f"{path}: sources.rootz: unknown key (known keys: roots, users, include, "
    )


def test_an_unknown_section_in_the_file_lists_the_sections(tmp_path: Path) -> None:
    path = write(tmp_path, "[sink.console]\nenabled = true\n")
    assert problem_lines(path, NO_ENVIRONMENT) == [
        f"{path}: sink: unknown key (known keys: agent, sources, rules, journal, devices, profiling, debug_tools, collective, sinks, correlate)"
    ]


def test_a_limit_below_its_minimum_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, '[sources]\nread_chunk_bytes = "1KiB"\nfingerprint_bytes = 8\n')
    lines = problem_lines(path, NO_ENVIRONMENT)
    assert lines == [
        f"{path}: sources.read_chunk_bytes: expected a size at least 4KiB and at most 64MiB, "
        "got '1KiB'",
        f"{path}: sources.fingerprint_bytes: expected a number at least 16 and at most 4096, got 8",
    ]


def test_a_toml_syntax_error_names_the_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "[journal]\nmax_age = \n")
    assert problem_lines(path, NO_ENVIRONMENT) == [f"{path}:2:11: invalid TOML: invalid value"]


def test_a_toml_error_at_the_end_of_the_file_names_its_last_line(tmp_path: Path) -> None:
    path = write(tmp_path, '[journal]\nmax_age = "7d')
    [line] = problem_lines(path, NO_ENVIRONMENT)
    assert line.startswith(f"{path}:2:")
    assert "invalid TOML: " in line


def test_a_file_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[agent]\nhost_name = "n\xe9"\n')
    [line] = problem_lines(path, NO_ENVIRONMENT)
    assert line.startswith(f"{path}: not UTF-8 text")


def test_environment_overrides_win_over_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[journal]\nmax_age = "30d"\nsync = "normal"\n')
    config = load_config(path, {"NPUWATCH_JOURNAL__MAX_AGE": "7d"})
    assert config.journal.max_age == 7 * 86400
    assert config.journal.sync == "normal"


@pytest.mark.usefixtures("no_default_file")
def test_environment_values_are_read_as_toml_values_when_they_are_ones() -> None:
    config = load_config(
        None,
        {
            "NPUWATCH_SINKS__CONSOLE__ENABLED": "true",
            "NPUWATCH_SOURCES__ROOTS": '["/data/log", "/srv/log"]',
            "NPUWATCH_SOURCES__MAX_OPEN_FILES": "12",
            "NPUWATCH_AGENT__HOST_NAME": '"1234"',
            "NPUWATCH_AGENT__TIMEZONE": "Asia/Shanghai",
        },
    )
    assert config.sinks.console.enabled is True
    assert config.sources.roots == [Path("/data/log"), Path("/srv/log")]
    assert config.sources.max_open_files == 12
    assert config.agent.host_name == "1234"
    assert config.agent.timezone == "Asia/Shanghai"


@pytest.mark.usefixtures("no_default_file")
def test_environment_names_are_case_insensitive() -> None:
    config = load_config(None, {"npuwatch_journal__sync": "normal"})
    assert config.journal.sync == "normal"


@pytest.mark.usefixtures("no_default_file")
def test_environment_variables_without_levels_are_not_settings() -> None:
    environ = {"NPUWATCH_CONFIG": "/etc/other.toml", "NPUWATCH_DEBUG": "1", "PATH": "/bin"}
    assert load_config(None, environ) == Config()


def test_an_unknown_key_from_the_environment_names_the_variable(tmp_path: Path) -> None:
    path = write(tmp_path, "[sources]\nwatch = false\n")
    [line] = problem_lines(path, {"NPUWATCH_SOURCES__ROOTZ": "/data/log"})
    assert line.startswith(
        "environment NPUWATCH_SOURCES__ROOTZ: sources.rootz: unknown key (known keys: roots, "
    )


@pytest.mark.usefixtures("no_default_file")
def test_an_unknown_section_from_the_environment_names_the_variable() -> None:
    assert problem_lines(None, {"NPUWATCH_SOURCEZ__ROOTS": "/data/log"}) == [
        "environment NPUWATCH_SOURCEZ__ROOTS: sourcez: unknown key "
        "(known keys: agent, sources, rules, journal, devices, profiling, debug_tools, collective, sinks, correlate)"
    ]


def test_a_wrong_value_from_the_environment_names_the_variable_not_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[journal]\nmax_age = "30d"\n')
    assert problem_lines(path, {"NPUWATCH_JOURNAL__MAX_AGE": "soon"}) == [
        "environment NPUWATCH_JOURNAL__MAX_AGE: journal.max_age: "
        "expected a duration such as 10s, 5m, 1h or 30d, got 'soon'"
    ]


@pytest.mark.usefixtures("no_default_file")
def test_text_that_reads_as_a_number_explains_how_to_quote_it() -> None:
    [line] = problem_lines(None, {"NPUWATCH_AGENT__HOST_NAME": "1234"})
    assert line.startswith(
        "environment NPUWATCH_AGENT__HOST_NAME: agent.host_name: input should be a valid string, got 1234"
    )
    assert "quote it: NPUWATCH_AGENT__HOST_NAME='\"...\"'" in line


@pytest.mark.usefixtures("no_default_file")
def test_an_environment_name_with_an_empty_level_is_an_error() -> None:
    [line] = problem_lines(None, {"NPUWATCH_JOURNAL____MAX_AGE": "7d"})
    assert line.startswith("environment NPUWATCH_JOURNAL____MAX_AGE: not a setting name")


def test_a_variable_cannot_reach_inside_a_value_of_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[journal]\nmax_age = "30d"\n')
    assert problem_lines(path, {"NPUWATCH_JOURNAL__MAX_AGE__DAYS": "7"}) == [
        "environment NPUWATCH_JOURNAL__MAX_AGE__DAYS: journal.max_age.days: "
        "journal.max_age is a value in the file, not a table"
    ]


def test_the_config_path_comes_from_npuwatch_config() -> None:
    assert config_path_from({"NPUWATCH_CONFIG": "/srv/npuwatch.toml"}) == Path("/srv/npuwatch.toml")
    assert config_path_from({}) is None
    assert config_path_from({"NPUWATCH_CONFIG": ""}) is None


def test_the_configuration_cannot_be_changed_once_loaded() -> None:
    config = Config()
    with pytest.raises(ValidationError):
        config.journal.sync = "normal"  # type: ignore[misc]


def test_the_example_loads_to_exactly_the_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, example_config())
    assert load_config(path, NO_ENVIRONMENT) == Config()


def test_every_key_of_the_example_has_a_comment_line_above_it() -> None:
    lines = example_config().splitlines()
    keys = [i for i, line in enumerate(lines) if line and not line.startswith(("#", "["))]
    assert len(keys) >= 30
    for index in keys:
        assert lines[index - 1].startswith("# "), f"{lines[index]!r} is not explained"


def test_the_example_writes_every_key_and_comments_out_only_the_unset_ones() -> None:
    text = example_config()
    sections = (
        AgentSection,
        SourcesSection,
        RulesSection,
        JournalSection,
        ConsoleSinkSection,
        SearchSinkSection,
        PrometheusSinkSection,
    )
    for section in sections:
        for name in section.model_fields:
            assert re.search(rf"^(# )?{name} = ", text, re.MULTILINE), name
    unset = {
        "host_name",
        "path",
        "ca_file",
        "api_key_file",
        "username",
        "password_file",
        "dead_letter_file",
        "web_config_file",
    }
    assert set(re.findall(r"^# (\w+) = ", text, re.MULTILINE)) == unset
    assert '\n# path = "/var/lib/npuwatch/journal"\n' in text
    assert '\ncommit_interval = "500ms"\n' in text
    assert '\nmax_bytes = "10GiB"\n' in text


# --- no password in a search-engine URL ------------------------------------------------------

SECRET = "pw-7f3a"
URLS_WITH_A_PASSWORD = {
    "user and password": f"https://opsuser:{SECRET}@es-1.example:9200",
    "a slash in the password": f"https://opsuser:{SECRET}/x@es-1.example:9200",
    "an @ in the password": f"https://opsuser:{SECRET}@x@es-1.example:9200",
    "a # in the password": f"https://opsuser:{SECRET}#x@es-1.example:9200",
    "a ? in the password": f"https://opsuser:{SECRET}?x@es-1.example:9200",
    "no scheme": f"opsuser:{SECRET}@es-1.example:9200",
    "a :// in the password, no scheme": f"opsuser:{SECRET}://x@es-1.example:9200",
    "http": f"http://opsuser:{SECRET}@es-1.example:9200",
}


@pytest.mark.parametrize("case", sorted(URLS_WITH_A_PASSWORD))
def test_a_password_in_a_hosts_url_is_refused_without_being_repeated(
    tmp_path: Path, case: str
) -> None:
    url = URLS_WITH_A_PASSWORD[case]
    path = write(tmp_path, f'[sinks.elasticsearch]\nhosts = ["https://es-0:9200", "{url}"]\n')
    [line] = problem_lines(path, NO_ENVIRONMENT)
    assert line.startswith(f"{path}: sinks.elasticsearch.hosts: ")
    assert "***@" in line
    assert "es-1.example:9200: a user name or password in the URL is refused" in line
    assert "`username`" in line and "`password_file`" in line and "NPUWATCH_ES_PASSWORD" in line
    assert SECRET not in line and "opsuser" not in line


def test_a_user_name_alone_in_a_hosts_url_is_refused_too(tmp_path: Path) -> None:
    path = write(tmp_path, '[sinks.elasticsearch]\nhosts = ["https://opsuser@es-1:9200"]\n')
    [line] = problem_lines(path, NO_ENVIRONMENT)
    assert "https://***@es-1:9200: a user name or password in the URL is refused" in line


@pytest.mark.parametrize(
    "value",
    [
        f'["https://opsuser:{SECRET}@es-1:9200"]',
        f'"https://opsuser:{SECRET}@es-1:9200"',  # not even a list: still not repeated
    ],
)
def test_a_password_in_hosts_from_the_environment_is_refused_without_being_repeated(
    value: str,
) -> None:
    variable = "NPUWATCH_SINKS__ELASTICSEARCH__HOSTS"
    [line] = problem_lines(None, {variable: value})
    assert line.startswith(f"environment {variable}: sinks.elasticsearch.hosts: https://***@es-1")
    assert SECRET not in line


@pytest.mark.parametrize(
    "hosts",
    [
        [f"https://opsuser:{SECRET}@es-1:9200"],
        f"https://opsuser:{SECRET}@es-1:9200",
        [{"url": f"https://opsuser:{SECRET}@es-1:9200"}],
        [9200, f"https://opsuser:{SECRET}@es-1:9200"],
    ],
)
def test_the_validation_error_itself_holds_no_password_whatever_the_shape(hosts: object) -> None:
    for model, data in (
        (SearchSinkSection, {"hosts": hosts}),
        (Config, {"sinks": {"elasticsearch": {"hosts": hosts}}}),
    ):
        with pytest.raises(ValidationError) as caught:
            model.model_validate(data)
        assert SECRET not in str(caught.value)
        assert SECRET not in repr(caught.value)
        assert SECRET not in str([e["msg"] for e in caught.value.errors()])


def test_urls_without_a_user_are_accepted_as_they_are() -> None:
    hosts = ["https://es-1.example:9200", "http://10.0.0.7:9200/prefix", "https://[::1]:9200"]
    assert SearchSinkSection.model_validate({"hosts": hosts}).hosts == hosts
