"""The Prometheus sink: an HTTP endpoint that serves the agent's metrics and what the logs say.

`log_metrics` counts records, error codes and rule events per committed journal batch
(`ascend_*`), with every label bounded by the vocabularies of `labels`; `exporter` serves any
registry on `/metrics` (the agent's own `npuwatch_*` metrics and the `ascend_*` collector);
`web_config` reads Prometheus's web configuration file (TLS, basic authentication), and
`passwords` checks its bcrypt hashes.
"""

from npuwatch.sinks.prometheus.exporter import (
    DEFAULT_LISTEN,
    DEFAULT_PORT,
    MetricsServer,
)
from npuwatch.sinks.prometheus.labels import CANN_CODES, CANN_MODULES, codes_named_by
from npuwatch.sinks.prometheus.log_metrics import MAX_LABEL_SETS, LogMetrics
from npuwatch.sinks.prometheus.web_config import WebConfigError, WebSecurity, load_web_config

__all__ = [
    "CANN_CODES",
    "CANN_MODULES",
    "DEFAULT_LISTEN",
    "DEFAULT_PORT",
    "MAX_LABEL_SETS",
    "LogMetrics",
    "MetricsServer",
    "WebConfigError",
    "WebSecurity",
    "codes_named_by",
    "load_web_config",
]
