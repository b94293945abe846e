"""The refusals and the warning that docs/security.md shows are what npuwatch says: each
```text block there is run in a setting made like the page's (its paths mapped to temporary
ones), and every line it shows must be a line of the command's standard error."""

from __future__ import annotations

import os
import pwd
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.npuwatch_command import clean_environment, run_npuwatch

PAGE = REPO / "docs" / "security.md"


def text_blocks() -> list[list[str]]:
    blocks: list[list[str]] = []
    inside = False
    for line in PAGE.read_text("utf-8").splitlines():
        if line.startswith("```"):
            inside = not inside and line[3:].strip() == "text"
            if inside:
                blocks.append([])
            continue
        if inside:
            blocks[-1].append(line)
    return blocks


class Setting:
    """A temporary folder standing for the page's paths, and the environment to run in."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.paths: dict[str, str] = {}
        self.env = clean_environment(TZ="UTC", COLUMNS="100")

    def stands_for(self, documented: str, here: Path) -> None:
        self.paths[documented] = str(here)

    def in_the_page_s_words(self, text: str) -> str:
        for documented, here in sorted(self.paths.items(), key=lambda item: -len(item[1])):
            text = text.replace(here, documented)
        return text


def password_readable_by_others(setting: Setting) -> None:
    secret = setting.folder / "es-password"
    secret.write_text("secret\n")
    secret.chmod(0o644)
    config = setting.folder / "npuwatch.toml"
    config.write_text(
        '[sinks.elasticsearch]\nenabled = true\nhosts = ["https://es-1:9200"]\n'
        f'username = "npuwatch"\npassword_file = "{secret}"\n'
    )
    setting.env["NPUWATCH_CONFIG"] = str(config)  # `npuwatch config check` with no FILE
    setting.stands_for("/etc/npuwatch/es-password", secret)


def certificates_not_verified(setting: Setting) -> None:
    config = setting.folder / "npuwatch.toml"
    config.write_text(
        '[sinks.elasticsearch]\nenabled = true\nhosts = ["https://es-1:9200"]\n'
        "verify_certificates = false\n"
    )
    setting.env["NPUWATCH_CONFIG"] = str(config)


def state_in_another_user_s_folder(setting: Setting) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the folder is given to uid 1001, as the page's alice")
    shared = setting.folder / "shared" / "npuwatch"
    shared.mkdir(parents=True)
    os.chown(shared, 1001, 1001)
    config = setting.folder / "npuwatch.toml"
    config.write_text("")  # the defaults
    setting.env["NPUWATCH_CONFIG"] = str(config)
    setting.stands_for("/tmp/shared/npuwatch", shared)
    try:  # the page's alice is uid 1001; here, whoever that is, or no one
        name = f"{pwd.getpwuid(1001).pw_name} (uid 1001)"
    except KeyError:
        name = "uid 1001"
    setting.paths["alice (uid 1001)"] = name


SETTINGS: dict[str, Callable[[Setting], None]] = {
    "the password file /etc/npuwatch/es-password is readable": password_readable_by_others,
    "verify_certificates = false": certificates_not_verified,
    "cannot keep npuwatch's state in": state_in_another_user_s_folder,
}


def setting_for(block: list[str]) -> Callable[[Setting], None]:
    (make,) = [make for words, make in SETTINGS.items() if any(words in line for line in block)]
    return make


BLOCKS = text_blocks()


def test_every_block_of_the_page_is_checked() -> None:
    assert len(BLOCKS) == len(SETTINGS)
    assert {setting_for(block) for block in BLOCKS} == set(SETTINGS.values())


@pytest.mark.parametrize("block", BLOCKS, ids=[block[-1][10:60] for block in BLOCKS])
def test_the_page_shows_what_npuwatch_says(block: list[str], tmp_path: Path) -> None:
    setting = Setting(tmp_path)
    setting_for(block)(setting)
    commands = [line[2:] for line in block if line.startswith("$ ")]
    shown = [line for line in block if not line.startswith("$ ")]
    # (a block without a command shows what `config check` says of the setting)
    words = shlex.split(commands[0]) if commands else ["npuwatch", "config", "check"]
    assert len(commands) <= 1 and words[0] == "npuwatch"
    for documented, here in setting.paths.items():
        words = [
            word.replace(documented, here) if documented.startswith("/") else word for word in words
        ]
    done = run_npuwatch(*words[1:], cwd=tmp_path, env=setting.env, timeout=60)
    said = [setting.in_the_page_s_words(line) for line in done.stderr.splitlines()]
    for line in shown:
        assert line in said, f"docs/security.md shows:\n{line}\nnpuwatch said:\n" + "\n".join(said)
    # a refusal stops the command (exit 1 for config check's finding, 2 for a service)
    if any("refused" in line or "cannot keep" in line for line in shown):
        assert done.returncode in (1, 2)
