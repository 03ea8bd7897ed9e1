"""A pykv server in the test's own process, on a fresh uvloop loop (for tests that look at
the transport's internals: the loop's ReadMux, an RDMA listener's connections)."""
from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Awaitable, Callable
from typing import Any


def serve_on_uvloop(args: Callable[[str], list[str]],
                    scenario: Callable[[Any, str], Awaitable[None]]) -> None:
    """Build a server from ``args(tmpdir)`` (plus no saving, and ``tmpdir`` as its dir),
    start it, await ``scenario(server, tmpdir)``, then stop it and close the loop."""
    import uvloop

    from pykv.assemble import build_server
    from pykv.config.loader import load_config

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            server = build_server(load_config([*args(tmp), "--save", "", "--dir", tmp]))
            await server.start()
            try:
                await scenario(server, tmp)
            finally:
                server.stop()
                await asyncio.sleep(0.05)

    loop = uvloop.new_event_loop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()


def unix_path(tmp: str) -> str:
    return os.path.join(tmp, "s.sock")
