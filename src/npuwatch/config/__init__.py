"""The agent's configuration: what an operator may write in npuwatch.toml, and its defaults.

The models describe the file and nothing else; `load_config` reads it, lays environment
overrides over it and validates everything once, so that the runtime never re-checks a value.
Every problem names its source (the file or the environment variable), the key and what was
expected. `example_config` writes the whole file with every default, explained.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field

from npuwatch.config.correlate import CorrelateSection
from npuwatch.config.example import commented_toml
from npuwatch.config.loading import load_model
from npuwatch.config.sections import (
    STRICT_AND_DISCREET,
    AgentSection,
    CollectiveSection,
    DebugToolsSection,
    DevicesSection,
    JournalSection,
    ProfilingSection,
    RulesSection,
    SourcesSection,
)
from npuwatch.config.sinks import SinksSection
from npuwatch.default_paths import CONFIG_PATH, CONFIG_PATH_VARIABLE, JOURNAL_FOLDER

DEFAULT_CONFIG_PATH = CONFIG_PATH


class Config(BaseModel):
    """The whole configuration file."""

    model_config = STRICT_AND_DISCREET

    agent: AgentSection = Field(default_factory=AgentSection)
    sources: SourcesSection = Field(default_factory=SourcesSection)
    rules: RulesSection = Field(default_factory=RulesSection)
    journal: JournalSection = Field(default_factory=JournalSection)
    devices: DevicesSection = Field(default_factory=DevicesSection)
    profiling: ProfilingSection = Field(default_factory=ProfilingSection)
    debug_tools: DebugToolsSection = Field(default_factory=DebugToolsSection)
    collective: CollectiveSection = Field(default_factory=CollectiveSection)
    sinks: SinksSection = Field(default_factory=SinksSection)
    correlate: CorrelateSection = Field(default_factory=CorrelateSection)

    def journal_path(self) -> Path:
        """The journal folder: journal.path (under state_directory when relative), else
        <state_directory>/journal."""
        return self.agent.state_directory / (self.journal.path or JOURNAL_FOLDER)


_EXAMPLE_HEADER = (
    "npuwatch agent configuration, with every key at its default value.",
    "",
    "Put it at /etc/npuwatch/npuwatch.toml (or point NPUWATCH_CONFIG at it), keep only what you",
    "change, and run `npuwatch config check`. Without a file the agent runs with these defaults.",
    "Any key can also be set in the environment as NPUWATCH_<SECTION>__<KEY>, which wins over",
    "this file: NPUWATCH_JOURNAL__MAX_AGE=7d, NPUWATCH_SOURCES__ROOTS='[\"/data/log\"]'.",
    "Durations: 200ms, 10s, 5m, 1h, 30d, 1h30m. Sizes: 512, 64KiB, 1MiB, 10GiB (KB = 1000 bytes).",
)


def config_path_from(environ: Mapping[str, str]) -> Path | None:
    """The configuration file named by $NPUWATCH_CONFIG, or None when it is not set."""
    value = environ.get(CONFIG_PATH_VARIABLE)
    return Path(value) if value else None


def load_config(path: Path | None, environ: Mapping[str, str]) -> Config:
    """The validated configuration from the file at `path` and NPUWATCH_* variables in
    `environ`, which win over the file.

    With `path` None, /etc/npuwatch/npuwatch.toml is read when it exists, and the defaults are
    used when it does not. Raises ConfigUnreadable when a file cannot be read (or `path` does
    not exist), ConfigError with every problem when the configuration is wrong.
    """
    if path is None and DEFAULT_CONFIG_PATH.exists():
        path = DEFAULT_CONFIG_PATH
    return load_model(Config, path, environ)


def example_config() -> str:
    """A complete configuration file: every table and key at its default, each explained."""
    return commented_toml(Config, _EXAMPLE_HEADER)
