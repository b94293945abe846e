"""Values an operator writes besides durations and sizes (quantities.py): a listen address, a
data stream namespace, a command line.

Pure functions of text, read both by the configuration's validation and by the runtime that
uses the value, so that the configuration needs no runtime module to check one, and commands
that never load the configuration (`doctor`) need no pydantic to read one.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

_NAMESPACE = re.compile(r"^[a-z0-9_]{1,100}$")


def listen_address(text: str) -> tuple[str, int]:
    """(host, port) from `host:port`, `[ipv6]:port` or `:port` (host "": every interface)."""
    host, colon, port = text.strip().rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected host:port, [ipv6]:port or :port, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"write an IPv6 address in brackets, as in [::1]:{port}; got {text!r}")
    return host, int(port)


def check_namespace(namespace: str) -> str:
    """The namespace, or ValueError: Elastic allows lower case letters, digits and `_`."""
    if not _NAMESPACE.match(namespace):
        raise ValueError(
            f"namespace {namespace!r} must be lower case letters, digits or _ (at most 100)"
        )
    return namespace


def command_words(command: str | Sequence[str]) -> list[str]:
    """A configured command as an argument list (a string is split the way a shell would)."""
    words = shlex.split(command) if isinstance(command, str) else list(command)
    if not words:
        raise ValueError("the npu-smi command is empty")
    return words
