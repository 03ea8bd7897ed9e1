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
from typing import Any

from pykv.storage._aof_feed import AofFeedCore
from pykv.storage.aof_load import load_files
from pykv.storage.aof_manifest import (  # noqa: F401 - AofLoadError: the server catches it
    BASE,
    HISTORY,
    INCR,
    AofFile,
    AofLoadError,
    Manifest,
)
from pykv.storage.persistence import private_dirty
from pykv.storage.rdb.file import fsync_dir, serialize, write_file
from pykv.util.steps import run_to_end

log = logging.getLogger("pykv")

_MULTI = b"*1\r\n$5\r\nMULTI\r\n"
_EXEC = b"*1\r\n$4\r\nEXEC\r\n"


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
        self.flush_sleep_us = 0
        self.last_cow_size = 0  # what the last successful rewrite child copied on write
        self._cow_fd = -1
        self.cur_timestamp = 0  # the last #TS: annotation written (aof-timestamp-enabled)
        server.config.on_change("aof-timestamp-enabled", lambda _value: self._set_feeder())
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
        ``-LOADING`` in between); returns False when there is no AOF. Refusals raise
        ``AofLoadError`` (pykv.storage.aof_load has Redis's rules)."""
        if not self.manifest_exists():
            return False
        self.manifest = self.read_manifest()
        start = time.monotonic()
        loaded = yield from load_files(self, self.manifest)
        if loaded:
            log.info("DB loaded from append only file: %.3f seconds", time.monotonic() - start)
        return bool(loaded)

    def reload_from_disk(self) -> bool:
        """DEBUG LOADAOF: read the manifest again, drop history files and replay the AOF
        into the (emptied) databases; True only for a complete load (Redis's AOF_OK or
        AOF_EMPTY), False for no AOF or a truncated one; damage raises AofLoadError."""
        self.manifest = self.read_manifest() if self.manifest_exists() else Manifest()
        if self.enabled:
            self._remove_history()
        loaded = run_to_end(load_files(self, self.manifest))
        return loaded is True

    def read_manifest(self) -> Manifest:
        path = self.path(self.manifest_name)
        try:
            with open(path, "rb") as fh:
                text = fh.read()
        except OSError as exc:
            raise AofLoadError(f"Fatal error: can't open the AOF manifest file {path} for "
                               f"reading: {exc.strerror}") from None
        try:
            return Manifest.parse(text)
        except AofLoadError as exc:
            for line in getattr(exc, "lines", ()):
                log.warning("%s", line)
            raise

    def start(self, loaded: bool) -> None:
        """Open for appending at start-up as Redis does: a base is written first when the
        manifest lists no file at all; writes go on in the last incremental file (a new
        one only when there is none); then history files are removed."""
        os.makedirs(self.dirpath, exist_ok=True)
        if self.manifest.base is None and not self.manifest.incrs:
            self._write_base_sync()
            log.info("Creating AOF base file %s on server start", self.manifest.base.name)
        if self.manifest.incrs:
            name = self.manifest.incrs[-1].name
            self.fd = os.open(self.path(name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self.current_db = -1
            log.info("Opening AOF incr file %s on server start", name)
        else:
            self._open_new_incr()
            log.info("Creating AOF incr file %s on server start", self.manifest.incrs[-1].name)
        self._remove_history()
        self.enabled = True
        self._set_feeder()
        self._start_fsync_thread()

    def _remove_history(self) -> None:
        """Redis's aofDelHistoryFiles: files a finished rewrite left behind go."""
        if not self.manifest.history:
            return
        for f in self.manifest.history:
            log.info("Removing the history file %s in the background", f.name)
            try:
                os.unlink(self.path(f.name))
            except OSError:
                pass
        self.manifest.history = []
        self._persist_manifest()

    def enable_at_runtime(self) -> None:
        """CONFIG SET appendonly yes: append to a new incr file now; the base comes from a
        background rewrite, which replaces whatever AOF files were there before."""
        os.makedirs(self.dirpath, exist_ok=True)
        if self.manifest_exists():
            with open(self.path(self.manifest_name)) as fh:
                self.manifest = Manifest.parse(fh.read())
        self._open_new_incr()
        self.enabled = True
        self._set_feeder()
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

        stamp = self.timestamp_if_needed(force=True) if server.config.aof_timestamp_enabled \
            else b""
        return stamp + dataset_as_commands(server)

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
    def _set_feeder(self) -> None:
        """Commands reach ``feed``, or ``feed_stamped`` under ``aof-timestamp-enabled``."""
        if self.enabled:
            stamped = self.server.config.aof_timestamp_enabled
            self.server.add_effect_sink(self, self.feed_stamped if stamped else self.feed)

    def timestamp_if_needed(self, force: bool = False) -> bytes:
        """Redis's ``#TS:<unix time>`` annotation: before the first command of each new
        second (``force``: always, as at the top of a rewritten base)."""
        now = int(time.time())
        if not force and now <= self.cur_timestamp:
            return b""
        self.cur_timestamp = now
        return b"#TS:%d\r\n" % now

    def feed_stamped(self, db_id: int, argv: list[bytes]) -> None:
        stamp = self.timestamp_if_needed()
        if stamp:
            self.buf += stamp
        self.feed(db_id, argv)

    def begin_transaction(self, db_id: int) -> tuple[int, int]:
        """Remember where an EXEC's effects start in the buffer (after the SELECT of the
        database it starts in, which Redis writes before the MULTI)."""
        if self.server.config.aof_timestamp_enabled:
            self.buf += self.timestamp_if_needed()
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
        if self.flush_sleep_us:  # DEBUG AOF-FLUSH-SLEEP
            time.sleep(self.flush_sleep_us / 1e6)
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

    def fsync_now(self) -> None:
        self._fsync_now()

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
        self.server.remove_effect_sink(self)

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
        cow_read, cow_write = os.pipe()  # the child's copy-on-write size, when it is done
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(cow_read)
            os.close(cow_write)
            log.warning("Can't rewrite append only file in background: fork: %s",
                        exc.strerror)
            self.last_rewrite_ok = False
            return False
        if pid == 0:
            code = 1
            try:
                write_file(tmp, self._base_contents())
                os.write(cow_write, b"%d" % private_dirty())
                code = 0
            finally:
                os._exit(code)
        os.close(cow_write)
        self._cow_fd = cow_read
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
        cow = self._close_cow_pipe()
        if ok:
            self.last_cow_size = cow
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

    def _close_cow_pipe(self) -> int:
        """What the rewrite child reported (0 if nothing), and the pipe closed."""
        if self._cow_fd < 0:
            return 0
        try:
            report = os.read(self._cow_fd, 64)
        except OSError:
            report = b""
        os.close(self._cow_fd)
        self._cow_fd = -1
        return int(report) if report.isdigit() else 0

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
            self._close_cow_pipe()
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
        # Redis prints these from the appendonly setting (on while the AOF still loads)
        enabled = bool(self.server.config.appendonly)
        fields: dict[str, Any] = {
            "aof_enabled": int(enabled),
            "aof_rewrite_in_progress": int(self.rewrite_pid > 0),
            "aof_rewrite_scheduled": int(self.rewrite_scheduled),
            "aof_last_rewrite_time_sec": self.last_rewrite_time_sec,
            "aof_current_rewrite_time_sec": int(time.time() - self.rewrite_started)
            if self.rewrite_pid > 0 else -1,
            "aof_last_bgrewrite_status": "ok" if self.last_rewrite_ok else "err",
            "aof_rewrites": self.rewrites,
            "aof_rewrites_consecutive_failures": self.consecutive_failures,
            "aof_last_write_status": "ok" if self.last_write_ok else "err",
            "aof_last_cow_size": self.last_cow_size,
            "module_fork_in_progress": 0,
            "module_fork_last_cow_size": 0,
        }
        if enabled:
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
