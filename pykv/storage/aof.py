"""The append-only file: Redis 7's multi-part AOF (base + incremental files + manifest).

Layout under ``dir/appenddirname``::

    appendonly.aof.manifest          which files make up the AOF, in order
    appendonly.aof.<n>.base.rdb      a snapshot (RDB preamble) or ``.base.aof`` (commands)
    appendonly.aof.<n>.incr.aof      commands written since that snapshot, as RESP arrays

Writes: the dispatcher calls ``feed(db, argv)`` for every command that changed the dataset
(``Server.propagate``); the buffer is written out before any reply leaves the server
(``Client.flush`` calls ``flush_before_replies``), and fsynced per ``appendfsync``: on every
flush (``always``), once a second from a helper thread (``everysec``), or never (``no``).

Rewrites (BGREWRITEAOF, automatic growth, ``CONFIG SET appendonly yes``): the parent opens a
new incremental file at once and records it in the manifest, so writes made during the
rewrite land there; a forked child writes the new base from its copy-on-write snapshot.
When the child succeeds the manifest is switched to the new base plus the new incremental
file and the old files are deleted; when it fails nothing is lost (the manifest lists both
incremental files).

Loading replays the base (RDB or commands) and each incremental file through a reply-less
client. A truncated last command is cut off with a warning when ``aof-load-truncated`` is
on; anything else malformed stops the start-up with Redis's message.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pykv.protocol import ProtocolError, RequestParser
from pykv.storage._aof_feed import AofFeedCore
from pykv.storage.rdb.encoding import RdbFormatError
from pykv.storage.rdb.file import fsync_dir, parse_steps, serialize, write_file
from pykv.util.steps import run_to_end

log = logging.getLogger("pykv")

BASE, HISTORY, INCR = "b", "h", "i"


_MULTI = b"*1\r\n$5\r\nMULTI\r\n"
_EXEC = b"*1\r\n$4\r\nEXEC\r\n"


class AofLoadError(Exception):
    """The AOF can't be loaded; the message is what the server logs before exiting."""


@dataclass
class AofFile:
    name: str
    seq: int
    kind: str  # BASE, HISTORY or INCR


@dataclass
class Manifest:
    base: AofFile | None = None
    incrs: list[AofFile] = field(default_factory=list)
    history: list[AofFile] = field(default_factory=list)

    def render(self) -> str:
        lines = []
        if self.base is not None:
            lines.append(f"file {self.base.name} seq {self.base.seq} type {BASE}\n")
        for f in self.history:
            lines.append(f"file {f.name} seq {f.seq} type {HISTORY}\n")
        for f in self.incrs:
            lines.append(f"file {f.name} seq {f.seq} type {INCR}\n")
        return "".join(lines)

    @classmethod
    def parse(cls, text: str) -> Manifest:
        m = cls()
        for line_no, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = line.split()
            info = dict(zip(words[0::2], words[1::2], strict=False))
            try:
                f = AofFile(info["file"], int(info["seq"]), info["type"])
            except (KeyError, ValueError):
                raise AofLoadError(f"Invalid AOF manifest file format (line {line_no})") \
                    from None
            if f.kind == BASE:
                m.base = f
            elif f.kind == INCR:
                m.incrs.append(f)
            elif f.kind == HISTORY:
                m.history.append(f)
            else:
                raise AofLoadError(f"Unknown AOF file type '{f.kind}' in the manifest")
        return m


def encode_command(argv: list[bytes]) -> bytes:
    out = [b"*%d\r\n" % len(argv)]
    for arg in argv:
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


class AppendOnlyFile(AofFeedCore):
    """Runtime state of the AOF for one server (the buffer fed per command: AofFeedCore)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.enabled = False
        self.buf = bytearray()
        self.fd = -1
        self.manifest = Manifest()
        self.current_db = -1
        self.fed = 0
        self.current_size = 0
        self.base_size = 0  # size of the AOF after the last rewrite (auto-rewrite growth)
        self.last_write_ok = True
        self.last_error = ""
        self.last_fsync = time.monotonic()
        self.rewrite_pid = -1
        self.rewrite_started = 0.0
        self.rewrite_scheduled = False
        self.last_rewrite_ok = True
        self.last_rewrite_time_sec = -1
        self.rewrites = 0
        self.consecutive_failures = 0
        self._new_base: AofFile | None = None
        self._fsync_lock = threading.Lock()
        self._fsync_thread: threading.Thread | None = None
        self._fsync_pending = threading.Event()
        self._stop = threading.Event()

    # -- paths ---------------------------------------------------------------------------
    @property
    def dirpath(self) -> str:
        cfg = self.server.config
        return os.path.join(cfg.dir, cfg.appenddirname)

    @property
    def basename(self) -> str:
        return self.server.config.appendfilename

    def path(self, name: str) -> str:
        return os.path.join(self.dirpath, name)

    @property
    def manifest_name(self) -> str:
        return f"{self.basename}.manifest"

    def _persist_manifest(self) -> None:
        tmp = self.path(f"temp-{self.manifest_name}")
        with open(tmp, "w") as fh:
            fh.write(self.manifest.render())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path(self.manifest_name))
        fsync_dir(self.dirpath)

    def _next_seq(self, kind: str) -> int:
        if kind == BASE:
            return (self.manifest.base.seq if self.manifest.base else 0) + 1
        return max([f.seq for f in self.manifest.incrs], default=0) + 1

    # -- start-up ------------------------------------------------------------------------
    def manifest_exists(self) -> bool:
        return os.path.exists(self.path(self.manifest_name))

    def load(self) -> bool:
        """Replay the AOF into the (empty) databases in one go; see ``load_steps``."""
        return run_to_end(self.load_steps())

    def load_steps(self):
        """Replay the AOF, yielding every so many keys or commands (the server answers
        ``-LOADING`` in between); returns False when there is no AOF."""
        if not self.manifest_exists():
            return False
        with open(self.path(self.manifest_name)) as fh:
            self.manifest = Manifest.parse(fh.read())
        files = ([self.manifest.base] if self.manifest.base else []) + self.manifest.incrs
        start = time.monotonic()
        total = 0
        rdb = self.server.persistence
        rdb.loading_total = sum(_size(self.path(f.name)) for f in files)
        rdb.loading_done = 0
        rdb.loading_start = time.time()
        for i, f in enumerate(files):
            last = i == len(files) - 1
            total += yield from self._load_file(f, last)
            rdb.loading_done += _size(self.path(f.name))
        self.current_size = sum(_size(self.path(f.name)) for f in files)
        self.base_size = self.current_size
        log.info("DB loaded from append only file: %.3f seconds (%d commands)",
                 time.monotonic() - start, total)
        return True

    def _load_file(self, f: AofFile, last: bool) -> int:
        path = self.path(f.name)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise AofLoadError(f"The AOF file {f.name} doesn't exist") from None
        if not data:
            return 0
        pos = 0
        if data.startswith(b"REDIS"):
            pos = yield from self._load_rdb_preamble(data, f.name)
        return (yield from self._replay(data, pos, path, last))

    def _load_rdb_preamble(self, data: bytes, name: str):
        server = self.server
        consumed = [0]

        def add(db_id: int, key: bytes, value: Any, expire_ms: int, idle: int) -> None:
            db = server.dbs[db_id]
            db.data[key] = value
            if expire_ms >= 0:
                db.expires[key] = expire_ms

        try:
            contents = yield from parse_steps(data, server.config, add, verify_checksum=True)
        except RdbFormatError as exc:
            raise AofLoadError(f"Bad file format reading the append only file {name}: "
                               f"{exc}") from None
        consumed[0] = getattr(contents, "end_offset", len(data))
        return consumed[0]

    def _replay(self, data: bytes, pos: int, path: str, last: bool):
        server = self.server
        client = server.replay_client()
        parser = RequestParser(1 << 62)
        parser.feed(data[pos:] if pos else data)
        count = 0
        valid_end = pos
        while True:
            before = parser.buffered()
            try:
                argv = parser.get_command()
            except ProtocolError:
                raise AofLoadError(f"Bad file format reading the append only file "
                                   f"{os.path.basename(path)}: make a backup of your AOF "
                                   f"file, then use ./redis-check-aof --fix <filename.manifest>"
                                   ) from None
            if argv is None:
                break
            valid_end += before - parser.buffered()
            client.execute(argv)
            count += 1
            if count % 1024 == 0:
                yield valid_end
        leftover = parser.buffered()
        if client.multi is not None:
            # an unfinished MULTI at the end: the transaction never completed
            leftover = len(data) - self._multi_start(data, pos, valid_end)
            valid_end = len(data) - leftover
        if leftover:
            if not last or not self.server.config.aof_load_truncated:
                raise AofLoadError(
                    f"Unexpected end of file reading the append only file "
                    f"{os.path.basename(path)}. You can: 1) Make a backup of your AOF file, "
                    f"then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively "
                    f"you can set the 'aof-load-truncated' configuration option to yes and "
                    f"restart the server.")
            log.warning("!!! Warning: short read while loading the AOF file %s!!!",
                        os.path.basename(path))
            log.warning("!!! Truncating the AOF %s at offset %d !!!",
                        os.path.basename(path), valid_end)
            with open(path, "r+b") as fh:
                fh.truncate(valid_end)
            log.warning("AOF %s loaded anyway because aof-load-truncated is enabled",
                        os.path.basename(path))
        return count

    @staticmethod
    def _multi_start(data: bytes, pos: int, end: int) -> int:
        marker = encode_command([b"MULTI"])
        idx = data.rfind(marker, pos, end)
        return idx if idx >= 0 else end

    def start(self, loaded: bool) -> None:
        """Open for appending (creating the directory, a base and a manifest if needed)."""
        os.makedirs(self.dirpath, exist_ok=True)
        if self.manifest.base is None and not self.manifest.incrs:
            self._write_base_sync()
        self._open_new_incr()
        self.enabled = True
        self.server.propagate = self.feed
        self._start_fsync_thread()

    def enable_at_runtime(self) -> None:
        """CONFIG SET appendonly yes: append to a new incr file now; the base comes from a
        background rewrite, which replaces whatever AOF files were there before."""
        os.makedirs(self.dirpath, exist_ok=True)
        if self.manifest_exists():
            with open(self.path(self.manifest_name)) as fh:
                self.manifest = Manifest.parse(fh.read())
        self._open_new_incr()
        self.enabled = True
        self.server.propagate = self.feed
        self._start_fsync_thread()
        self.start_rewrite(open_incr=False)

    def _write_base_sync(self) -> None:
        seq = self._next_seq(BASE)
        ext = "rdb" if self.server.config.aof_use_rdb_preamble else "aof"
        base = AofFile(f"{self.basename}.{seq}.base.{ext}", seq, BASE)
        write_file(self.path(base.name), self._base_contents())
        if self.manifest.base is not None:
            self.manifest.history.append(AofFile(self.manifest.base.name,
                                                 self.manifest.base.seq, HISTORY))
        self.manifest.base = base
        self.base_size = _size(self.path(base.name))

    def _base_contents(self) -> bytes:
        server = self.server
        if server.config.aof_use_rdb_preamble:
            return serialize(server.dbs, server.config, {b"redis-ver": server.version.encode(),
                                                        b"aof-base": b"1"})
        from pykv.storage.aof_rewrite import dataset_as_commands

        return dataset_as_commands(server)

    def _open_new_incr(self) -> None:
        seq = self._next_seq(INCR)
        incr = AofFile(f"{self.basename}.{seq}.incr.aof", seq, INCR)
        fd = os.open(self.path(incr.name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if self.fd >= 0:
            self._fsync_now()
            os.close(self.fd)
        self.fd = fd
        self.current_db = -1
        self.manifest.incrs.append(incr)
        self._persist_manifest()

    # -- writing -------------------------------------------------------------------------
    def begin_transaction(self, db_id: int) -> tuple[int, int]:
        """Remember where an EXEC's effects start in the buffer (after the SELECT of the
        database it starts in, which Redis writes before the MULTI)."""
        if db_id != self.current_db:
            self.buf += encode_command([b"SELECT", b"%d" % db_id])
            self.current_db = db_id
        return len(self.buf), self.fed

    def end_transaction(self, mark: tuple[int, int]) -> None:
        """Wrap the effects in MULTI/EXEC when there are several, as Redis propagates a
        transaction, so that replaying a log cut mid-transaction never applies half of one
        (the loader drops an unfinished MULTI at the end)."""
        pos, fed = mark
        if self.fed - fed < 2 or len(self.buf) < pos:
            return
        self.buf[pos:pos] = _MULTI
        self.buf += _EXEC

    def flush_before_replies(self) -> None:
        """Write the buffer (and fsync under ``always``) before any reply is sent."""
        if not self.buf or self.fd < 0:
            return
        data, self.buf = self.buf, bytearray()
        view = memoryview(data)
        try:
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
        except OSError as exc:
            # like Redis: keep what was not written and retry later; meanwhile writes are
            # refused with MISCONF (update_write_denial)
            log.warning("Error writing to the AOF file: %s", exc.strerror)
            self.current_size += len(data) - len(view)
            self.buf = bytearray(view) + self.buf
            self.last_write_ok = False
            self.last_error = exc.strerror or str(exc)
            self.server.persistence.update_write_denial()
            return
        self.current_size += len(data)
        if not self.last_write_ok:
            self.last_write_ok = True
            self.server.persistence.update_write_denial()
        policy = self.server.config.appendfsync
        if policy == "always":
            self._fsync_now()
        elif policy == "everysec" and not self._fsync_pending.is_set():
            self._fsync_pending.set()  # Event.set takes a lock: only when it changes

    def _fsync_now(self) -> None:
        if self.fd >= 0:
            with self._fsync_lock:
                try:
                    os.fsync(self.fd)
                except OSError as exc:
                    log.warning("Fsync of the AOF failed: %s", exc.strerror)
            self.last_fsync = time.monotonic()

    def _start_fsync_thread(self) -> None:
        if self._fsync_thread is not None:
            return
        self._stop.clear()
        self._fsync_thread = threading.Thread(target=self._fsync_loop, name="pykv-aof-fsync",
                                              daemon=True)
        self._fsync_thread.start()

    def _fsync_loop(self) -> None:
        """``everysec``: fsync (off the event loop, like Redis's bio thread) once a second."""
        while not self._stop.is_set():
            self._stop.wait(1.0)
            if self._fsync_pending.is_set():
                self._fsync_pending.clear()
                fd = self.fd
                if fd >= 0 and not (self.rewrite_pid > 0 and
                                    self.server.config.no_appendfsync_on_rewrite):
                    try:
                        with self._fsync_lock:
                            os.fsync(fd)
                    except OSError:
                        pass
                    self.last_fsync = time.monotonic()

    def stop(self) -> None:
        """Flush, fsync and close (CONFIG SET appendonly no, shutdown)."""
        self.flush_before_replies()
        self._fsync_now()
        self._stop.set()
        if self._fsync_thread is not None:
            self._fsync_thread.join(2)
            self._fsync_thread = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.enabled = False
        if self.server.propagate == self.feed:
            self.server.propagate = None

    # -- rewriting -----------------------------------------------------------------------
    def rewrite_in_progress(self) -> bool:
        return self.rewrite_pid > 0

    def start_rewrite(self, open_incr: bool = True) -> bool:
        """BGREWRITEAOF: new incr file now, new base from a forked child."""
        self.flush_before_replies()
        os.makedirs(self.dirpath, exist_ok=True)
        if self.enabled and open_incr:
            self._open_new_incr()
        seq = self._next_seq(BASE)
        ext = "rdb" if self.server.config.aof_use_rdb_preamble else "aof"
        self._new_base = AofFile(f"{self.basename}.{seq}.base.{ext}", seq, BASE)
        tmp = self.path(f"temp-rewriteaof-bg-{os.getpid()}.aof")
        try:
            pid = os.fork()
        except OSError as exc:
            log.warning("Can't rewrite append only file in background: fork: %s",
                        exc.strerror)
            self.last_rewrite_ok = False
            return False
        if pid == 0:
            code = 1
            try:
                write_file(tmp, self._base_contents())
                code = 0
            finally:
                os._exit(code)
        self.rewrite_pid = pid
        self.rewrite_started = time.time()
        self._rewrite_tmp = tmp
        log.info("Background append only file rewriting started by pid %d", pid)
        return True

    def check_rewrite_child(self) -> None:
        if self.rewrite_pid <= 0:
            return
        try:
            pid, status = os.waitpid(self.rewrite_pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.rewrite_pid, 1 << 8
        if pid == 0:
            return
        self.rewrite_pid = -1
        self.last_rewrite_time_sec = int(time.time() - self.rewrite_started)
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        if ok:
            try:
                self._install_new_base()
            except OSError as exc:
                log.warning("Error installing the rewritten AOF: %s", exc)
                ok = False
        if ok:
            log.info("Background AOF rewrite finished successfully")
            self.last_rewrite_ok = True
            self.rewrites += 1
            self.consecutive_failures = 0
        else:
            log.warning("Background AOF rewrite terminated with error")
            try:
                os.unlink(self._rewrite_tmp)
            except OSError:
                pass
            self.last_rewrite_ok = False
            self.consecutive_failures += 1
        if self.rewrite_scheduled:
            self.rewrite_scheduled = False
            self.start_rewrite()

    def _install_new_base(self) -> None:
        new_base = self._new_base
        os.replace(self._rewrite_tmp, self.path(new_base.name))
        old = [self.manifest.base] if self.manifest.base else []
        # every incr file but the one opened when this rewrite started is now history
        keep = self.manifest.incrs[-1:] if self.enabled else []
        old += [f for f in self.manifest.incrs if f not in keep]
        self.manifest.base = new_base
        self.manifest.incrs = keep
        self.manifest.history = []
        self._persist_manifest()
        for f in old:
            if f.name != new_base.name:
                try:
                    os.unlink(self.path(f.name))
                except OSError:
                    pass
        self.base_size = _size(self.path(new_base.name))
        self.current_size = self.base_size + sum(_size(self.path(f.name)) for f in keep)

    def kill_rewrite_child(self) -> None:
        if self.rewrite_pid > 0:
            try:
                os.kill(self.rewrite_pid, 9)
                os.waitpid(self.rewrite_pid, 0)
            except OSError:
                pass
            try:
                os.unlink(self._rewrite_tmp)
            except OSError:
                pass
            self.rewrite_pid = -1

    def cron(self) -> None:
        self.check_rewrite_child()
        if self.enabled and self.server.config.appendfsync == "everysec":
            self.flush_before_replies()
        cfg = self.server.config
        if (self.enabled and self.rewrite_pid < 0 and not self.server.persistence.child_running
                and cfg.auto_aof_rewrite_percentage and self.current_size
                > cfg.auto_aof_rewrite_min_size):
            base = self.base_size or 1
            growth = (self.current_size * 100 // base) - 100
            if growth >= cfg.auto_aof_rewrite_percentage:
                log.info("Starting automatic rewriting of AOF on %d%% growth", growth)
                self.start_rewrite()

    # -- INFO ----------------------------------------------------------------------------
    def info_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "aof_enabled": int(self.enabled),
            "aof_rewrite_in_progress": int(self.rewrite_pid > 0),
            "aof_rewrite_scheduled": int(self.rewrite_scheduled),
            "aof_last_rewrite_time_sec": self.last_rewrite_time_sec,
            "aof_current_rewrite_time_sec": int(time.time() - self.rewrite_started)
            if self.rewrite_pid > 0 else -1,
            "aof_last_bgrewrite_status": "ok" if self.last_rewrite_ok else "err",
            "aof_rewrites": self.rewrites,
            "aof_rewrites_consecutive_failures": self.consecutive_failures,
            "aof_last_write_status": "ok" if self.last_write_ok else "err",
            "aof_last_cow_size": 0,
            "module_fork_in_progress": 0,
            "module_fork_last_cow_size": 0,
        }
        if self.enabled:
            fields.update({
                "aof_current_size": self.current_size,
                "aof_base_size": self.base_size,
                "aof_pending_rewrite": int(self.rewrite_scheduled),
                "aof_buffer_length": len(self.buf),
                "aof_pending_bio_fsync": int(self._fsync_pending.is_set()),
                "aof_delayed_fsync": 0,
            })
        return fields


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
