"""A queue bounded by bytes, between two threads of the agent.

`put` waits while the queue holds its bound (backpressure: the reader stops reading, the bytes
stay in the files), and gives up when the stop event is set. An item bigger than the bound is let
in when the queue is empty, so that it cannot wait forever.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class QueueStopped(Exception):
    """`put` gave up because the agent is stopping."""


class ByteQueue(Generic[T]):
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: deque[tuple[T, int]] = deque()
        self._bytes = 0
        self._changed = threading.Condition()

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item: T, size: int, stop: threading.Event | None = None) -> None:
        with self._changed:
            while self._items and self._bytes + size > self.max_bytes:
                if stop is not None and stop.is_set():
                    raise QueueStopped
                self._changed.wait(0.1)
            self._items.append((item, size))
            self._bytes += size
            self._changed.notify_all()

    def put_always(self, item: T) -> None:
        """Put a small control item whatever the fill (end markers, reload requests)."""
        with self._changed:
            self._items.append((item, 0))
            self._changed.notify_all()

    def get(self, timeout: float) -> T | None:
        """The next item, or None after `timeout` seconds without one."""
        with self._changed:
            if not self._items:
                self._changed.wait(timeout)
                if not self._items:
                    return None
            item, size = self._items.popleft()
            self._bytes -= size
            self._changed.notify_all()
            return item
