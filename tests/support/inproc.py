"""Commands run in-process: a ``Client`` without a connection, its reply bytes read back."""
from __future__ import annotations

from pykv.server.client import Client


def run(client: Client, *args: bytes | str | int) -> bytes:
    """Execute one command; return the RESP reply bytes it wrote (in the client's protocol)."""
    client.out.clear()
    client.execute([a if isinstance(a, bytes) else str(a).encode() for a in args])
    return bytes(client.out)
