"""HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.

HLLs are string values in Redis's own format (``pykv.storage.hll``), edited in place as a
``bytearray`` so a value copied with GET/SET between pykv and Redis keeps working.
"""
from __future__ import annotations

import random
from typing import Any

from pykv import errors
from pykv.commands.registry import command
from pykv.protocol import OK, ErrorReply, SimpleString
from pykv.server.notify import notify
from pykv.storage import hll


def _get_hll(db: Any, key: bytes) -> bytes | bytearray | None:
    """The HLL string at ``key`` (None if missing); Redis's type and header checks."""
    value = db.get(key)
    if value is None:
        return None
    if type(value) is not bytes and type(value) is not bytearray:
        raise errors.WRONGTYPE
    if not hll.is_hll(value):
        raise hll.INVALID_HLL
    return value


def _writable(db: Any, key: bytes, value: bytes | bytearray) -> bytearray:
    """The value as a bytearray stored at ``key`` (Redis's dbUnshareStringValue)."""
    if type(value) is bytearray:
        return value
    buf = bytearray(value)
    db.unshare(key, buf)
    return buf


@command("pfadd")
def pfadd(c, argv):
    db = c.db
    key = argv[1]
    value = _get_hll(db, key)
    updated = 0
    if value is None:
        buf = hll.new_hll()
        db.set(key, buf)
        updated = 1
    else:
        buf = _writable(db, key, value)
    max_bytes = c.server.config.hll_sparse_max_bytes
    add = hll.add
    for element in argv[2:]:
        updated += add(buf, element, max_bytes)
    if updated:
        hll.invalidate_cache(buf)
        db.modified(key)
        notify(c.server, "$", b"pfadd", key, db.id)
        c.server.dirty += updated
    return 1 if updated else 0


@command("pfcount")
def pfcount(c, argv):
    db = c.db
    if len(argv) > 2:
        registers = bytearray(hll.REGISTERS)
        for key in argv[1:]:
            value = _get_hll(db, key)
            if value is not None and not hll.merge_into(registers, value):
                raise hll.CORRUPTED_HLL
        return hll.count_registers(registers)
    key = argv[1]
    value = _get_hll(db, key)
    if value is None:
        return 0
    buf = _writable(db, key, value)
    card = hll.cached_count(buf)
    if card is None:
        card = hll.count(buf)
        hll.set_cached_count(buf, card)
        db.modified(key)
        c.server.dirty += 1
    return card


@command("pfmerge")
def pfmerge(c, argv):
    db = c.db
    registers = bytearray(hll.REGISTERS)
    use_dense = False
    for key in argv[1:]:
        value = _get_hll(db, key)
        if value is None:
            continue
        if value[4] == hll.DENSE:
            use_dense = True
        if not hll.merge_into(registers, value):
            raise hll.CORRUPTED_HLL
    dst = argv[1]
    value = db.get(dst)
    if value is None:
        buf = hll.new_hll()
        db.set(dst, buf)
    else:
        buf = _writable(db, dst, value)
    if use_dense and not hll.sparse_to_dense(buf):
        raise hll.CORRUPTED_HLL
    hll.store_registers(buf, registers, c.server.config.hll_sparse_max_bytes)
    hll.invalidate_cache(buf)
    db.modified(dst)
    notify(c.server, "$", b"pfadd", dst, db.id)
    c.server.dirty += 1
    return OK


@command("pfdebug")
def pfdebug(c, argv):
    sub = argv[1].lower()
    db = c.db
    key = argv[2]
    value = _get_hll(db, key)
    if value is None:
        raise ErrorReply(b"ERR The specified key does not exist")
    buf = _writable(db, key, value)
    if sub == b"getreg":
        if buf[4] == hll.SPARSE:
            if not hll.sparse_to_dense(buf):
                raise hll.CORRUPTED_HLL
            c.server.dirty += 1
        return hll.dense_registers(buf)
    if sub == b"decode":
        if buf[4] != hll.SPARSE:
            raise ErrorReply(b"ERR HLL encoding is not sparse")
        return hll.decode_sparse(buf)
    if sub == b"encoding":
        return SimpleString(b"dense" if buf[4] == hll.DENSE else b"sparse")
    if sub == b"todense":
        if buf[4] == hll.SPARSE:
            if not hll.sparse_to_dense(buf):
                raise hll.CORRUPTED_HLL
            c.server.dirty += 1
            return 1
        return 0
    return ErrorReply(b"ERR Unknown PFDEBUG subcommand '" + argv[1] + b"'")


@command("pfselftest")
def pfselftest(c, argv):
    """A quicker cousin of Redis's self test: sparse and dense paths must agree exactly."""
    rng = random.Random()
    sparse = hll.new_hll()
    dense = hll.new_hll()
    hll.sparse_to_dense(dense)
    for i in range(2000):
        element = b"%d-%d" % (i, rng.getrandbits(32))
        a = hll.add(sparse, element, 1 << 30)
        b = hll.add(dense, element, 1 << 30)
        if a != b:
            return ErrorReply(b"ERR TESTFAILED sparse and dense representations disagree")
    if hll.count(sparse) != hll.count(dense):
        return ErrorReply(b"ERR TESTFAILED sparse and dense counts differ")
    hll.sparse_to_dense(sparse)
    if bytes(sparse[16:]) != bytes(dense[16:]):
        return ErrorReply(b"ERR TESTFAILED sparse to dense conversion differs")
    return OK
