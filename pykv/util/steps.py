"""Loaders are generators that yield between steps (so the event loop can serve ``-LOADING``
in between); ``run_to_end`` runs one in one go and returns its result."""
from __future__ import annotations

from collections.abc import Generator
from typing import Any


def run_to_end(steps: Generator[Any, None, Any]) -> Any:
    """Exhaust ``steps`` and return the value it returned."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
