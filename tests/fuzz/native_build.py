"""The two C extensions built for coverage-guided fuzzing: clang with libFuzzer's coverage
instrumentation (-fsanitize=fuzzer-no-link) and AddressSanitizer and UndefinedBehaviorSanitizer,
into a folder of their own (never the source tree, whose modules stay the optimised ones).

atheris runs them: its `asan_with_fuzzer.so`, preloaded, brings libFuzzer and the sanitizers'
runtime (atheris' docs, "native extension fuzzing"); PYTHONMALLOC=malloc sends the
interpreter's own small allocations through it too, so that AddressSanitizer sees every
buffer the extensions touch.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import FIXTURES, REPO

SOURCES = {
    "first-pass": REPO / "src" / "npuwatch" / "parsers" / "_speedups.c",
    "block-columns": REPO / "src" / "npuwatch" / "journal" / "_columns.c",
}
"""Each fuzz target and the C source it builds."""
FLAGS = (
    "-shared",
    "-fPIC",
    "-g",
    "-O1",
    "-fno-omit-frame-pointer",
    "-fsanitize=fuzzer-no-link,address,undefined",
    "-fno-sanitize-recover=all",
)
DICTIONARY_TOKENS = (
    "[DEBUG] ", "[INFO] ", "[WARNING] ", "[ERROR] ", "[EVENT] ", "[TRACE] ", "[OPLOG] ",
    "[NULL] ", "RUNTIME(", "HCCL(", "(-1,null):", ",python3):", "2025-03-11-08:12:40.117.305",
    "1970-01-01-08:00:00.000.000", "9999-12-31-23:59:59.999.999", "E30009", "EZ9999",
    "W40001", "\r\n", "99999999999999999999",
)  # fmt: skip


def clang() -> str | None:
    return shutil.which("clang")


def atheris_preload() -> Path | None:
    """atheris' libFuzzer with the AddressSanitizer runtime, or None without atheris."""
    try:
        import atheris
    except ImportError:
        return None
    preload = Path(atheris.path()) / "asan_with_fuzzer.so"
    return preload if preload.is_file() else None


@dataclass(frozen=True)
class FuzzBuild:
    folder: Path
    modules: dict[str, Path]
    """The instrumented extension of each target."""


def build(folder: Path) -> FuzzBuild:
    """Compile both extensions into `folder` (raises CalledProcessError with clang's output)."""
    folder.mkdir(parents=True, exist_ok=True)
    compiler = clang()
    if compiler is None:
        raise FileNotFoundError("clang is not installed (apt-get install clang)")
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    modules = {}
    for target, source in SOURCES.items():
        output = folder / f"{source.stem}{suffix}"
        subprocess.run(
            # (src/npuwatch holds limited_api.h, which both sources include)
            [
                compiler,
                *FLAGS,
                f"-I{include}",
                f"-I{source.parents[1]}",
                str(source),
                "-o",
                str(output),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        modules[target] = output
    return FuzzBuild(folder, modules)


def write_dictionary(path: Path) -> Path:
    """libFuzzer's dictionary: the tokens of CANN lines a byte mutator would hardly guess."""
    lines = [f'"{_escaped(token.encode())}"' for token in DICTIONARY_TOKENS]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return path


def _escaped(token: bytes) -> str:
    """A token as libFuzzer's dictionary writes it: printable ASCII, else \\xNN."""
    return "".join(
        chr(byte) if 32 <= byte < 127 and byte not in b'"\\' else f"\\x{byte:02x}" for byte in token
    )


def seed_corpus(folder: Path) -> Path:
    """A few chunks of the fixture logs (each starts with the byte that sets the line cap)."""
    folder.mkdir(parents=True, exist_ok=True)
    for number, path in enumerate(sorted((FIXTURES / "golden").glob("*.log"))):
        data = path.read_bytes()
        for part in range(0, min(len(data), 8192), 2048):
            (folder / f"seed-{number}-{part}").write_bytes(b"\x40" + data[part : part + 2048])
    return folder


def environment(preload: Path) -> dict[str, str]:
    """The harness's environment: atheris' sanitizer runtime first, every allocation through
    it, a report and a stop at the first finding."""
    return {
        **os.environ,
        "LD_PRELOAD": str(preload),
        "PYTHONMALLOC": "malloc",
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
        "PYTHONPATH": str(REPO / "src") + os.pathsep + str(REPO),
    }


def run_harness(
    target: str,
    built: FuzzBuild,
    preload: Path,
    corpus: Path,
    artifacts: Path,
    options: tuple[str, ...],
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """libFuzzer over `target` (tests/fuzz/native_fuzz.py), the corpus kept in `corpus`, a
    failing input saved in `artifacts`; `options` are libFuzzer's (-runs=N, -max_total_time=S)."""
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    seeds = seed_corpus(built.folder / "seeds") if target == "first-pass" else None
    dictionary = write_dictionary(built.folder / "tokens.dict")
    command = [
        sys.executable, "-m", "tests.fuzz.native_fuzz", target, "--build", str(built.folder),
        f"-artifact_prefix={artifacts}/", "-max_len=4096", "-print_final_stats=1",
        *([f"-dict={dictionary}"] if target == "first-pass" else []),
        *options, str(corpus), *([str(seeds)] if seeds else []),
    ]  # fmt: skip
    return subprocess.run(
        command,
        cwd=REPO,
        env=environment(preload),
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
    )


def failure_report(target: str, result: subprocess.CompletedProcess[str], artifacts: Path) -> str:
    """What a failed run says: libFuzzer's seed, the saved inputs (and how to replay one), and
    the end of its output (the Python difference or the sanitizer's report)."""
    seed = re.search(r"INFO: Seed: (\d+)", result.stderr)
    saved = sorted(artifacts.glob("*"))
    replay = [
        f"  {path} (base64 {base64.b64encode(path.read_bytes()[:512]).decode()})\n"
        f"  replay: PYTHONPATH=src:. LD_PRELOAD=… python -m tests.fuzz.native_fuzz {target} "
        f"--build BUILD {path}"
        for path in saved
    ]
    return "\n".join(
        [
            f"{target}: exit {result.returncode}, libFuzzer seed {seed[1] if seed else '?'} "
            f"(-seed=N repeats the run)",
            "inputs saved:" if saved else "no input saved",
            *replay,
            "--- output (end)",
            result.stderr[-6000:],
        ]
    )


def main(argv: list[str]) -> int:
    """The long run (bench/fuzz.sh): both targets for MINUTES each, corpus kept in FOLDER."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--folder", type=Path, default=REPO / "build" / "fuzz")
    args = parser.parse_args(argv)
    preload = atheris_preload()
    if preload is None:
        sys.stderr.write("atheris is not installed: pip install -e '.[dev]'\n")
        return 2
    built = build(args.folder / "modules")
    status = 0
    for target in SOURCES:
        artifacts = args.folder / "crashes" / target
        result = run_harness(
            target, built, preload, args.folder / "corpus" / target, artifacts,
            (f"-max_total_time={int(args.minutes * 60)}",),
        )  # fmt: skip
        summary = re.findall(r"stat::number_of_executed_units: (\d+)", result.stderr)
        if result.returncode != 0:
            sys.stderr.write(failure_report(target, result, artifacts) + "\n")
            status = 1
        else:
            sys.stdout.write(f"{target}: {summary[-1] if summary else '?'} inputs, no finding\n")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
