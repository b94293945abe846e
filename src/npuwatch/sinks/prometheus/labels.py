"""The values each label of the `ascend_*` metrics may take; anything else is counted as `other`.

Every label is bounded by a fixed vocabulary, so that a log line can never create a time series:

* `kind`: the log kinds a path can name (`records.LogKind`).
* `level`: the levels the parsers write (vocabulary.LABEL_LEVELS).
* `module`: the CANN module ids of `log_types.h` (formats doc §1.1), the firmware and host-tool
  modules seen in real logs, MindSpore's own loggers and npuwatch's. Framework logger names that
  the neighbour formats carry (`torch.distributed...`) are not modules and fold to `other`.
* `code`: there is no complete public catalogue of CANN codes, so the known codes are those the
  default rule packs name, those seen in real material (formats doc §4.1) and, for every code
  family (the first two characters), its inner-error `xx9999` and parameter-check `xx8888` codes.
  Every other code, including the rest of a family, is `other`: the family rules and the journal
  say which one it was.

A record without a level or a module is labelled `none`, which is not the same as `other`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

from npuwatch.records import LogKind
from npuwatch.rules.condition import And, Node, Not, Or
from npuwatch.rules.fields import resolve_field
from npuwatch.rules.model import Rule
from npuwatch.vocabulary import LABEL_LEVELS

OTHER = "other"
"""The value of a label whose real value is not in its vocabulary."""
NONE = "none"
"""The value of a label whose field the record does not have."""

KINDS: frozenset[str] = frozenset(get_args(LogKind))
LEVELS: frozenset[str] = LABEL_LEVELS


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


CODE_FAMILIES = sorted(
    _words("E1 E2 E3 E4 E5 E6 E7 E8 E9 EA EB EE EF EH EI EJ EK EL EM EO EP EZ W4 WE")
)
"""The two-character code families of formats doc §4.1 (the second character is the module)."""

CANN_CODES = _words(
    # named by the default rule packs
    "E10010 E10012 E19999 E20001 E30006 E30009 E39001 E89999 E90003 EB0000 EE1001 EH0001 "
    "EH9999 EI0001 EI0002 EI0004 EI0006 EI0014 EJ0001 EL0003 EL0004 "
    # seen in real material
    "E39005 E39999 E40021 E40024 EE1002 EE8888 EE9999 EI0005 EI0011 EI0012 EI0013 EI0019 "
    "EI9999 EZ1001 EZ3002 EZ9903 EZ9999"
) | {family + tail for family in CODE_FAMILIES for tail in ("9999", "8888")}


def codes_named_by(rules: Iterable[Rule]) -> frozenset[str]:
    """The codes that rules compare `error.code` with by name (`==`, `in`); ranges and patterns
    name families, which the code label does not split."""
    named: set[str] = set()
    for rule in rules:
        if rule.node is not None:
            _collect_values(rule.node, ("error.code", "ascend.error_codes"), named)
    return frozenset(named)


def modules_named_by(rules: Iterable[Rule]) -> frozenset[str]:
    """The modules that rules compare `log.logger` with by name."""
    named: set[str] = set()
    for rule in rules:
        if rule.node is not None:
            _collect_values(rule.node, ("log.logger",), named)
    return frozenset(named)


def _collect_values(node: Node, fields: tuple[str, ...], into: set[str]) -> None:
    if isinstance(node, And | Or):
        for operand in node.operands:
            _collect_values(operand, fields, into)
    elif isinstance(node, Not):
        _collect_values(node.operand, fields, into)
    elif node.op in ("==", "in") and resolve_field(node.field) in fields:
        into.update(str(value) for value in node.values)
