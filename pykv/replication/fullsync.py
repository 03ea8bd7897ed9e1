"""Sending the snapshot of a full resynchronisation to replicas.

Disk-based (``repl-diskless-sync no``, or a replica without ``capa eof``): a BGSAVE writes
``dbfilename`` and each replica then gets it as one bulk, ``$<len>\\r\\n<bytes>``
(``BulkSender``). Diskless: a forked child serialises its copy-on-write view into a pipe
and the parent relays it to every replica of that sync framed as
``$EOF:<40 random chars>\\r\\n<rdb><the same 40 chars>`` (``DisklessTransfer``), as
Redis's ``rdbSaveToSlavesSockets``/``rdbPipeReadHandler`` do. Both pace themselves on the
transports' pending bytes, so a slow replica never holds the whole snapshot in memory twice.
"""
from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("pykv")

CHUNK = 1 << 16
HIGH_WATER = 4 << 20  # pause reading/sending while a transport holds this much


def _pending(client: Any) -> int:
    conn = client.conn
    return conn.pending_write_bytes() if conn is not None else 0


class BulkSender:
    """Sends a saved RDB file to one replica as ``$<len>\\r\\n`` and the bytes."""

    def __init__(self, loop: Any, client: Any, path: str, done: Callable[[bool], None]) -> None:
        self.loop = loop
        self.client = client
        self.done = done
        try:
            self.fh = open(path, "rb")  # noqa: SIM115 - closed when the transfer ends
            size = os.fstat(self.fh.fileno()).st_size
        except OSError as exc:
            log.warning("SYNC failed. Can't open/stat DB after BGSAVE: %s", exc.strerror)
            self.fh = None
            loop.call_soon(done, False)
            return
        client.conn.write(b"$%d\r\n" % size)
        self._step()

    def _step(self) -> None:
        client = self.client
        if client.closed or self.fh is None:
            self._finish(False)
            return
        while _pending(client) < HIGH_WATER:
            data = self.fh.read(CHUNK)
            if not data:
                self._finish(True)
                return
            client.net_out += len(data)
            client.conn.write(data)
        self.loop.call_later(0.002, self._step)

    def _finish(self, ok: bool) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None
        self.done(ok)


class DisklessTransfer:
    """A forked child writing the RDB into a pipe; the parent relays it to ``clients``."""

    def __init__(self, loop: Any, clients: list[Any], snapshot: Callable[[], bytes],
                 done: Callable[[DisklessTransfer, bool], None]) -> None:
        self.loop = loop
        self.clients = list(clients)
        self.done = done
        self.mark = os.urandom(20).hex().encode()
        self.pid = -1
        self.fd = -1
        self.finished = False
        self.started = time.time()
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            log.warning("Can't save in background: fork: %s", exc.strerror)
            raise
        if pid == 0:  # the child: write the snapshot to the pipe and leave
            code = 1
            try:
                os.close(read_fd)
                for sig in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(sig, signal.SIG_IGN)
                signal.signal(signal.SIGUSR1, signal.SIG_DFL)
                view = memoryview(snapshot())
                while view:
                    view = view[os.write(write_fd, view):]
                code = 0
            except BaseException:  # noqa: BLE001 - the child must always exit
                pass
            finally:
                os._exit(code)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        self.pid = pid
        self.fd = read_fd
        log.info("Starting BGSAVE for SYNC with target: replicas sockets")
        for client in self.clients:
            client.conn.write(b"$EOF:" + self.mark + b"\r\n")
        loop.add_reader(read_fd, self._on_readable)
        self._reading = True

    def _alive(self) -> list[Any]:
        self.clients = [c for c in self.clients if not c.closed]
        return self.clients

    def _on_readable(self) -> None:
        try:
            data = os.read(self.fd, CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        clients = self._alive()
        if not data:
            self._end()
            return
        for client in clients:
            client.net_out += len(data)
            client.conn.write(data)
        if not clients:  # nobody left to send to: stop the child (Redis does the same)
            self.abort()
            return
        if any(_pending(c) >= HIGH_WATER for c in clients):
            self.loop.remove_reader(self.fd)
            self._reading = False
            self.loop.call_later(0.002, self._resume)

    def _resume(self) -> None:
        if self.finished:
            return
        clients = self._alive()
        if clients and any(_pending(c) >= HIGH_WATER for c in clients):
            self.loop.call_later(0.002, self._resume)
            return
        self._reading = True
        self.loop.add_reader(self.fd, self._on_readable)

    def _end(self) -> None:
        ok = self._reap(block=True)
        for client in self._alive():
            if ok:
                client.conn.write(self.mark)
        self._close()
        self.done(self, ok)

    def _reap(self, block: bool) -> bool:
        if self.pid <= 0:
            return False
        try:
            _pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return False
        self.pid = -1
        return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

    def _close(self) -> None:
        self.finished = True
        if self.fd >= 0:
            if self._reading:
                self.loop.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = -1

    def abort(self) -> None:
        """Stop the child (no replica left, or the server shuts down)."""
        if self.finished:
            return
        if self.pid > 0:
            try:
                os.kill(self.pid, signal.SIGUSR1)
            except OSError:
                pass
            self._reap(block=True)
        self._close()
        self.done(self, False)
