"""A configuration another user could change is refused, as Filebeat refuses one: whoever can
write it decides what the agent, as root, reads and where it ships it."""

from __future__ import annotations

from pathlib import Path

from tests.npuwatch_command import run_npuwatch
from tests.unprivileged_user import OtherUser, other_user

__all__ = ["other_user"]  # the fixture, imported for the tests below

SETTINGS = '[sources]\nroots = ["/var/log/npu/slog"]\n'


def test_a_configuration_anyone_may_write_is_refused_by_check_and_by_the_agent(
    tmp_path: Path,
) -> None:
    config = tmp_path / "npuwatch.toml"
    config.write_text(SETTINGS)
    config.chmod(0o666)
    for command in (("config", "check", str(config)), ("agent", "--config", str(config))):
        done = run_npuwatch(*command, timeout=60)
        assert done.returncode == 2, done.stderr
        # `agent` says who speaks ("npuwatch: "), `config check` lists problems bare.
        lines = [line.removeprefix("npuwatch: ") for line in done.stderr.splitlines()]
        assert lines == [
            f"{config}: cannot read: writable by others (mode 666): chmod go-w and chown it to "
            "root, or this user"
        ]


def test_a_configuration_another_user_owns_is_refused(
    tmp_path: Path, other_user: OtherUser
) -> None:
    home = other_user.home_under(tmp_path)
    config = other_user.write(home / "npuwatch.toml", SETTINGS)
    done = run_npuwatch("config", "check", str(config), timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"{config}: cannot read: owned by {other_user.name} (uid {other_user.uid}): chmod go-w "
        "and chown it to root, or this user"
    ]


def test_a_rule_pack_anyone_may_write_is_refused_by_rules_check_and_by_scan(
    tmp_path: Path,
) -> None:
    pack = tmp_path / "site.yaml"
    pack.write_text(
        'pack: site\nrules:\n  - id: site.x\n    when: level == "ERROR"\n    severity: warning\n'
    )
    pack.chmod(0o666)
    refusal = (
        f"{pack}:1:1: cannot read the file: writable by others (mode 666): chmod go-w and chown "
        "it to root, or this user"
    )
    check = run_npuwatch("rules", "check", str(pack), timeout=60)
    assert check.returncode == 1 and refusal in check.stdout + check.stderr
    scan = run_npuwatch("scan", str(tmp_path), "--rules", str(pack), timeout=60)
    assert scan.returncode == 2 and refusal in scan.stderr


def test_a_state_directory_another_user_owns_fails_config_check_as_the_units_start_would(
    tmp_path: Path, other_user: OtherUser
) -> None:
    state = other_user.make_folder(other_user.home_under(tmp_path) / "state", 0o700)
    config = tmp_path / "npuwatch.toml"
    config.write_text(f'[agent]\nstate_directory = "{state}"\n')
    done = run_npuwatch("config", "check", str(config), timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"npuwatch: cannot keep npuwatch's state in {state}: {state.parent} is owned by "
        f"{other_user.name} (uid {other_user.uid}); give a folder that only this user owns and "
        "can write (the default is /var/lib/npuwatch)"
    ]


def test_dev_null_is_no_settings_at_all_not_a_refused_device() -> None:
    """`--config /dev/null`: the operator's way to run with the defaults alone."""
    done = run_npuwatch("config", "check", "/dev/null", timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("/dev/null: ok\n")
