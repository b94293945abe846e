"""The npuwatch agent's own view: is there a configuration file for it on this host?

Only whether the file is there: validating it needs the configuration models (pydantic), which
`npuwatch config check` loads and doctor does not.
"""

from __future__ import annotations

from npuwatch.default_paths import CONFIG_PATH, CONFIG_PATH_VARIABLE
from npuwatch.doctor.host import Host, is_file
from npuwatch.doctor.report import Check

DEFAULT_CONFIG_PATH = str(CONFIG_PATH)


def agent_config_check(host: Host) -> Check:
    named = host.env_path(CONFIG_PATH_VARIABLE)
    path = named if named is not None else host.at(DEFAULT_CONFIG_PATH)
    found = is_file(path)
    facts: dict[str, object] = {"path": str(path), "exists": found}
    if found:
        return Check(
            "agent.config",
            "logs",
            "npuwatch agent",
            "ok",
            f"configured by {path} (validate it with: npuwatch config check)",
            facts=facts,
        )
    if named is not None:
        return Check(
            "agent.config",
            "logs",
            "npuwatch agent",
            "warn",
            f"${CONFIG_PATH_VARIABLE} names {path}, which is not a file",
            action=f"fix or unset {CONFIG_PATH_VARIABLE} (npuwatch config example > {path})",
            facts=facts,
        )
    return Check(
        "agent.config",
        "logs",
        "npuwatch agent",
        "absent",
        f"no {DEFAULT_CONFIG_PATH}: an agent here runs with the defaults",
        facts=facts,
    )
