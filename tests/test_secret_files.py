"""Secret and trust files: who besides their owner may read or change them, by the mode bits
and by a POSIX ACL (systemd hands a service its credentials as root's files with an ACL entry
for the service's user)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from npuwatch.secret_files import Exposure, FileRefused, check_file, read_secret

SERVICE_UID = 61234
"""A user id no test machine gives anyone: the dynamic user of a service."""
OTHER_UID = 61235

_USER_OBJ, _USER, _GROUP_OBJ, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
_NO_ID = 0xFFFFFFFF


def with_acl(path: Path, users: dict[int, int], group: int = 0, other: int = 0) -> None:
    """Give `path` an access ACL: the owner may read and write, each uid of `users` has its
    permissions (4 read, 2 write), and the file's group and others `group` and `other`."""
    mask = group
    for permissions in users.values():
        mask |= permissions
    entries = [(_USER_OBJ, 6, _NO_ID)]
    entries += [(_USER, permissions, uid) for uid, permissions in sorted(users.items())]
    entries += [(_GROUP_OBJ, group, _NO_ID), (_MASK, mask, _NO_ID), (_OTHER, other, _NO_ID)]
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)
    try:
        os.setxattr(path, "system.posix_acl_access", acl)
    except OSError as error:
        pytest.skip(f"this file system takes no ACL ({error.strerror})")


def secret(tmp_path: Path, mode: int = 0o600, text: str = "s3cret\n") -> Path:
    path = tmp_path / "secret"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_a_private_secret_is_read_stripped(tmp_path: Path) -> None:
    assert read_secret(secret(tmp_path), "password file") == "s3cret"


def test_a_systemd_credential_readable_by_this_process_s_user_alone_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As systemd lays it out for a DynamicUser= service: root's 0400 file, an ACL entry that
    lets the service's user read it, nobody else."""
    path = secret(tmp_path, 0o400)
    with_acl(path, {SERVICE_UID: 4})
    monkeypatch.setattr(os, "geteuid", lambda: SERVICE_UID)

    check_file(path, "password file", Exposure.SECRET)


def test_an_acl_that_lets_another_user_read_a_secret_is_refused(tmp_path: Path) -> None:
    path = secret(tmp_path)
    with_acl(path, {OTHER_UID: 4})

    with pytest.raises(FileRefused) as refused:
        read_secret(path, "API key file")

    message = str(refused.value)
    assert f"readable by uid {OTHER_UID} (an ACL entry)" in message
    assert message.endswith(f"run `setfacl -b {path} && chmod 600 {path}`")


def test_an_acl_entry_the_mask_takes_away_gives_nothing(tmp_path: Path) -> None:
    path = secret(tmp_path)
    with_acl(path, {OTHER_UID: 0})

    assert read_secret(path, "API key file") == "s3cret"


def test_a_trust_file_may_be_read_by_all_but_not_changed_by_others(tmp_path: Path) -> None:
    path = secret(tmp_path, 0o644)
    check_file(path, "CA certificate file", Exposure.TRUST)

    with_acl(path, {OTHER_UID: 6}, group=4, other=4)

    with pytest.raises(FileRefused, match=f"writable by uid {OTHER_UID} \\(an ACL entry\\)"):
        check_file(path, "CA certificate file", Exposure.TRUST)


@pytest.mark.parametrize(
    ("text", "reason"), [("", "is empty"), ("\n \n", "is empty"), (None, "not UTF-8 text")]
)
def test_a_secret_that_holds_nothing_usable_is_refused_in_one_line(
    tmp_path: Path, text: str | None, reason: str
) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"\xff\xfe" if text is None else text.encode())
    path.chmod(0o600)

    with pytest.raises(FileRefused, match=reason) as refused:
        read_secret(path, "password file")

    assert "\n" not in str(refused.value)


def test_a_fifo_named_as_the_secret_is_refused_without_waiting_for_a_writer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "secret"
    os.mkfifo(path, 0o600)

    with pytest.raises(FileRefused, match="not a regular file"):
        read_secret(path, "password file")


def test_a_folder_named_as_the_secret_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileRefused, match="not a regular file"):
        read_secret(tmp_path, "password file")
