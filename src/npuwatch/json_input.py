"""Reading JSON that other users or their tools wrote.

Python's JSON parser recurses once per nested array or object, so a document of 100,000 `[`
raises RecursionError, which no reader expects from a malformed file. Here such a document is
one more malformed document: a JSONDecodeError (a ValueError), which every reader of a tool's
output already reports as "not valid JSON" and goes on.
"""

from __future__ import annotations

import json
from typing import Any


def load_json(data: str | bytes) -> Any:
    """`json.loads(data)`; a document nested too deep raises JSONDecodeError, not
    RecursionError."""
    try:
        return json.loads(data)
    except RecursionError:
        text = data if isinstance(data, str) else ""
        raise json.JSONDecodeError("nested too deep to be read", text, 0) from None
