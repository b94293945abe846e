"""The Prometheus sink: an HTTP endpoint that serves the agent's metrics and what the logs say.

`log_metrics` counts records, error codes and rule events per committed journal batch
(`ascend_*`), with every label bounded by the vocabularies of `labels`; `exporter` serves any
registry on `/metrics` (the agent's own `npuwatch_*` metrics and the `ascend_*` collector);
`web_config` reads Prometheus's web configuration file (TLS, basic authentication), and
`passwords` checks its bcrypt hashes.
"""
