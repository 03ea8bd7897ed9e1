"""A full resynchronisation on the replica: receive the master's RDB, then load it.

The payload comes as ``$<length>\\r\\n`` and that many bytes, or (a diskless master, for a
replica that said ``capa eof``) as ``$EOF:<40 random bytes>\\r\\n``, the RDB, and the same
40 bytes again. Before it the master may send bare newlines to keep the link alive while
its BGSAVE runs. Socket reads are incremental (the loop serves clients in between, with the
old data: stale serving); the file goes to ``temp-<unixtime>.<pid>.rdb`` in ``dir`` and is
renamed over ``dbfilename`` once complete (``repl-diskless-load disabled``, Redis's
default), or stays in memory (``swapdb``; ``on-empty-db`` while the dataset is empty).
Loading then flushes the old data and parses the RDB in steps of about a thousand keys
while clients get ``-LOADING``, as the start-up load does.
"""
from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from typing import Any

from pykv.replication.handshake import LinkError, MasterConnection
from pykv.storage.keyspace import DATASET_FIELDS
from pykv.storage.rdb.encoding import RdbFormatError
from pykv.storage.rdb.file import fsync_dir

log = logging.getLogger("pykv")

CHUNK = 1 << 16
EOF_MARK_LEN = 40


class Transfer:
    """Progress of the payload being received (INFO's ``master_sync_*`` rows)."""

    def __init__(self) -> None:
        self.size = -1  # until the header; 0 for an EOF-marked payload, as Redis has it
        self.read = 0
        self.last_io = time.time()


def use_diskless_load(server: Any) -> bool:
    """Redis's useDisklessLoad."""
    mode = server.config.repl_diskless_load
    return mode == "swapdb" or (mode == "on-empty-db" and
                                not any(len(db.data) for db in server.dbs))


async def receive(conn: MasterConnection, server: Any, transfer: Transfer) -> bytes:
    """Read the bulk payload; returns the RDB bytes (written to disk first when loading
    from disk: then the file is in place as ``dbfilename``)."""
    while True:
        line = await conn.readline()
        transfer.last_io = time.time()
        if line:
            break
    if not line.startswith(b"$"):
        if line.startswith(b"-"):
            raise LinkError(f"MASTER aborted replication with an error: "
                            f"{line[1:].decode('utf-8', 'replace')}")
        raise LinkError(f"Bad protocol from MASTER, the first byte is not '$' (we received "
                        f"'{line.decode('utf-8', 'replace')}'), are you sure the host and "
                        f"port are right?")
    mark = b""
    if line.startswith(b"$EOF:") and len(line) >= 5 + EOF_MARK_LEN:
        mark = line[5:5 + EOF_MARK_LEN]
        transfer.size = 0
    else:
        try:
            transfer.size = int(line[1:])
        except ValueError:
            raise LinkError("Bad protocol from MASTER: bad bulk length") from None
    diskless = use_diskless_load(server)
    where = "to disk" if not diskless else "to parser" if mark else "to memory"
    if mark:
        log.info("MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF %s",
                 where)
    else:
        log.info("MASTER <-> REPLICA sync: receiving %d bytes from master %s",
                 transfer.size, where)
    data = bytearray()
    tmp_path = ""
    fh = None
    if not diskless:
        tmp_path = os.path.join(server.config.dir,
                                f"temp-{int(time.time())}.{os.getpid()}.rdb")
        fh = open(tmp_path, "wb")
    try:
        tail = b""
        while True:
            want = CHUNK if mark else min(CHUNK, transfer.size - transfer.read)
            if want <= 0:
                break
            chunk = await conn.read_some(want)
            transfer.read += len(chunk)
            transfer.last_io = time.time()
            if mark:
                tail = (tail + chunk)[-EOF_MARK_LEN:]
            if fh is not None:
                fh.write(chunk)
            else:
                data += chunk
            if mark and tail == mark:
                break
        if fh is not None:
            if mark:
                fh.truncate(transfer.read - EOF_MARK_LEN)
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
            fh = None
            with open(tmp_path, "rb") as src:
                payload = src.read()
            final = os.path.join(server.config.dir, server.config.dbfilename)
            server.persistence.kill_child()  # as Redis: its snapshot would be stale
            os.replace(tmp_path, final)
            fsync_dir(server.config.dir)
            tmp_path = ""
            return payload
        if mark:
            del data[-EOF_MARK_LEN:]
        return bytes(data)
    finally:
        if fh is not None:
            fh.close()
        if tmp_path:
            try:
                os.unlink(tmp_path)
            except OSError:
                pass


def stash_dbs(server: Any) -> list[dict[str, Any]]:
    """``repl-diskless-load swapdb``: keep the old dataset aside until the new one loaded."""
    return [{slot: getattr(db, slot) for slot in DATASET_FIELDS} for db in server.dbs]


def restore_dbs(server: Any, stash: list[dict[str, Any]]) -> None:
    """A failed load under swapdb: the old dataset comes back."""
    log.warning("Failed trying to load the MASTER synchronization DB from socket, "
                "restoring the old dataset")
    for db, slots in zip(server.dbs, stash, strict=True):
        for slot, value in slots.items():
            setattr(db, slot, value)


def flush_old_data(server: Any) -> None:
    """Redis's emptyData before a full load: every database and the function libraries
    (``replica-lazy-flush`` frees in the background in Redis; here dropping the dicts is
    all the freeing there is)."""
    log.info("MASTER <-> REPLICA sync: Flushing old data")
    for db in server.dbs:
        db.clear()
    functions = getattr(server, "functions", None)
    if functions is not None and hasattr(functions, "flush"):
        functions.flush()


async def load(server: Any, payload: bytes) -> dict[bytes, bytes]:
    """Load ``payload`` into the (flushed) server while clients get ``-LOADING``; returns
    the RDB's AUX fields. RdbFormatError on a bad payload (the data is then lost, as in
    Redis)."""
    log.info("MASTER <-> REPLICA sync: Loading DB in memory")
    steps = server.persistence.payload_steps(payload, replace=True, skip_expired=False)
    server.loading = True
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as the start-up load: millions of new objects that all live on
    try:
        while True:
            try:
                next(steps)
            except StopIteration as done:
                contents = done.value
                break
            await asyncio.sleep(0)
    finally:
        server.loading = False
        gc.freeze()
        if gc_was_enabled:
            gc.enable()
    return contents.aux


__all__ = ["RdbFormatError", "Transfer", "flush_old_data", "load", "receive",
           "use_diskless_load"]
