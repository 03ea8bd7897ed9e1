"""The latency monitor's state: per event, the last samples and the all-time maximum.

When ``latency-monitor-threshold`` is set (ms), anything slower records a sample under an
event name ("command", "fast-command", "expire-cycle", ...). As in Redis each event keeps
its last 160 samples, one per second at most (a second's samples merge to their maximum),
plus its all-time maximum. The server records; ``pykv.commands.latency`` reports.
"""
from __future__ import annotations

import time
from collections import deque

HISTORY_LEN = 160


class EventSeries:
    """The samples of one event: ``(unix_seconds, ms)`` pairs, newest last."""

    __slots__ = ("samples", "max")

    def __init__(self) -> None:
        self.samples: deque[list[int]] = deque(maxlen=HISTORY_LEN)
        self.max = 0

    def add(self, when: int, ms: int) -> None:
        if self.samples and self.samples[-1][0] == when:
            last = self.samples[-1]
            last[1] = max(last[1], ms)
        else:
            self.samples.append([when, ms])
        self.max = max(self.max, ms)


class LatencyMonitor:
    """Event name -> samples (the server owns one as ``server.latency``)."""

    def __init__(self) -> None:
        self.events: dict[str, EventSeries] = {}

    def add_sample(self, event: str, ms: int) -> None:
        series = self.events.get(event)
        if series is None:
            series = self.events[event] = EventSeries()
        series.add(int(time.time()), ms)

    def reset(self, names: list[str] | None = None) -> int:
        if names is None:
            count = len(self.events)
            self.events.clear()
            return count
        return sum(1 for name in names if self.events.pop(name, None) is not None)
