"""The real `npuwatch agent --console` as a process, its standard output and error in files: for
tests of what it prints (tests/agent/test_agent_process.py tests its signals and systemd)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path


class RunningAgent:
    """`npuwatch agent --console` on `tmp_path/logs` and `tmp_path/state` (`extra`: more
    arguments); with `from_the_start`, its console prints the journal from its beginning (as
    after a restart whose cursor was there), else from its end (a first start)."""

    def __init__(
        self, tmp_path: Path, from_the_start: bool = False, extra: tuple[str, ...] = ()
    ) -> None:
        self.logs = tmp_path / "logs"
        self.logs.mkdir()
        self.state = tmp_path / "state"
        self.stdout = tmp_path / "console.txt"
        self.stderr = tmp_path / "agent.log"
        if from_the_start:
            start = {"blocks": [0, 0], "events": [0, 0], "states": [0, 0]}
            cursors = {"version": 1, "cursors": {"console": start}}
            (self.state / "cursors.json").write_text(json.dumps(cursors), encoding="utf-8")
        (tmp_path / "npuwatch.toml").write_text("", encoding="utf-8")
        environment = {k: v for k, v in os.environ.items() if not k.startswith("NPUWATCH_")}
        environment.update(
            NPUWATCH_CONFIG=str(tmp_path / "npuwatch.toml"),
            NPUWATCH_SOURCES__RESCAN_INTERVAL="300ms",
            NPUWATCH_SOURCES__IDLE_FLUSH="300ms",
            NPUWATCH_JOURNAL__COMMIT_INTERVAL="50ms",
            NPUWATCH_JOURNAL__SYNC="normal",
            NPUWATCH_AGENT__HOST_NAME="node-1",
            NPUWATCH_AGENT__TIMEZONE="UTC",
            NPUWATCH_DEVICES__ENABLED="false",
            NPUWATCH_SINKS__PROMETHEUS__LISTEN="127.0.0.1:0",
        )
        command = [sys.executable, "-m", "npuwatch", "agent", "--console", *extra]
        command += ["--root", str(self.logs), "--state-directory", str(self.state)]
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            self.process = subprocess.Popen(command, env=environment, stdout=out, stderr=err)

    def printed(self) -> list[str]:
        return self.stdout.read_text(encoding="utf-8").splitlines()

    def logged(self) -> list[str]:
        return self.logged_text().splitlines()

    def logged_text(self) -> str:
        return self.stderr.read_text(encoding="utf-8")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)
