"""The cluster correlator's section of the configuration."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from npuwatch.config.sections import STRICT
from npuwatch.config.values import Duration
from npuwatch.setting_values import listen_address


class CorrelateSection(BaseModel):
    """The cluster correlator, `npuwatch correlate` (one or two a cluster, not every host).

    It reads the agents' topology facts, collective events and heartbeats from the search
    engine of [sinks.elasticsearch] (its flavour, hosts, namespace and credentials; `enabled`
    there is the agent's) and writes incidents to logs-ascend.incidents-<namespace>."""

    model_config = STRICT

    poll_interval: Duration = Field(
        default=5.0,
        gt=0,
        le=3600.0,
        description="how often new documents are read and verdicts revised",
    )
    overlap: Duration = Field(
        default=120.0,
        gt=0,
        le=86400.0,
        description="each read starts this long before the newest document read, so that a "
        "document the engine took in late is read too (longer than the engine's refresh)",
    )
    lookback: Duration = Field(
        default=86400.0,
        gt=0,
        le=365 * 86400.0,
        description="at a start, events and incidents this old are read again (and the "
        "topology of every process still running, however old); processes silent for longer "
        "that no heartbeat lists, and agents silent for longer, are forgotten and their "
        "documents deleted from the topology index (memory and the index stay bounded)",
    )
    quiet_period: Duration = Field(
        default=1800.0,
        gt=0,
        le=30 * 86400.0,
        description="an incident whose verdict has not changed for this long is closed",
    )
    listen: str = Field(
        default=":9817",
        description="address of the correlator's /metrics (the agents' is :9816)",
    )
    web_config_file: Path | None = Field(
        default=None,
        description="TLS and basic authentication of /metrics, as for [sinks.prometheus]",
    )

    @field_validator("listen")
    @classmethod
    def _listen_is_an_address(cls, value: str) -> str:
        listen_address(value)
        return value
