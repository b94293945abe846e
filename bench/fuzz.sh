#!/usr/bin/env bash
# The long fuzz run of npuwatch, by one command:
#
#   bench/fuzz.sh            # every property of tests/fuzz with 40 times its examples, then
#                            # each C extension under atheris for 10 minutes
#   bench/fuzz.sh 60         # ... each C extension for 60 minutes
#   NPUWATCH_FUZZ=explore bench/fuzz.sh   # the long budget without the known reproducers
#
# Run it from a checkout with the dev extras installed (pip install -e '.[dev]') and clang (for
# the C extensions). The Hypothesis properties print each failing example and a
# @reproduce_failure blob, and keep it in .hypothesis/ (the next run tries it first); the C
# extensions' fuzzer keeps its corpus in build/fuzz/corpus/ and every failing input in
# build/fuzz/crashes/, and prints libFuzzer's seed and the command that replays it.
# Exit status: 0 nothing found, 1 something found.
set -uo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export NPUWATCH_FUZZ=${NPUWATCH_FUZZ:-long}
status=0
python3 -m pytest tests/fuzz -m "not integration" -p no:cacheprovider -q || status=1
if command -v clang >/dev/null; then
    python3 -m tests.fuzz.native_build --minutes "$minutes" --folder build/fuzz || status=1
else
    echo "bench/fuzz.sh: clang is not installed: the C extensions were not fuzzed" >&2
    status=1
fi
exit "$status"
