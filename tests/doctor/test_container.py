"""Telling a container from a plain host."""

from __future__ import annotations

from pathlib import Path

import pytest

from npuwatch.doctor.container import container_evidence
from tests.doctor.fake_host import fake_host, write

CGROUP_V1_DOCKER = (
    "12:memory:/docker/3f1c0e5d9b2a4c7e8f6d5b4a3c2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e\n"
    "11:devices:/docker/3f1c0e5d9b2a4c7e8f6d5b4a3c2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e\n"
)
CGROUP_V2 = "0::/\n"


def test_docker_leaves_dockerenv(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    (host.root / ".dockerenv").touch()
    assert container_evidence(host) == "/.dockerenv"


def test_podman_leaves_containerenv(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    write(host.root / "run/.containerenv", 'engine="podman-4.9.3"\n')
    assert container_evidence(host) == "/run/.containerenv"


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"container": "podman"}, "$container=podman"),
        ({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "$KUBERNETES_SERVICE_HOST (a Kubernetes pod)"),
    ],
)
def test_the_environment_can_say_so(tmp_path: Path, environ: dict[str, str], expected: str) -> None:
    assert container_evidence(fake_host(tmp_path, environ)) == expected


def test_a_cgroup_v1_path_of_pid_1_names_docker(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    write(host.root / "proc/1/cgroup", CGROUP_V1_DOCKER)
    assert container_evidence(host) == "/proc/1/cgroup mentions docker"


def test_a_plain_host_with_cgroup_v2_is_no_container(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    write(host.root / "proc/1/cgroup", CGROUP_V2)
    assert container_evidence(host) is None
