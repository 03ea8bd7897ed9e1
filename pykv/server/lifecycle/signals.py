"""Signals as redis-server 7.0 handles them.

SIGTERM and SIGINT log Redis's signal-handler line and shut down with the flags of
``shutdown-on-sigterm`` / ``shutdown-on-sigint`` (``default``: save if save points exist;
``save``, ``nosave``, ``now``, ``force``). A second SIGINT while a shutdown is under way exits
at once with status 1 ("You insist..."). SIGHUP is ignored, as in Redis 7.0 (the logfile is
reopened for every line anyway).
"""
from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

from pykv.server.lifecycle.redislog import log_from_signal_handler

_NAMES = {signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT"}


def shutdown_flags(words: Any) -> dict[str, bool | None]:
    """``shutdown-on-sig*`` words -> ``prepare_for_shutdown`` keyword arguments."""
    words = set(words or ())
    save = True if "save" in words else False if "nosave" in words else None
    return {"save": save, "force": "force" in words, "now": "now" in words}


def install(loop: asyncio.AbstractEventLoop, server: Any) -> None:
    config = server.config

    def on_signal(signum: int) -> None:
        if server.shutdown_asap and signum == signal.SIGINT:
            log_from_signal_handler("You insist... exiting now.", config)
            try:
                os.unlink(os.path.join(config.dir, f"temp-{os.getpid()}.rdb"))
            except OSError:
                pass
            os._exit(1)
        if server.loading:
            text = "Received shutdown signal during loading, scheduling shutdown."
        else:
            text = f"Received {_NAMES.get(signum, 'shutdown signal,')} scheduling shutdown..."
        log_from_signal_handler(text, config)
        server.shutdown_asap = True
        loop.call_soon(server.shutdown_on_signal, signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def flags_for(config: Any, signum: int) -> dict[str, bool | None]:
    words = config.shutdown_on_sigint if signum == signal.SIGINT else config.shutdown_on_sigterm
    return shutdown_flags(words)
