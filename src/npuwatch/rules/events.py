"""Events: what a rule match produces. An event is a record too (ECS `event.kind: alert`), so the
rest of the pipeline journals and ships it like any record.
"""

from __future__ import annotations

from typing import Any

from npuwatch.records import Record, format_timestamp
from npuwatch.rules.model import SEVERITY_RANK, Rule


class Event(Record):
    """A rule match: the rule, the record that triggered it, its context and how often it
    recurred within the rule's dedupe window."""

    def __init__(
        self, rule: Rule, trigger: Record, fields: dict[str, str], before: list[str]
    ) -> None:
        self.rule = rule
        self.trigger = trigger
        self.fields = fields
        self.before = before
        self.after: list[str] = []
        self.context_span: tuple[int, int] | None = None
        """Source offsets of the first and the last record of the context (the trigger when
        a side is empty); None when they are not all known."""
        self.context_complete = False
        self.count = 1
        self.first_us = trigger.timestamp_us
        self.last_us = trigger.timestamp_us
        self.original = trigger.original
        self.format = "event"
        self.level = rule.spec.severity.upper()
        self.logger = trigger.logger
        self.pid = trigger.pid
        self.process_name = trigger.process_name
        self.timestamp_us = trigger.timestamp_us
        self.error_codes = trigger.error_codes
        self.runtime_codes = trigger.runtime_codes
        self.framework_code = trigger.framework_code
        self.source = trigger.source
        self.offset = trigger.offset
        self.end_offset = trigger.end_offset
        first_line = trigger.message.split("\n", 1)[0]
        self.message = f"{rule.spec.title}: {first_line}" if first_line else rule.spec.title
        self.device = trigger.device
        self.rank = trigger.rank

    @property
    def severity(self) -> str:
        return self.rule.spec.severity

    @property
    def severity_rank(self) -> int:
        return SEVERITY_RANK[self.rule.spec.severity]

    def to_document(self) -> dict[str, Any]:
        spec = self.rule.spec
        doc = self.trigger.to_document()
        doc["message"] = self.message
        doc["log"]["level"] = self.level
        doc["event"] = {
            "kind": "alert",
            "severity": self.severity_rank,
            "original": self.original,
        }
        doc["rule"] = {
            "id": spec.id,
            "name": spec.title,
            "category": spec.category,
            "ruleset": self.rule.pack,
        }
        finding: dict[str, Any] = {
            "severity": spec.severity,
            "layer": spec.layer,
            "advice": spec.advice,
            "count": self.count,
            "symptom": spec.symptom,
            "context": {"before": self.before, "after": self.after},
        }
        if self.first_us is not None:
            finding["first"] = format_timestamp(self.first_us)
        if self.last_us is not None:
            finding["last"] = format_timestamp(self.last_us)
        if self.fields:
            finding["fields"] = self.fields
        doc["ascend"]["finding"] = finding
        doc["ascend"]["format"] = "event"
        return doc
