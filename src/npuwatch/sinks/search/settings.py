"""From the `[sinks.elasticsearch]` section to the search sink's plan: a connection and
shipping settings. The secrets come from their files or the environment here, and nowhere
else."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from npuwatch.config import Config
from npuwatch.config.sinks import SearchSinkSection
from npuwatch.metrics import SelfMetrics
from npuwatch.problems import Problems
from npuwatch.secret_files import Exposure, FileRefused, check_file, read_secret
from npuwatch.sinks.search.dead_letters import DeadLetters
from npuwatch.sinks.search.documents import levels_below
from npuwatch.sinks.search.engine import Connection
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.search_sink import SearchSink, ShipSettings
from npuwatch.sinks.sink import SinkContext, SinkPlan

SECTION = "[sinks.elasticsearch]"
SINK_NAME = "elasticsearch"
"""The sink's cursor and metrics label, whatever the engine (named after its section)."""

API_KEY_VARIABLE = "NPUWATCH_ES_API_KEY"
PASSWORD_VARIABLE = "NPUWATCH_ES_PASSWORD"

log = logging.getLogger(__name__)


class SecretUnreadable(ValueError):
    """A configured secret file (or the CA file) cannot be read, or another user could read or
    change it; the message names it, says why and what to do."""


def connection_from(section: SearchSinkSection, environ: Mapping[str, str]) -> Connection:
    """The connection [sinks.elasticsearch] describes, its secrets read (SecretUnreadable when
    one cannot be, or is not private); `verify_certificates = false` is warned about here,
    where every command that connects passes."""
    api_key = environ.get(API_KEY_VARIABLE) or _secret(section.api_key_file, "API key file")
    password = environ.get(PASSWORD_VARIABLE) or _secret(section.password_file, "password file")
    if section.ca_file is not None:
        # Checked here, once: a CA file the clients cannot read fails every request alike, and
        # the sink would only retry "busy or down" for ever. Whoever can change it chooses the
        # servers npuwatch trusts with its secrets and logs.
        _checked(section.ca_file, "CA certificate file", Exposure.TRUST)
    if not section.verify_certificates:
        log.warning("%s", insecure_verification_warning(section))
    return Connection(
        flavour=section.flavour,
        hosts=tuple(section.hosts),
        ca_file=section.ca_file,
        verify_certificates=section.verify_certificates,
        api_key=api_key,
        username=section.username,
        password=password,
        timeout_s=section.timeout,
    )


def insecure_verification_warning(section: SearchSinkSection) -> str:
    """The one line said when the engine's TLS certificates are not verified."""
    return (
        f"{SECTION} verify_certificates = false: the search engine's certificate is not "
        f"checked, so anyone on the path to {', '.join(section.hosts)} can read and change "
        "what is shipped and take the credentials; set ca_file to the engine's CA instead"
    )


def ship_settings(section: SearchSinkSection, host: str) -> ShipSettings:
    return ShipSettings(
        namespace=section.namespace,
        host=host,
        chunk_docs=section.batch_documents,
        chunk_bytes=section.batch_bytes,
        max_backoff_s=section.max_backoff,
        skipped_levels=levels_below(section.min_level),
    )


def dead_letter_path(section: SearchSinkSection, state_directory: Path) -> Path:
    path = section.dead_letter_file or Path("dead-letter") / f"{section.flavour}.jsonl"
    return path if path.is_absolute() else state_directory / path


def _secret(path: Path | None, what: str) -> str | None:
    if path is None:
        return None
    try:
        return read_secret(path, what)
    except FileRefused as error:
        raise SecretUnreadable(_with_advice(str(error))) from None


def _checked(path: Path, what: str, exposure: Exposure) -> None:
    try:
        check_file(path, what, exposure)
    except FileRefused as error:
        raise SecretUnreadable(_with_advice(str(error))) from None


def _with_advice(reason: str) -> str:
    """`reason`, and for a process that is not root and may not read the file (the correlator
    under DynamicUser=), the way to hand it a copy without opening the file to others."""
    if os.geteuid() == 0 or not reason.endswith(os.strerror(errno.EACCES)):
        return reason
    return (
        f"{reason} (npuwatch runs as uid {os.geteuid()} here: under systemd, pass the file "
        "with LoadCredential= and name the copy under $CREDENTIALS_DIRECTORY; see "
        "docs/security.md)"
    )


def plan_search_sink(config: Config, context: SinkContext) -> SinkPlan | None:
    """The search sink when [sinks.elasticsearch] enables it, its secrets and CA file read;
    Problems when one cannot be."""
    section = config.sinks.elasticsearch
    if not section.enabled:
        return None
    try:
        connection = connection_from(section, context.environ)
    except SecretUnreadable as error:
        raise Problems([f"{SECTION} {error}"]) from None
    levels = "every record" if section.min_level == "DEBUG" else f"{section.min_level} and above"
    return SinkPlan(
        SINK_NAME,
        f"{section.flavour} at {', '.join(section.hosts)}, namespace {section.namespace}, "
        f"ships {levels}",
        partial(
            _open_search_sink,
            connection,
            dead_letter_path(section, context.state_directory),
            ship_settings(section, context.host),
        ),
    )


def _open_search_sink(
    connection: Connection, dead_letters: Path, settings: ShipSettings, metrics: SelfMetrics
) -> SearchSink:
    return SearchSink(connect(connection), metrics, DeadLetters(dead_letters), settings)
