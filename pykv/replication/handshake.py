"""The replica's side of the handshake with its master, up to the PSYNC answer.

Redis's ``syncWithMaster`` in order: ``PING`` (``-NOAUTH``/``-NOPERM``/``-ERR operation not
permitted`` still mean the master is alive), ``AUTH [masteruser] masterauth`` when
``masterauth`` is set, ``REPLCONF listening-port`` (and ``ip-address`` from
``replica-announce-ip``), ``REPLCONF capa eof capa psync2`` (errors from older masters are
ignored), then ``PSYNC <replid> <offset>`` (``? -1`` without a history). The answer decides
between a partial resync (``+CONTINUE [<new replid>]``), a full one (``+FULLRESYNC <replid>
<offset>``), a later retry (``-NOMASTERLINK``, ``-LOADING``) and, for masters that know no
PSYNC, a plain ``SYNC``.
"""
from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import Any


class LinkError(Exception):
    """The link failed; the message is what Redis logs for the same failure."""


def encode_command(*args: bytes | str | int) -> bytes:
    """One command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, int):
            arg = b"%d" % arg
        elif isinstance(arg, str):
            arg = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


class MasterConnection:
    """An asyncio stream to the master with the few reads the handshake needs; every read
    waits at most ``timeout`` seconds (``repl-timeout``)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 timeout: float) -> None:
        self.reader = reader
        self.writer = writer
        self.timeout = timeout

    @classmethod
    async def open(cls, host: str, port: int, timeout: float,
                   tls: ssl.SSLContext | None = None) -> MasterConnection:
        """Connect (over TLS with ``tls``: ``tls-replication yes``)."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, limit=1 << 20, ssl=tls), timeout)
        except (TimeoutError, OSError) as exc:  # ssl.SSLError is an OSError
            raise LinkError(f"Error condition on socket for SYNC: {_reason(exc)}") from None
        return cls(reader, writer, timeout)

    def send(self, *args: bytes | str | int) -> None:
        self.writer.write(encode_command(*args))

    async def readline(self) -> bytes:
        """One reply line without its CRLF (empty for the master's keep-alive newlines)."""
        try:
            line = await asyncio.wait_for(self.reader.readline(), self.timeout)
        except TimeoutError:
            raise LinkError("Timeout connecting to the MASTER...") from None
        except (OSError, ValueError) as exc:
            raise LinkError(f"Error reading from MASTER: {_reason(exc)}") from None
        if not line:
            raise LinkError("Master closed the connection")
        return line.rstrip(b"\r\n")

    async def command(self, *args: bytes | str | int) -> bytes:
        self.send(*args)
        return await self.readline()

    async def read_some(self, limit: int) -> bytes:
        try:
            data = await asyncio.wait_for(self.reader.read(limit), self.timeout)
        except TimeoutError:
            raise LinkError("Timeout receiving bulk data from MASTER... If the problem "
                            "persists try to set the 'repl-timeout' parameter in "
                            "redis.conf to a larger value.") from None
        except OSError as exc:
            raise LinkError(f"Error reading from MASTER: {_reason(exc)}") from None
        if not data:
            raise LinkError("Master closed the connection")
        return data

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:  # noqa: BLE001 - closing a broken transport
            pass


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


@dataclass
class PsyncAnswer:
    """``kind`` is ``full``, ``continue``, ``retry`` or ``unsupported``."""

    kind: str
    replid: str = ""
    offset: int = -1
    line: bytes = b""


async def handshake(conn: MasterConnection, config: Any, port: int) -> None:
    """PING, AUTH, REPLCONF: everything before PSYNC; LinkError on a refusal."""
    reply = await _reply(conn, "PING")
    if reply.startswith(b"-") and not reply.startswith(
            (b"-NOAUTH", b"-NOPERM", b"-ERR operation not permitted")):
        raise LinkError(f"Error reply to PING from master: '{_text(reply)}'")
    if config.masterauth:
        args = ["AUTH", config.masteruser, config.masterauth] if config.masteruser else \
            ["AUTH", config.masterauth]
        reply = await _reply(conn, *args)
        if reply.startswith(b"-"):
            raise LinkError(f"Unable to AUTH to MASTER: {_text(reply)}")
    announce_port = config.replica_announce_port or port
    await _reply(conn, "REPLCONF", "listening-port", announce_port)  # errors: ignored
    if config.replica_announce_ip:
        await _reply(conn, "REPLCONF", "ip-address", config.replica_announce_ip)
    await _reply(conn, "REPLCONF", "capa", "eof", "capa", "psync2")


async def psync(conn: MasterConnection, replid: str, offset: int,
                failover: bool = False) -> PsyncAnswer:
    """Send PSYNC (with ``FAILOVER`` when this old master hands over to ``conn``'s end)
    and read its answer (skipping the master's keep-alive newlines)."""
    if failover:
        conn.send("PSYNC", replid, offset, "FAILOVER")
    else:
        conn.send("PSYNC", replid, offset)
    line = await _reply(conn)
    if line.startswith(b"+FULLRESYNC"):
        words = line.split()
        if len(words) < 3:
            return PsyncAnswer("full", "", -1, line)  # Redis then forgets the master's id
        return PsyncAnswer("full", words[1].decode(), int(words[2]), line)
    if line.startswith(b"+CONTINUE"):
        words = line.split()
        new_id = words[1].decode() if len(words) > 1 and len(words[1]) == 40 else ""
        return PsyncAnswer("continue", new_id, -1, line)
    if line.startswith((b"-NOMASTERLINK", b"-LOADING")):
        return PsyncAnswer("retry", line=line)
    if line.startswith(b"-ERR") or line.startswith(b"-"):
        return PsyncAnswer("unsupported", line=line)
    raise LinkError(f"Unexpected reply to PSYNC from master: {_text(line)}")


async def _reply(conn: MasterConnection, *args: Any) -> bytes:
    if args:
        conn.send(*args)
    while True:
        line = await conn.readline()
        if line:
            return line


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace")
