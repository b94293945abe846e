"""Whether doctor runs inside a container, where missing device nodes are the classic mistake."""

from __future__ import annotations

from npuwatch.doctor.host import Host, exists, read_text

_MARKER_FILES = ("/.dockerenv", "/run/.containerenv")
"""Docker creates the first, Podman the second."""

_CGROUP_HINTS = ("docker", "kubepods", "containerd", "libpod", "lxc", "crio")


def container_evidence(host: Host) -> str | None:
    """Why this looks like a container (`/.dockerenv`, `$container=podman`...), or None."""
    for marker in _MARKER_FILES:
        if exists(host.at(marker)):
            return marker
    kind = host.environ.get("container")
    if kind:
        return f"$container={kind}"
    if host.environ.get("KUBERNETES_SERVICE_HOST"):
        return "$KUBERNETES_SERVICE_HOST (a Kubernetes pod)"
    # cgroup v1 names the container in PID 1's cgroup paths; under v2 they read "0::/".
    cgroup = read_text(host.at("/proc/1/cgroup")) or ""
    for hint in _CGROUP_HINTS:
        if hint in cgroup:
            return f"/proc/1/cgroup mentions {hint}"
    return None
