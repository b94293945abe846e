"""Arguments of `npuwatch es` (handlers: es_run)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from npuwatch.commands.argument_types import replica_count

_EXIT_STATUS = """\
exit status:
  0  all well; an OpenSearch without the Index State Management plugin (nothing will delete old
     data) is said in one warning line, and is not a failure
  1  something is missing or unreachable (one line each on stderr)
  2  bad usage or configuration
"""

_EXAMPLES = (
    """\
examples:
  npuwatch es setup                   # with [sinks.elasticsearch] of /etc/npuwatch/npuwatch.toml
  npuwatch es check
  npuwatch es setup --flavour opensearch --host http://127.0.0.1:9200 --replicas 0
  NPUWATCH_ES_API_KEY=... npuwatch es check --host https://es.example:9200

setup installs the index templates of the five data streams (logs-ascend.plog-<namespace>,
logs-ascend.device-<namespace> (device logs and npu-smi readings),
logs-ascend.profiling-<namespace>, logs-ascend.debug-<namespace> (the debugging tools'
findings), logs-ascend.events-<namespace> (rule and collective-failure
events)), with mappings generated from the record schema, and of the two plain indices of the
cluster correlator (logs-ascend.topology-<namespace>: the agents' topology facts and heartbeats;
logs-ascend.incidents-<namespace>); the ingest pipeline npuwatch-ingested, which stamps
event.ingested (what the correlator reads by); and the lifecycle policy that deletes data after
delete_after (ILM on Elasticsearch, the Index State Management plugin on OpenSearch). Run it once
per cluster and namespace, and again after an upgrade of npuwatch. check reports connectivity,
version, the templates, the pipeline, the policy, the data streams and the dead letters.

"""
    + _EXIT_STATUS
)


def add_es_commands(commands: Any) -> None:
    es = commands.add_parser(
        "es",
        help="set up and check Elasticsearch/OpenSearch for the search-engine sink",
        description="Prepare and check the search engine the agent ships to.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = es.add_subparsers(title="actions", metavar="ACTION", required=True)
    for name, help_text, handler in (
        ("setup", "install the index templates, ingest pipeline and lifecycle policy", "run_setup"),
        ("check", "report connectivity, version, template, policy and data streams", "run_check"),
    ):
        action = actions.add_parser(
            name,
            help=help_text,
            description=help_text.capitalize(),
            epilog=_EXIT_STATUS,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        action.add_argument(
            "--config", type=Path, metavar="FILE", help="configuration file (as for the agent)"
        )
        action.add_argument(
            "--flavour", choices=("elasticsearch", "opensearch"), help="override the flavour"
        )
        action.add_argument(
            "--host", action="append", metavar="URL", help="override the hosts (repeatable)"
        )
        action.add_argument("--namespace", help="override the namespace")
        if name == "setup":
            action.add_argument(
                "--replicas",
                type=replica_count,
                default=1,
                metavar="N",
                help="replicas of each backing index (0 for a single-node cluster)",
            )
        action.set_defaults(handler=f"npuwatch.commands.es_run:{handler}")
