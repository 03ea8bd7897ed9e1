"""``oom-score-adj`` / ``oom-score-adj-values``: the kernel's OOM-killer preference.

Written to ``/proc/self/oom_score_adj`` as Redis does: the master's value at start-up and
on CONFIG SET, the background child's value in forked children (BGSAVE, AOF rewrite);
``relative`` (alias ``yes``) adds the value the process started with, ``absolute`` uses
the value as is, and ``no`` after a change puts the original value back.
"""
from __future__ import annotations

import logging
import os
from typing import Any

log = logging.getLogger("pykv")

PATH = "/proc/self/oom_score_adj"
MASTER, REPLICA, BGCHILD = 0, 1, 2


class OomScore:
    def __init__(self, config: Any, path: str = PATH) -> None:
        self.config = config
        self.path = path
        self.base: int | None = None  # the score before pykv changed it

    def apply(self, process_class: int = MASTER) -> bool:
        mode = str(self.config.oom_score_adj)
        if mode != "no":
            if self.base is None:
                try:
                    with open(self.path) as fh:
                        self.base = int(fh.read().strip() or 0)
                except (OSError, ValueError) as exc:
                    log.warning("Unable to read oom_score_adj: %s",
                                getattr(exc, "strerror", None) or exc)
                    return False
            value = int(self.config.oom_score_adj_values[process_class])
            if mode in ("yes", "relative"):
                value += self.base
            value = max(-1000, min(1000, value))
        elif self.base is not None:
            value, self.base = self.base, None
        else:
            return True
        try:
            with open(self.path, "w") as fh:
                fh.write(f"{value}\n")
        except OSError as exc:
            log.warning("Unable to write oom_score_adj: %s", exc.strerror)
            return False
        return True


def install(config: Any) -> OomScore:
    """Apply the master's score now, follow CONFIG SET, and give forked children theirs."""
    score = OomScore(config)
    score.apply(MASTER)
    for name in ("oom-score-adj", "oom-score-adj-values"):
        config.on_change(name, lambda _value: score.apply(MASTER))
    os.register_at_fork(after_in_child=lambda: score.apply(BGCHILD))
    return score
