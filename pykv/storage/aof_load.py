"""Replaying the multi-part AOF, with Redis 7.0's checks, outcomes and log lines.

Redis reads each file line by line (``fgets`` of at most 1023 bytes): ``#`` lines are
annotations and skipped, a command is ``*<argc>`` then per argument ``$<len>``, the bytes and
two more bytes it does not check. Anything else is "Bad file format"; running out of bytes
inside a command (or ending inside a MULTI) is a short read: cut off at the last complete
command with ``aof-load-truncated`` (the file itself is truncated, and only the last file
may be), fatal otherwise. Every refusal ends the start-up with exit status 1.

``load_files`` is a generator (the server answers ``-LOADING`` between its steps); each
step's value is the number of bytes replayed so far.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any

from pykv.protocol import ProtocolError, RequestParser, write_reply
from pykv.storage.aof_manifest import BASE, AofFile, AofLoadError, Manifest, atoi
from pykv.storage.rdb.encoding import RdbFormatError
from pykv.storage.rdb.file import parse_steps

log = logging.getLogger("pykv")

_LINE_MAX = 1023  # Redis reads lines into a 1024-byte buffer (AOF_ANNOTATION_LINE_MAX_LEN)
STEP_COMMANDS = 1024  # Redis serves clients every 1024 commands while loading,
EVENT_ITERATIONS = 4  # running its event loop up to 4 times (processEventsWhileBlocked)

OK, TRUNCATED, EMPTY = "ok", "truncated", "empty"
_FIX = "./redis-check-aof --fix <filename.manifest>"


class _ShortRead(Exception):
    pass


class _BadFormat(Exception):
    pass


def _line(data: bytes, pos: int) -> tuple[bytes, int]:
    """``fgets``: up to and including the next newline, at most 1023 bytes."""
    end = data.find(b"\n", pos, pos + _LINE_MAX)
    end = end + 1 if end >= 0 else min(pos + _LINE_MAX, len(data))
    return data[pos:end], end


def read_command(data: bytes, pos: int) -> tuple[list[bytes] | None, int]:
    """The next command at ``pos`` and where the one after starts; ``(None, pos)`` at the
    end. Raises ``_ShortRead`` (the data ends inside a command) or ``_BadFormat``."""
    size = len(data)
    while True:
        if pos >= size:
            return None, pos
        line, pos = _line(data, pos)
        if line[0] != 42:  # '*'
            if line[0] == 35:  # '#': an annotation (#TS:...)
                continue
            raise _BadFormat
        break
    if len(line) == 1:
        raise _ShortRead
    argc = atoi(line[1:])
    if argc < 1:
        raise _BadFormat
    argv = []
    for _ in range(argc):
        if pos >= size:
            raise _ShortRead
        line, pos = _line(data, pos)
        if line[0] != 36:  # '$'
            raise _BadFormat
        n = atoi(line[1:])
        if n < 0:
            raise _BadFormat
        if pos + n > size:
            raise _ShortRead
        argv.append(data[pos:pos + n])
        pos += n
        if pos + 2 > size:  # the CRLF after the argument: read, not checked
            raise _ShortRead
        pos += 2
    return argv, pos


_CHUNK = 1 << 16  # bytes handed to the fast parser at a time


def commands(data: bytes, pos: int):
    """Every command from ``pos`` on as ``(argv, end offset)``, with ``read_command``'s
    meaning: the compiled request parser takes the plainly encoded ones, ``read_command``
    everything else (annotations, odd headers or separators, damage, the end)."""
    size = len(data)
    view = memoryview(data)
    canonical = bytearray()
    # the parser ends a header line at its first CR, Redis at the LF: they can only
    # disagree where a CR is not followed by LF
    lone_cr = data.count(b"\r", pos) != data.count(b"\r\n", pos)
    parser = RequestParser(1 << 62)
    fed = pos  # data[:fed] went to the parser; it has consumed all but buffered()
    while True:
        start = fed - parser.buffered()
        if start >= size:
            return
        if parser.buffered() < 2 and fed < size:
            parser.feed(data[fed:fed + _CHUNK])
            fed = min(fed + _CHUNK, size)
            continue
        if data[start] == 42 and start + 1 < size and 49 <= data[start + 1] <= 57:  # *1-9
            while True:
                try:
                    argv = parser.get_command()
                except ProtocolError:
                    argv = False
                    break
                if argv is None and fed < size:  # unfinished: more bytes, same command
                    parser.feed(data[fed:fed + _CHUNK])
                    fed = min(fed + _CHUNK, size)
                    continue
                break
            if argv:
                end = fed - parser.buffered()
                if lone_cr:  # then taken only when plainly encoded
                    canonical.clear()
                    write_reply(canonical, argv, 2)
                if not lone_cr or view[start:end] == canonical:
                    yield argv, end
                    continue
        argv, end = read_command(data, start)
        if argv is None:
            return
        yield argv, end
        parser.reset()
        fed = end


def file_size(aof: Any, name: str) -> int:
    """Redis's getAppendOnlyFileSize, which refuses a file it can't stat."""
    try:
        return os.stat(aof.path(name)).st_size
    except OSError as exc:
        raise AofLoadError(f"Unable to obtain the AOF file {name} length. stat: "
                           f"{exc.strerror}") from None


def load_files(aof: Any, manifest: Manifest):
    """Replay the base and incremental files of ``manifest`` (Redis's loadAppendOnlyFiles);
    returns False when it lists none, True when something (maybe nothing) was loaded."""
    files = ([manifest.base] if manifest.base else []) + manifest.incrs
    if not files:
        return False
    sizes = [file_size(aof, f.name) for f in files]
    total = sum(sizes)
    aof.current_size = total
    aof.base_size = sizes[0] if manifest.base else 0
    if total == 0:
        return True
    server = aof.server
    rdb = server.persistence
    rdb.loading_total = total
    rdb.loading_done = 0
    rdb.loading_start = time.time()
    rdb.loaded_keys = rdb.expired_keys = 0
    propagate, server.propagate = server.propagate, None  # replayed commands are not logged
    try:
        for i, f in enumerate(files):
            last = i == len(files) - 1
            start = time.monotonic()
            status = yield from _load_file(aof, f, rdb)
            kind = "base" if f.kind == BASE else "incr"
            if status == OK or (status == TRUNCATED and last):
                log.info("DB loaded from %s file %s: %.3f seconds", kind, f.name,
                         time.monotonic() - start)
            if status == TRUNCATED and not last:
                raise AofLoadError("Fatal error: the truncated file is not the last file")
    finally:
        server.propagate = propagate
    aof.current_size = sum(file_size(aof, f.name) for f in files)
    return TRUNCATED if status == TRUNCATED else True


def _load_file(aof: Any, f: AofFile, rdb: Any):
    """One file (Redis's loadSingleAppendOnlyFile): OK, TRUNCATED or EMPTY, or raises."""
    path = aof.path(f.name)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError as exc:
        log.warning("The append log file %s doesn't exist: %s", f.name, exc.strerror)
        return EMPTY
    except IsADirectoryError as exc:  # Redis opens it, then fails reading
        raise AofLoadError(f"Unrecoverable error reading the append only file {f.name}: "
                           f"{exc.strerror}") from None
    except OSError as exc:
        raise AofLoadError(f"Fatal error: can't open the append log file {f.name} for "
                           f"reading: {exc.strerror}") from None
    if not data:
        return EMPTY
    done_before = rdb.loading_done
    pos = 0
    if data.startswith(b"REDIS"):
        pos = yield from _load_rdb_preamble(aof, data, f)
        rdb.loading_done = done_before + pos
    return (yield from _replay(aof, data, pos, f, rdb, done_before))


def _load_rdb_preamble(aof: Any, data: bytes, f: AofFile):
    server = aof.server
    old_style = f.name == aof.basename
    log.info("Reading RDB preamble from AOF file..." if old_style
             else "Reading RDB base file on AOF loading...")
    on_key = server.persistence.key_loader(replace=True)
    try:
        contents = yield from parse_steps(data, server.config, on_key, verify_checksum=True)
    except RdbFormatError as exc:
        what = "RDB preamble of the AOF file" if old_style else "RDB base file"
        log.warning("%s", exc)
        raise AofLoadError(f"Error reading the {what} {f.name}, AOF loading aborted") \
            from None
    restore = getattr(server, "restore_function_libraries", None)
    if contents.functions and restore is not None:
        restore(contents.functions)
    rdb = server.persistence
    log.info("Done loading RDB, keys loaded: %d, keys expired: %d.", rdb.loaded_keys,
             rdb.expired_keys)
    if old_style:
        log.info("Reading the remaining AOF tail...")
    return contents.end_offset or len(data)


def _replay(aof: Any, data: bytes, pos: int, f: AofFile, rdb: Any, done_before: int):
    server = aof.server
    cfg = server.config
    client = server.replay_client()  # replies off, exempt from -LOADING, never blocking
    table = server.commands
    spellings = server.command_lookup  # the dispatcher's cache: name as written -> command
    multi = table.get(b"multi")
    execute = client.execute
    truncated_ok = cfg.aof_load_truncated
    valid_up_to = valid_before_multi = 0
    count = 0
    delay = cfg.key_load_delay
    try:
        for argv, end in commands(data, pos):
            cmd = spellings.get(argv[0]) or table.get(argv[0].lower())
            if cmd is not None and cmd.subcommands and len(argv) >= 2:
                cmd = cmd.subcommands.get(argv[1].lower())
            if cmd is None:
                raise AofLoadError(f"Unknown command '{argv[0].decode('utf-8', 'replace')}' "
                                   f"reading the append only file {f.name}")
            if cmd is multi:
                valid_before_multi = valid_up_to
            execute(argv)
            if truncated_ok:
                valid_up_to = end
            if delay:
                debug_delay(delay)
            count += 1
            if count % STEP_COMMANDS == 0:
                rdb.loading_done = done_before + end
                for _ in range(EVENT_ITERATIONS):  # accept, read, reply
                    yield rdb.loading_done
        if client.multi is None:
            rdb.loading_done = done_before + len(data)
            return OK
        log.warning("Revert incomplete MULTI/EXEC transaction in AOF file %s", f.name)
        client.multi = None
        valid_up_to = valid_before_multi
    except _BadFormat:
        raise AofLoadError(f"Bad file format reading the append only file {f.name}: make a "
                           f"backup of your AOF file, then use {_FIX}") from None
    except _ShortRead:
        client.multi = None
    return _short_read(aof, f, valid_up_to)


def _short_read(aof: Any, f: AofFile, valid_up_to: int) -> str:
    if aof.server.config.aof_load_truncated:
        log.warning("!!! Warning: short read while loading the AOF file %s!!!", f.name)
        log.warning("!!! Truncating the AOF %s at offset %d !!!", f.name, valid_up_to)
        try:
            os.truncate(aof.path(f.name), valid_up_to)
        except OSError as exc:
            log.warning("Error truncating the AOF file %s: %s", f.name, exc.strerror)
        else:
            log.warning("AOF %s loaded anyway because aof-load-truncated is enabled", f.name)
            return TRUNCATED
    raise AofLoadError(
        f"Unexpected end of file reading the append only file {f.name}. You can: 1) Make a "
        f"backup of your AOF file, then use {_FIX}. 2) Alternatively you can set the "
        f"'aof-load-truncated' configuration option to yes and restart the server.")


def debug_delay(usec: int) -> None:
    """Redis's debugDelay (``key-load-delay``, ``rdb-key-save-delay``): sleep ``usec``
    microseconds; a negative value sleeps 1 µs once every ``-usec`` calls on average."""
    if usec < 0:
        import random

        usec = 1 if random.randrange(-usec) == 0 else 0
    if usec:
        time.sleep(usec / 1e6)
