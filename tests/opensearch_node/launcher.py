"""Start a real single-node OpenSearch 2.19.6 for tests (standard library only).

    from tests.opensearch_node.launcher import start_node

    with start_node(tmp_path / "os") as node:
        urllib.request.urlopen(node.url + "/")

``build()`` runs ``build.sh`` (idempotent, Maven Central on first use); ``start_node`` builds,
launches ``npuwatch.testnode.TestNode`` in a JVM bound to 127.0.0.1 and waits until HTTP answers.
A node of a cluster of several is started the same way, with the cluster's options
(``cluster.py``); ``RunningNode.start_again`` starts a stopped or killed node on its data and
ports.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

HERE = Path(__file__).resolve().parent
TARGET = HERE / "target"
MAIN_CLASS = "npuwatch.testnode.TestNode"
DEFAULT_JVM_OPTS: tuple[str, ...] = (
    "-Xms256m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-Djava.awt.headless=true",
    "-Dfile.encoding=UTF-8",
    "-Dlog4j2.disable.jmx=true",
)
_READY = re.compile(r"^READY (http://127\.0\.0\.1:(\d+))\s*$", re.MULTILINE)
_BUILD_LOCK = threading.Lock()
_RUNNING: set[RunningNode] = set()


class NodeError(RuntimeError):
    """The node could not be built or did not start."""


def build() -> Path:
    """Build the node (no-op when already built); return the ``target`` directory."""
    with _BUILD_LOCK:
        proc = subprocess.run(
            ["bash", str(HERE / "build.sh")],
            cwd=HERE,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise NodeError(f"build.sh failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}")
    return TARGET


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise NodeError("java not found (set JAVA_HOME or put Java 17 on PATH)")
    return found


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "<no output>"
    return "\n".join(text.splitlines()[-lines:]) or "<no output>"


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/", timeout=2) as resp:
            return int(resp.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


class RunningNode:
    """A started node: ``url`` is ``http://127.0.0.1:PORT``; output goes to ``log_path``. It is
    stopped at exit if nobody stopped it before."""

    def __init__(
        self,
        url: str,
        process: subprocess.Popen[bytes],
        home: Path,
        log_path: Path,
        command: Sequence[str] = (),
    ):
        self.url = url
        self.process = process
        self.home = home
        self.log_path = log_path
        self.port = int(url.rsplit(":", 1)[1])
        self.command = tuple(command)
        """The JVM's command line (its HTTP port the bound one), to start it again."""
        _RUNNING.add(self)

    def output(self, lines: int = 40) -> str:
        """The last lines the node printed (stdout and stderr)."""
        return _tail(self.log_path, lines)

    def stop(self, timeout_s: float = 30) -> int:
        """SIGTERM (the node closes itself), wait; SIGKILL after ``timeout_s``. Exit code."""
        _RUNNING.discard(self)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return self.kill()
        return self.process.wait()

    def kill(self) -> int:
        """SIGKILL and reap; exit code."""
        _RUNNING.discard(self)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        return self.process.wait()

    def start_again(self, timeout_s: float = 120) -> None:
        """Start the node that was stopped or killed, on the same data, HTTP port (and, in a
        cluster, transport port and name); wait until HTTP answers. Its output is added to
        ``log_path``."""
        if self.process.poll() is None:
            raise NodeError(f"{self!r} is still running")
        self.process = _relaunch(self.command, self.home, self.log_path, timeout_s, self.port)
        _RUNNING.add(self)

    def __enter__(self) -> RunningNode:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"RunningNode(url={self.url!r}, pid={self.process.pid})"


def node_command(
    home: Path,
    port: int | None,
    *,
    cluster_name: str = "npuwatch-test",
    jvm_opts: Sequence[str] = DEFAULT_JVM_OPTS,
    options: Sequence[str] = (),
) -> list[str]:
    """The command that runs TestNode (``options``: a cluster member's, TestNode's usage)."""
    target = build()
    classpath = os.pathsep.join([str(target / "classes"), str(target / "lib" / "*")])
    args = [str(port or 0), str(home), cluster_name, *options]
    return [_java(), *jvm_opts, "-cp", classpath, MAIN_CLASS, *args]


def launch(
    command: Sequence[str], home: Path, log_path: Path
) -> tuple[subprocess.Popen[bytes], int]:
    """Start the JVM, its output added to ``log_path``; the process and where its output
    begins in the file (a node started again writes after what it wrote before)."""
    home.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        begins = log.tell()
        process = subprocess.Popen(
            command, cwd=home, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
    return process, begins


def await_ready(
    process: subprocess.Popen[bytes],
    log_path: Path,
    begins: int,
    timeout_s: float,
    port: int | None,
) -> str:
    """Wait until the launched node prints READY and answers on HTTP; its URL. Raises NodeError
    (the process killed) when it exits first or ``timeout_s`` runs out."""
    deadline = time.monotonic() + timeout_s
    url: str | None = f"http://127.0.0.1:{port}" if port else None
    try:
        while True:
            if process.poll() is not None:
                raise NodeError(
                    f"OpenSearch node exited with code {process.returncode} before it was"
                    f" ready; last output ({log_path}):\n{_tail(log_path)}"
                )
            match = _READY.search(_output_since(log_path, begins))
            if match:
                url = match.group(1)
            if url is not None and (match or port) and _answers(url):
                return url
            if time.monotonic() > deadline:
                raise NodeError(
                    f"OpenSearch node not ready after {timeout_s:.0f}s; last output"
                    f" ({log_path}):\n{_tail(log_path)}"
                )
            time.sleep(0.25)
    except BaseException:
        if process.poll() is None:
            process.kill()
        process.wait()
        raise


def _output_since(log_path: Path, begins: int) -> str:
    with log_path.open("rb") as log:
        log.seek(begins)
        return log.read().decode("utf-8", errors="replace")


def _relaunch(
    command: Sequence[str], home: Path, log_path: Path, timeout_s: float, port: int
) -> subprocess.Popen[bytes]:
    process, begins = launch(command, home, log_path)
    await_ready(process, log_path, begins, timeout_s, port)
    return process


def start_node(
    home: Path,
    port: int | None = None,
    timeout_s: float = 120,
    *,
    cluster_name: str = "npuwatch-test",
    jvm_opts: Sequence[str] = DEFAULT_JVM_OPTS,
) -> RunningNode:
    """Build if needed, start a node with its data under ``home``, wait until HTTP answers.

    ``port=None`` lets the node bind a free port itself (no race with other processes).
    Raises NodeError with the node's last output lines when it exits or times out.
    """
    home = Path(home).resolve()
    log_path = home / "node.log"
    home.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    command = node_command(home, port, cluster_name=cluster_name, jvm_opts=jvm_opts)
    process, begins = launch(command, home, log_path)
    url = await_ready(process, log_path, begins, timeout_s, port)
    if not port:  # started again, it binds the port it has now
        command[command.index(MAIN_CLASS) + 1] = url.rsplit(":", 1)[1]
    return RunningNode(url, process, home, log_path, command)


@atexit.register
def _stop_leftovers() -> None:
    for node in list(_RUNNING):
        node.stop(timeout_s=10)
