"""The values an operator writes: listen addresses, namespaces, commands."""

from __future__ import annotations

import pytest

from npuwatch.setting_values import check_namespace, command_words, listen_address
from npuwatch.sinks.prometheus.exporter import DEFAULT_LISTEN


def test_a_configured_command_is_split_like_a_shell_would() -> None:
    assert command_words("/usr/local/sbin/npu-smi info") == ["/usr/local/sbin/npu-smi", "info"]
    assert command_words("'/opt/my tools/npu-smi' info") == ["/opt/my tools/npu-smi", "info"]
    with pytest.raises(ValueError, match="empty"):
        command_words("  ")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (":9816", ("", 9816)),
        ("0.0.0.0:9816", ("0.0.0.0", 9816)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::]:9816", ("::", 9816)),
        ("[::1]:9816", ("::1", 9816)),
        ("npu-host-7:9816", ("npu-host-7", 9816)),
    ],
)
def test_a_listen_address_is_host_and_port(text: str, expected: tuple[str, int]) -> None:
    assert listen_address(text) == expected


@pytest.mark.parametrize("text", ["9816", "localhost", ":http", ":70000", "::1:9816", ""])
def test_a_listen_address_without_a_port_or_brackets_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected host:port|in brackets"):
        listen_address(text)


def test_the_default_address_is_port_9816_on_every_interface() -> None:
    assert listen_address(DEFAULT_LISTEN) == ("", 9816)


@pytest.mark.parametrize("namespace", ["default", "prod_a", "x" * 100])
def test_a_namespace_of_lower_case_letters_digits_and_underscores_is_taken(namespace: str) -> None:
    assert check_namespace(namespace) == namespace


@pytest.mark.parametrize("namespace", ["", "Prod", "a-b", "x" * 101])
def test_any_other_namespace_is_refused_with_what_it_may_hold(namespace: str) -> None:
    with pytest.raises(ValueError, match="lower case letters, digits or _"):
        check_namespace(namespace)
