"""What the real `npuwatch agent` says at its start about what would leave it unwatched or
idle: a metrics address another process holds is refused (before, it ran on without /metrics,
after `config check` had said all was well, and no alert could ever fire for it), and a log root
named on the command line that does not exist is warned about (before, it followed nothing and
said nothing)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.npuwatch_command import clean_environment


def agent_config(tmp_path: Path, port: int) -> Path:
    config = tmp_path / "npuwatch.toml"
    config.write_text(
        f'[agent]\nstate_directory = "{tmp_path / "state"}"\n'
        f'[sinks.prometheus]\nlisten = "127.0.0.1:{port}"\n'
        "[devices]\nenabled = false\n",
        "utf-8",
    )
    return config


def start(config: Path, root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "npuwatch", "agent", "--config", str(config), "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_environment(),
    )


def test_a_metrics_port_another_process_holds_stops_the_start_in_one_line(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        config = agent_config(tmp_path, port)
        agent = start(config, logs)
        _, err = agent.communicate(timeout=60)
    assert agent.returncode == 2, err
    refusals = [line for line in err.splitlines() if " INFO " not in line]
    assert len(refusals) == 1, err
    assert refusals[0].startswith(f"npuwatch: cannot listen on 127.0.0.1:{port}: ")
    assert "set [sinks.prometheus] listen to a free address" in refusals[0]

    # The state directory was let go: with the port free, the same agent starts and stops.
    again = start(config, logs)
    try:
        assert again.stderr is not None
        for line in again.stderr:
            if "following" in line:
                break
    finally:
        again.send_signal(signal.SIGTERM)
        _, err = again.communicate(timeout=60)
    assert again.returncode == 0, err


def test_a_log_root_that_does_not_exist_is_warned_about_at_start(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    missing = tmp_path / "no-such-logs"
    agent = start(agent_config(tmp_path, port), missing)
    assert agent.stderr is not None
    try:
        warning = ""
        for line in agent.stderr:
            if " WARNING " in line:
                warning = line.strip()
                break
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.communicate(timeout=60)
    assert warning == (
        f"npuwatch: WARNING log root {missing} does not exist: nothing is read there until it "
        "does (followed once it appears); check sources.roots or --root"
    )
    assert agent.returncode == 0
