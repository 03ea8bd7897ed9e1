# cython: language_level=3
"""The per-record loop of an RDB file load, compiled: it runs once per stored key.

``parse_body(r, contents, config, integrity, on_key, on_aux)`` reads records from the
``RdbReader`` ``r`` up to EOF: database selection, AUX fields (to ``contents.aux`` and
``on_aux``), functions, expiry and LRU idle times, and every key, whose value
``load_object`` reads (strings are read here directly) and which ``on_key`` stores. It
yields the bytes consumed every ``LOAD_STEP_KEYS`` keys (see ``file.parse_steps``).
"""
import logging

from pykv.storage.rdb._rio cimport RdbReader

from pykv.storage.rdb._rio import RdbFormatError
from pykv.storage.rdb.integrity import EmptyKey, RdbLoadAborted
from pykv.storage.rdb.objects import load_object

DEF TYPE_STRING = 0
DEF OP_FUNCTION2 = 245
DEF OP_FUNCTION_PRE_GA = 246
DEF OP_MODULE_AUX = 247
DEF OP_IDLE = 248
DEF OP_FREQ = 249
DEF OP_AUX = 250
DEF OP_RESIZEDB = 251
DEF OP_EXPIRETIME_MS = 252
DEF OP_EXPIRETIME = 253
DEF OP_SELECTDB = 254
DEF OP_EOF = 255

LOAD_STEP_KEYS = 1024

log = logging.getLogger("pykv")


cdef long long _le(RdbReader r, int width) except? -1:
    """A little-endian signed integer of ``width`` bytes (4 or 8)."""
    cdef bytes raw = r.take(width)
    cdef const unsigned char *p = raw
    cdef unsigned long long u = 0
    cdef int i
    for i in range(width - 1, -1, -1):
        u = (u << 8) | p[i]
    if width == 4:
        return <int><unsigned int>u
    return <long long>u


cdef class KeyStore:
    """The per-key callback of an RDB load (``on_key`` of ``parse_body``), compiled: stores
    ``key`` in database ``db_id`` of ``dbs`` (its ``data``/``expires`` mappings, the
    cluster slot index, the memory accounting's dirty set) and counts it in the owner's
    ``loaded_keys``/``expired_keys``; see ``RdbPersistence.key_loader``."""

    cdef list dbs
    cdef object owner, config, delay
    cdef bint replace, skip_expired
    cdef long long now_ms

    def __init__(self, owner, list dbs, config, bint replace, bint skip_expired,
                 long long now_ms, delay):
        self.owner = owner
        self.dbs = dbs
        self.config = config
        self.replace = replace
        self.skip_expired = skip_expired
        self.now_ms = now_ms
        self.delay = delay

    def __call__(self, long long db_id, bytes key, value, long long expire_ms, long long idle):
        self.store(db_id, key, value, expire_ms)

    cdef int store(self, long long db_id, bytes key, value, long long expire_ms) except -1:
        cdef Py_ssize_t n = len(self.dbs)
        if db_id >= n:
            raise RdbFormatError(f"FATAL: Data file was created with a Redis server "
                                 f"configured to handle more than {n} "
                                 f"databases. Exiting")
        owner = self.owner
        if self.skip_expired and 0 <= expire_ms < self.now_ms:
            owner.expired_keys += 1
            return 0
        db = self.dbs[db_id]
        data = db.data
        if not self.replace and key in data:
            raise RdbFormatError(f"Duplicate key '{key!r}' found in RDB file")
        data[key] = value
        slots = db.slot_index
        if slots is not None:  # cluster mode: the keys per slot
            slots.add(key)
        db.mem_dirty.add(key)
        if expire_ms >= 0:
            db.expires[key] = expire_ms
        owner.loaded_keys += 1
        delay = self.config.key_load_delay
        if delay:
            self.delay(delay)
        return 0


def parse_body(RdbReader r, contents, config, integrity, on_key, on_aux):
    cdef long long db = 0, expire = -1, idle = -1, keys = 0
    cdef int op
    cdef bint empty
    cdef bytes key
    # the usual callback is called straight in C; any other through Python
    cdef KeyStore store = on_key if isinstance(on_key, KeyStore) else None
    while True:
        op = r.byte()
        if op < OP_FUNCTION2:
            key = r.string()
            empty = False
            if op == TYPE_STRING:
                value = r.string()
            else:
                try:
                    value = load_object(r, op, config, integrity)
                except EmptyKey:
                    empty = True
                    contents.empty_keys += 1
                    if contents.empty_keys <= 10:
                        log.warning("rdbLoadObject skipping empty key: %s",
                                    key.decode("utf-8", "replace"))
            if not empty:
                try:
                    if store is not None:
                        store.store(db, key, value, expire)
                    else:
                        on_key(db, key, value, expire, idle)
                except RdbFormatError as exc:
                    raise RdbLoadAborted(str(exc)) from None
            expire = -1
            idle = -1
            keys += 1
            if keys % LOAD_STEP_KEYS == 0:
                yield r.pos
        elif op == OP_EOF:
            return
        elif op == OP_SELECTDB:
            db = r.length()
        elif op == OP_RESIZEDB:
            r.length()
            r.length()
        elif op == OP_EXPIRETIME_MS:
            expire = _le(r, 8)
        elif op == OP_EXPIRETIME:
            expire = _le(r, 4) * 1000
        elif op == OP_AUX:
            key = r.string()
            value = contents.aux[key] = r.string()
            on_aux(key, value)
        elif op == OP_IDLE:
            idle = r.length()
        elif op == OP_FREQ:
            r.byte()  # an LFU counter: pykv keeps none
        elif op == OP_FUNCTION2:
            contents.functions.append(r.string())
        elif op == OP_FUNCTION_PRE_GA:
            raise RdbFormatError("Pre-release function format not supported")
        else:  # OP_MODULE_AUX
            raise RdbFormatError("The RDB file contains AUX module data pykv can't load")

