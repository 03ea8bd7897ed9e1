"""Persistence commands: SAVE, BGSAVE, BGREWRITEAOF, DUMP, RESTORE, and DEBUG RELOAD,
LOADAOF and AOF-FLUSH-SLEEP."""
from __future__ import annotations

import logging
import os

from pykv import errors
from pykv.commands.args import to_int
from pykv.commands.debug import register_subcommand
from pykv.commands.registry import command
from pykv.protocol import OK, ErrorReply, SimpleString
from pykv.server.notify import notify
from pykv.storage.aof_manifest import AofLoadError
from pykv.storage.aof_manifest import atoi as to_int_prefix
from pykv.storage.rdb.encoding import RdbFormatError
from pykv.storage.rdb.file import internal_error
from pykv.storage.rdb.integrity import Integrity
from pykv.storage.rdb.objects import dump_payload, restore_payload, verify_payload

log = logging.getLogger("pykv")
VERBOSE = 15  # Redis's "verbose" log level (pykv.main names it)

BGSAVE_STARTED = SimpleString(b"Background saving started")
BGSAVE_SCHEDULED = SimpleString(b"Background saving scheduled")


@command("save")
def save(c, argv):
    rdb = c.server.persistence
    if rdb.child_running:
        return ErrorReply(b"ERR Background save already in progress")
    if rdb.save():
        return OK
    return ErrorReply(b"ERR")


@command("bgsave")
def bgsave(c, argv):
    schedule = False
    if len(argv) > 1:
        if len(argv) == 2 and argv[1].lower() == b"schedule":
            schedule = True
        else:
            return errors.SYNTAX
    rdb = c.server.persistence
    if rdb.child_type == "rdb":
        return ErrorReply(b"ERR Background save already in progress")
    if rdb.child_running or getattr(c.server, "aof_rewrite_in_progress", False):
        if schedule:
            rdb.bgsave_scheduled = True
            return BGSAVE_SCHEDULED
        return ErrorReply(b"ERR Another child process is active (AOF?): can't BGSAVE right "
                          b"now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever "
                          b"possible.")
    if rdb.bgsave():
        return BGSAVE_STARTED
    return ErrorReply(b"ERR")


@command("dump")
def dump(c, argv):
    value = c.db.get(argv[1])
    if value is None:
        return None
    return dump_payload(value, c.server.config)


@command("restore")
def restore(c, argv):
    key = argv[1]
    ttl = to_int(argv[2])
    replace = absttl = False
    idle = freq = -1
    i = 4
    while i < len(argv):
        opt = argv[i].lower()
        more = i + 1 < len(argv)
        if opt == b"replace":
            replace = True
        elif opt == b"absttl":
            absttl = True
        elif opt == b"idletime" and more and freq == -1:
            idle = to_int(argv[i + 1])
            if idle is None:
                return errors.NOT_INTEGER
            if idle < 0:
                return ErrorReply(b"ERR Invalid IDLETIME value, must be >= 0")
            i += 1
        elif opt == b"freq" and more and idle == -1:
            freq = to_int(argv[i + 1])
            if freq is None:
                return errors.NOT_INTEGER
            if not 0 <= freq <= 255:
                return ErrorReply(b"ERR Invalid FREQ value, must be >= 0 and <= 255")
            i += 1
        else:
            return errors.SYNTAX
        i += 1
    db = c.db
    if not replace and db.contains(key):
        return ErrorReply(b"BUSYKEY Target key name already exists.")
    if ttl is None:
        return errors.NOT_INTEGER
    if ttl < 0:
        return ErrorReply(b"ERR Invalid TTL value, must be >= 0")
    payload = argv[3]
    if not verify_payload(payload):
        return errors.BAD_DUMP_PAYLOAD
    server = c.server
    integrity = Integrity.for_restore(server.config, server.loading or c.replaying)
    try:
        value = restore_payload(payload, server.config, integrity)
    except (ValueError, IndexError) as exc:  # RdbFormatError, or a decoder's own check
        log.log(VERBOSE, "%s", internal_error(str(exc)))  # as Redis logs it, at verbose
        return errors.BAD_DATA_FORMAT
    finally:
        server.stat_dump_payload_sanitizations = \
            getattr(server, "stat_dump_payload_sanitizations", 0) + integrity.checks
    when = -1
    if ttl:
        when = ttl if absttl else db.clock.ms + ttl
    deleted = replace and db.delete(key)
    if when >= 0 and when <= db.clock.ms and getattr(c.server, "master_link", None) is None:
        # already expired: nothing is stored (a replaced key is just gone; a replica
        # stores it and waits for its master's DEL)
        if deleted:
            notify(c.server, "g", b"del", key, db.id)
            c.server.dirty += 1
            c.propagate_as([b"DEL", key])
        return OK
    db.set(key, value)
    if when >= 0:
        db.set_expire(key, when)
        if not absttl:  # logged with the absolute time, as Redis rewrites it
            c.propagate_as([*argv[:2], b"%d" % when, *argv[3:], b"ABSTTL"])
    db.restore_access(key, freq, idle)
    notify(c.server, "g", b"restore", key, db.id)
    c.server.dirty += 1
    return OK


@command("bgrewriteaof")
def bgrewriteaof(c, argv):
    server = c.server
    aof = server.aof
    if aof.rewrite_in_progress():
        return ErrorReply(b"ERR Background append only file rewriting already in progress")
    if server.persistence.child_running:
        aof.rewrite_scheduled = True
        return AOF_REWRITE_SCHEDULED
    if aof.start_rewrite():
        return AOF_REWRITE_STARTED
    return ErrorReply(b"ERR Can't execute an AOF background rewriting. Please check the "
                      b"server logs for more information.")


AOF_REWRITE_STARTED = SimpleString(b"Background append only file rewriting started")
AOF_REWRITE_SCHEDULED = SimpleString(b"Background append only file rewriting scheduled")


def debug_reload(c, argv):
    """DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save, empty the keyspace, load the file."""
    merge = noflush = nosave = False
    for opt in argv[2:]:
        low = opt.lower()
        if low == b"merge":
            merge = True
        elif low == b"noflush":
            noflush = True
        elif low == b"nosave":
            nosave = True
        else:
            return ErrorReply(b"ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE "
                              b"options.")
    server = c.server
    rdb = server.persistence
    if not nosave and not rdb.save():
        return ErrorReply(b"ERR Error trying to save the DB")
    if not noflush:
        for db in server.dbs:
            db.clear()
    try:
        rdb.load(replace=merge or not noflush)
    except (RdbFormatError, OSError):
        return ErrorReply(b"ERR Error trying to load the RDB dump, check server logs.")
    return OK


register_subcommand(b"reload", 2, debug_reload)
register_subcommand(b"reload", -1, debug_reload)



def debug_loadaof(c, argv):
    """DEBUG LOADAOF: flush the AOF, empty the keyspace and replay the AOF files from disk.
    As in Redis, anything but a clean load (no AOF, a truncated or damaged one) makes the
    server exit with status 1."""
    server = c.server
    aof = server.aof
    if aof.enabled:
        aof.flush_before_replies()
        aof.fsync_now()
    for db in server.dbs:
        db.clear()
    try:
        loaded = aof.reload_from_disk()
    except AofLoadError as exc:
        log.warning("%s", exc)
        loaded = None
    if not loaded:
        logging.shutdown()
        os._exit(1)
    server.dirty = 0  # as Redis: the replayed changes are not changes to save or log
    c.propagate_override = []  # and this DEBUG itself is not logged either
    log.warning("Append Only File loaded by DEBUG LOADAOF")
    return OK


def debug_aof_flush_sleep(c, argv):
    """DEBUG AOF-FLUSH-SLEEP <microseconds>: sleep that long before each AOF write (a test
    knob; Redis reads the number with atoi, so junk means 0)."""
    c.server.aof.flush_sleep_us = max(to_int_prefix(argv[2]), 0)
    return OK


register_subcommand(b"loadaof", 2, debug_loadaof)
register_subcommand(b"aof-flush-sleep", 3, debug_aof_flush_sleep)
