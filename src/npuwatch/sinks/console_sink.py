"""The console sink: prints journal entries as they are committed.

Text mode prints the original lines (what `tail -F` would have shown, from every file), with the
characters a terminal would act on shown as escapes (terminal.visible); JSON mode prints one ECS
document per line, exact. Events are printed as one line each (text) or their
documents (JSON). It prints what arrives from the agent's first start on, and at a stop it
prints everything committed before leaving.

A refusing output (stdout redirected to a full disk) stops nothing: the page is printed again
from the cursor after a pause, so a line may be printed twice but none is skipped.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from functools import partial
from typing import Literal, TextIO

from npuwatch.config import Config
from npuwatch.journal.block import decode_block
from npuwatch.journal.documents import to_records
from npuwatch.metrics import SelfMetrics
from npuwatch.sinks.console import to_json_line
from npuwatch.sinks.event_text import event_line
from npuwatch.sinks.sink import Page, Pause, SinkContext, SinkPlan, SinkTraits
from npuwatch.terminal import unescaped, visible

CURSOR_NAME = "console"

log = logging.getLogger(__name__)


class ConsoleSink:
    """Prints pages of the journal to `out`."""

    name = CURSOR_NAME
    traits = SinkTraits(
        from_the_end=True,
        drains_at_stop=True,
        repeated_after_restart="what was printed since its last write is printed again",
    )

    def __init__(
        self,
        out: TextIO,
        output: Literal["text", "json"] = "text",
        events_only: bool = False,
    ) -> None:
        self._json = output == "json"
        # JSON lines stay exact (JSON escapes the C0 controls itself); text is made visible.
        self._out = unescaped(out) if self._json else out
        if events_only:
            self.traits = dataclasses.replace(ConsoleSink.traits, reads_blocks=False)

    def deliver(self, page: Page, pause: Pause) -> None:
        refused = False
        while True:
            try:
                self._print(page)
            except OSError as error:
                if not refused:
                    log.error(
                        "cannot print to the console (%s): printing again from the last line "
                        "printed once it can (a line may be printed twice)",
                        error.strerror or error,
                    )
                refused = True
                pause()
                continue
            if refused:
                log.warning("the console takes output again")
            return

    def _print(self, page: Page) -> None:
        for _, block in page.blocks:
            records = decode_block(block.payload)
            if self._json:
                for record in to_records(records, block.source):
                    self._out.write(to_json_line(record) + "\n")
            else:
                for stored in records:
                    self._out.write(visible(stored.original) + "\n")
        for _, _, document in page.events:
            self._out.write((document if self._json else event_line(document)) + "\n")
        self._out.flush()


def plan_console_sink(config: Config, context: SinkContext) -> SinkPlan | None:
    """The console sink when [sinks.console] or `--console` asks for it."""
    section = config.sinks.console
    if context.console is None and not section.enabled:
        return None
    what = "events" if section.events_only else "records and events"
    return SinkPlan(
        CURSOR_NAME,
        f"{what} as {section.format} on standard output",
        partial(_open_console, context.console, section.format, section.events_only),
    )


def _open_console(
    out: TextIO | None,
    output: Literal["text", "json"],
    events_only: bool,
    metrics: SelfMetrics,
) -> ConsoleSink:
    # sys.stdout looked up when the agent starts, not when the module is imported: tests (and
    # a redirected service) replace it.
    return ConsoleSink(out if out is not None else sys.stdout, output, events_only)
