"""FaultDiag knowledge bases (kg-config.json and custom entity files) as a download, an old
version or a hand edit leaves them: entries of every shape, fields of the wrong type, keywords
with regular-expression syntax, slashes and newlines, long keyword chains, and files that are not
JSON, or JSON nested deeper than a recursive reader goes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

ODD: tuple[Any, ...] = (
    None,
    5,
    -1,
    1e308,
    True,
    "",
    [],
    {},
    "x" * 2000,
    ["a", 5],
    {"k": "v"},
    [[]],
)
KEYWORDS = (
    "ctx is NULL",
    "Node Type=0x63;",
    "event_id=0x80c78008",
    "a/b",
    "(unclosed",
    "[z-a]",
    "\\",
    "line\nbreak",
    "中文",
    "\x00",
    "*",
    "a",
    "/",
)
CLASSES = ("Software", "Hardware", "Network", "User", "Hardware/Chip", "", "UNKNOWN")


def keyword_lists() -> st.SearchStrategy[Any]:
    words = st.lists(st.sampled_from(KEYWORDS), min_size=1, max_size=4)
    chain = st.integers(10, 40).map(lambda n: ["a"] * n)  # `a.*a.*…`: polynomial backtracking
    return st.one_of(
        words,
        st.lists(words, min_size=1, max_size=3),
        chain,
        st.sampled_from(ODD),
    )


@st.composite
def entry(draw: st.DrawFn, codes: list[str]) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(ODD))
    attribute: dict[str, Any] = {
        "class": draw(st.sampled_from(CLASSES) | st.sampled_from(ODD)),
        "component": draw(
            st.sampled_from(["CANN", "NPU", "AI Framework", "MindIE"]) | st.sampled_from(ODD)
        ),
        "module": draw(
            st.sampled_from(["RUNTIME", "HCCL", "DRV", "PyTorch"]) | st.sampled_from(ODD)
        ),
        "cause_en": draw(
            st.sampled_from(["Empty context", "\x1b]52;c;ZXZpbA==\x07", ""]) | st.sampled_from(ODD)
        ),
        "description_en": draw(st.sampled_from(["What happened.", "", "ü"]) | st.sampled_from(ODD)),
        "suggestion_en": draw(
            st.sampled_from([["1. Check."], [], "check it"]) | st.sampled_from(ODD)
        ),
    }
    value: dict[str, Any] = {
        "attribute": attribute,
        "source_file": draw(
            st.sampled_from(["CANN_Plog", "TrainLog", "NPU_OS"]) | st.sampled_from(ODD)
        ),
        "regex": {"in": draw(keyword_lists())},
    }
    if draw(st.booleans()):
        value["rule"] = draw(
            st.lists(st.builds(lambda c: {"dst_code": c}, st.sampled_from(codes)), max_size=3)
            | st.sampled_from(ODD)
        )
    if draw(st.integers(0, 4)) == 0:  # a custom entity file's flattened keys
        value = {"attribute.cause_en": attribute["cause_en"], "regex.in": value["regex"]["in"]}
    return value


@st.composite
def knowledge_base(draw: st.DrawFn) -> bytes:
    """The bytes of a knowledge-base file."""
    shape = draw(st.integers(0, 12))
    if shape == 0:
        return draw(
            st.sampled_from([b"", b"not json", b"[]", b"\xff\xfe{}", b"\xef\xbb\xbf{}", b"null"])
        )
    if shape == 1:
        depth = draw(st.sampled_from([100, 2000, 100000]))
        return b"[" * depth + b"]" * depth
    codes = draw(
        st.lists(
            st.sampled_from(
                ["AISW_CANN_Runtime_001", "0x80C78008", "NO/SLASH", "ü", "", "A" * 300, "x y"]
            ),
            min_size=1,
            max_size=5,
            unique=True,
        )
    )
    entries = {code: draw(entry(codes)) for code in codes}
    data: Any = {"knowledge-repository": entries} if draw(st.booleans()) else entries
    return json.dumps(data, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
