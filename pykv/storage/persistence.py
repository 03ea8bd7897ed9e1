"""RDB persistence: SAVE, BGSAVE in a forked child, save points, loading at start-up.

Mirrors Redis's ``rdb.c`` life cycle. ``save()`` serialises in the foreground; ``bgsave()``
forks, the child serialises its copy-on-write view of the keyspace into ``temp-<pid>.rdb``,
fsyncs and renames it over ``dir/dbfilename``, then exits with 0 (or 1 on error). The parent
keeps serving and notices the child in its cron (``waitpid(WNOHANG)``), like Redis's
``checkChildrenDone``; a child killed by a signal counts as a failed save.

State that ``INFO persistence`` reports lives here (``info_fields``), as does the
"stop writes on bgsave error" condition the dispatcher asks about.
"""
from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any

from pykv import errors
from pykv.storage.aof_load import EVENT_ITERATIONS, debug_delay
from pykv.storage.rdb._load import KeyStore
from pykv.storage.rdb.file import parse_steps, serialize, write_atomically
from pykv.util.steps import run_to_end

log = logging.getLogger("pykv")



class RdbPersistence:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.child_pid = -1
        self.child_started = 0.0
        self.child_type = ""  # "rdb" while a BGSAVE child runs
        self.bgsave_scheduled = False
        self.last_bgsave_ok = True
        self.last_bgsave_time_sec = -1
        self.last_save_ok = True
        self.lastsave = int(time.time())
        self.last_bgsave_try = 0.0
        self.dirty_before_bgsave = 0
        self.loading_start = 0.0
        self.loading_total = 0  # bytes of the file being loaded, and how far we are
        self.loading_done = 0
        self.last_aux: dict[bytes, bytes] = {}  # the AUX fields of the last RDB loaded
        self.loaded_keys = 0  # rdb_last_load_keys_loaded / _expired
        self.expired_keys = 0
        self.fork_usec = 0
        self.saves = 0
        self._progress_fd = -1  # the BGSAVE child's progress reports
        self._progress = [0, 0]
        self.cow_size = self.cow_peak = self.last_cow_size = 0  # copy-on-write, in bytes
        self.cow_updated = 0.0
        # told whether each BGSAVE succeeded (a disk-based replication sync waits on it)
        self.bgsave_done_hooks: list[Callable[[bool], None]] = []

    # -- paths and payload ---------------------------------------------------------------
    @property
    def path(self) -> str:
        cfg = self.server.config
        return os.path.join(cfg.dir, cfg.dbfilename)

    def snapshot(self, pace: _Pace | None = None, data: bool = True,
                 functions: bool = True) -> bytes:
        """The RDB image of the dataset; ``pace`` (in a BGSAVE child) is told of each key.
        Replication's ``repl-stream-db``/``repl-id``/``repl-offset`` aux fields are added
        while the server has a replication history (``server.repl_save_info``); ``data``
        and ``functions`` False leave keys or functions out (``rdb-filter-only``)."""
        server = self.server
        now = int(time.time())
        aux = {
            b"redis-ver": server.version.encode(),
            b"redis-bits": b"64",
            b"ctime": b"%d" % now,
            b"used-mem": b"%d" % _rss_bytes(),
        }
        save_info = getattr(server, "repl_save_info", None)
        if save_info is not None:
            aux.update(save_info() or {})
        aux[b"aof-base"] = b"0"
        libraries = []
        library_dump = getattr(server, "function_library_sources", None)
        if library_dump is not None and functions:
            libraries = library_dump()
        if not data:
            return serialize([], server.config, aux, libraries)
        dbs = server.dbs if pace is None else [_PacedDb(db, pace) for db in server.dbs]
        return serialize(dbs, server.config, aux, libraries)

    def replication_snapshot(self, data: bool = True, functions: bool = True) -> bytes:
        """The RDB a diskless full sync child writes (``rdb-key-save-delay`` applies)."""
        pace = _Pace(-1, self.server.config.rdb_key_save_delay)
        return self.snapshot(pace, data, functions)

    # -- SAVE -----------------------------------------------------------------------------
    def save(self) -> bool:
        """Foreground save (SAVE, SHUTDOWN, DEBUG RELOAD); True on success."""
        try:
            write_atomically(self.path, self.snapshot())
        except OSError as exc:
            log.warning("Failed opening the temp RDB file temp-%d.rdb (in server root dir "
                        "%s) for saving: %s", os.getpid(), os.getcwd(), exc.strerror)
            self.last_save_ok = False
            self.last_bgsave_ok = False
            return False
        log.info("DB saved on disk")
        self.saves += 1
        self._saved(time.time())
        self.update_write_denial()
        return True

    def _saved(self, when: float, dirty_before: int | None = None) -> None:
        server = self.server
        server.dirty = server.dirty - dirty_before if dirty_before is not None else 0
        if server.dirty < 0:
            server.dirty = 0
        self.lastsave = int(when)
        server.lastsave = self.lastsave
        self.last_save_ok = True
        self.last_bgsave_ok = True

    # -- BGSAVE ---------------------------------------------------------------------------
    @property
    def child_running(self) -> bool:
        return self.child_pid > 0

    def bgsave(self) -> bool:
        """Fork a child that saves; False if the fork failed. The child reports how many
        keys it has written through a pipe (INFO's current_save_keys_processed)."""
        server = self.server
        self.last_bgsave_try = time.time()
        self.dirty_before_bgsave = server.dirty
        total = sum(len(db.data) for db in server.dbs)
        read_fd, write_fd = os.pipe()
        start = time.monotonic()
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            log.warning("Can't save in background: fork: %s", exc.strerror)
            self.last_bgsave_ok = False
            return False
        if pid == 0:  # child: save and leave without running any parent machinery
            code = 1
            try:
                os.close(read_fd)
                _reset_child_signals()
                pace = _Pace(write_fd, server.config.rdb_key_save_delay)
                write_atomically(self.path, self.snapshot(pace))
                pace.finish()
                code = 0
            except BaseException as exc:  # noqa: BLE001 - the child must always exit
                try:
                    os.write(2, f"BGSAVE child failed: {exc}\n".encode())
                except OSError:
                    pass
            finally:
                os._exit(code)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        self._progress_fd = read_fd
        self._progress = [0, total]
        self.fork_usec = int((time.monotonic() - start) * 1e6)
        self.child_pid = pid
        self.child_type = "rdb"
        self.child_started = time.time()
        self.saves += 1  # Redis counts a save when it starts (rdb_saves)
        log.info("Background saving started by pid %d", pid)
        return True

    def child_progress(self) -> tuple[int, int]:
        """(keys written so far, keys at fork time) of the running BGSAVE child."""
        self._read_reports()
        return self._progress[0], self._progress[1]

    def _read_reports(self) -> None:
        """Drain the child's ``<keys> <cow bytes>`` lines (``E <cow bytes>``: its last)."""
        fd = self._progress_fd
        if fd < 0:
            return
        try:
            data = os.read(fd, 65536)
        except OSError:
            return
        for line in data.split(b"\n"):
            words = line.split()
            if len(words) != 2:
                continue
            cow = int(words[1])
            if words[0] == b"E":
                self.last_cow_size = cow
                continue
            self._progress[0] = int(words[0])
            self.cow_size = cow
            self.cow_peak = max(self.cow_peak, cow)
            self.cow_updated = time.monotonic()

    def _close_progress(self) -> None:
        if self._progress_fd >= 0:
            self._read_reports()
            os.close(self._progress_fd)
            self._progress_fd = -1
        self._progress = [0, 0]
        self.cow_size = self.cow_peak = 0
        self.cow_updated = 0.0

    def check_child(self) -> None:
        """Reap a finished BGSAVE child (called from the cron)."""
        if self.child_pid <= 0:
            return
        try:
            pid, status = os.waitpid(self.child_pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.child_pid, 1 << 8
        if pid == 0:
            return
        self.child_pid = -1
        self.child_type = ""
        self._close_progress()
        self.last_bgsave_time_sec = int(time.time() - self.child_started)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            log.info("Background saving terminated with success")
            self._saved(self.child_started, self.dirty_before_bgsave)
        elif os.WIFSIGNALED(status):
            log.warning("Background saving terminated by signal %d", os.WTERMSIG(status))
            _remove_temp(pid, self.server.config.dir)
            # SIGUSR1 is how the server itself stops a child: not a failure (Redis's rule)
            if os.WTERMSIG(status) != signal.SIGUSR1:
                self.last_bgsave_ok = False
        else:
            log.warning("Background saving error")
            self.last_bgsave_ok = False
        self.update_write_denial()
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        for hook in self.bgsave_done_hooks:
            hook(ok)
        if self.bgsave_scheduled:
            self.bgsave_scheduled = False
            self.bgsave()
        elif self.server.aof.rewrite_scheduled:
            self.server.aof.rewrite_scheduled = False
            self.server.aof.start_rewrite()

    def kill_child(self) -> None:
        if self.child_pid > 0:
            try:
                os.kill(self.child_pid, signal.SIGUSR1)
                os.waitpid(self.child_pid, 0)
            except OSError:
                pass
            _remove_temp(self.child_pid, self.server.config.dir)
            self.child_pid = -1
            self.child_type = ""
            self._close_progress()
            for hook in self.bgsave_done_hooks:
                hook(False)

    # -- save points ----------------------------------------------------------------------
    def save_points(self) -> list[tuple[int, int]]:
        """``save`` as (seconds, changes) pairs (the config keeps them parsed)."""
        return list(self.server.config.save or ())

    def cron(self) -> None:
        self.check_child()
        self.update_write_denial()
        if self.child_running:
            return
        server = self.server
        now = time.time()
        for seconds, changes in self.save_points():
            # after a failed BGSAVE Redis waits 5 s (CONFIG_BGSAVE_RETRY_DELAY) to retry
            if (server.dirty >= changes and now - self.lastsave > seconds
                    and (self.last_bgsave_ok or now - self.last_bgsave_try > 5)):
                log.info("%d changes in %d seconds. Saving...", changes, seconds)
                self.bgsave()
                break

    def writes_denied(self) -> bool:
        """Redis's MISCONF condition: save points set, last BGSAVE failed, option on."""
        cfg = self.server.config
        return (getattr(cfg, "stop_writes_on_bgsave_error", True) and bool(cfg.save)
                and not self.last_bgsave_ok)

    def update_write_denial(self) -> None:
        """Keep ``server.deny_write_error`` in step (Redis's writeCommandsDeniedByDiskError)."""
        server = self.server
        if self.writes_denied():
            server.deny_write_error = errors.MISCONF_RDB
        elif not server.aof.last_write_ok and server.aof.enabled:
            server.deny_write_error = errors.misconf_aof(server.aof.last_error)
        else:
            server.deny_write_error = None

    # -- loading --------------------------------------------------------------------------
    def load(self, replace: bool = True) -> bool:
        """Load ``dir/dbfilename`` in one go (DEBUG RELOAD); see ``load_steps``."""
        return run_to_end(self.load_steps(replace))

    def load_steps(self, replace: bool = True):
        """Load ``dir/dbfilename`` into the databases; False if there is none.

        A key already present is overwritten, or (``replace`` False: DEBUG RELOAD NOFLUSH
        without MERGE) makes the load fail as a duplicate, as in Redis."""
        path = self.path
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return False
        start = time.monotonic()
        # a replica keeps expired keys: its master's DELs remove them (Redis's rdbLoad)
        yield from self.payload_steps(data, replace, skip_expired=getattr(
            self.server, "master_link", None) is None)
        log.info("DB loaded from disk: %.3f seconds", time.monotonic() - start)
        return True

    def payload_steps(self, data: bytes, replace: bool = True, skip_expired: bool = True):
        """Load the RDB image ``data`` (a file's, or a master's full sync); yields the bytes
        parsed so far between batches of keys and returns the RDB's ``RdbContents``."""
        server = self.server
        self.loading_start = time.time()
        on_key = self.key_loader(replace, skip_expired=skip_expired)
        self.loading_total = len(data)
        self.loading_done = 0
        steps = parse_steps(data, server.config, on_key,
                            verify_checksum=getattr(server.config, "rdbchecksum", True))
        while True:
            try:
                self.loading_done = next(steps)
            except StopIteration as done:
                contents = done.value
                break
            for _ in range(EVENT_ITERATIONS):  # accept, read, reply
                yield self.loading_done
        self.last_aux = contents.aux  # a replica's repl-id/repl-offset (PSYNC after restart)
        restore = getattr(server, "restore_function_libraries", None)
        if contents.functions and restore is not None:
            restore(contents.functions)
        server.stat_dump_payload_sanitizations = \
            getattr(server, "stat_dump_payload_sanitizations", 0) + contents.sanitized
        count, expired = self.loaded_keys, self.expired_keys
        if contents.empty_keys:
            log.warning("Done loading RDB, keys loaded: %d, keys expired: %d, empty keys "
                        "skipped: %d.", count, expired, contents.empty_keys)
        else:
            log.info("Done loading RDB, keys loaded: %d, keys expired: %d.", count, expired)
        return contents

    def key_loader(self, replace: bool = True, skip_expired: bool = False):
        """The per-key callback of an RDB load (a dump or an AOF's RDB base): stores the key,
        counts it in ``loaded_keys``/``expired_keys`` and applies ``key-load-delay``.

        A key already present is overwritten, or (``replace`` False) fails the load as a
        duplicate; already-expired keys are dropped when ``skip_expired`` (an AOF base keeps
        them, as Redis does: their DELs follow in the log)."""
        self.loaded_keys = self.expired_keys = 0
        return KeyStore(self, self.server.dbs, self.server.config, replace, skip_expired,
                        int(time.time() * 1000), debug_delay)

    # -- INFO -----------------------------------------------------------------------------
    def info_fields(self) -> dict[str, Any]:
        """``INFO persistence``, every field Redis 7.0 prints, in its order."""
        server = self.server
        now = time.time()
        saving = self.child_type == "rdb"
        progress = self.child_progress() if self.child_running else (0, 0)
        processed, total = progress if saving else (0, 0)
        fields: dict[str, Any] = {
            "loading": int(server.loading),
            "async_loading": 0,
            "current_cow_peak": self.cow_peak,
            "current_cow_size": self.cow_size,
            "current_cow_size_age":
                int(time.monotonic() - self.cow_updated) if self.cow_updated else 0,
            "current_fork_perc": f"{100.0 * processed / total if total else 0:.2f}",
            "current_save_keys_processed": processed,
            "current_save_keys_total": total,
            "rdb_changes_since_last_save": server.dirty,
            "rdb_bgsave_in_progress": int(saving),
            "rdb_last_save_time": self.lastsave,
            "rdb_last_bgsave_status": "ok" if self.last_bgsave_ok else "err",
            "rdb_last_bgsave_time_sec": self.last_bgsave_time_sec,
            "rdb_current_bgsave_time_sec": int(now - self.child_started) if saving else -1,
            "rdb_saves": self.saves,
            "rdb_last_cow_size": self.last_cow_size,
            "rdb_last_load_keys_expired": self.expired_keys,
            "rdb_last_load_keys_loaded": self.loaded_keys,
            **server.aof.info_fields(),
        }
        if server.loading:
            elapsed = int(now) - int(self.loading_start)
            remaining = self.loading_total - self.loading_done
            fields.update({
                "loading_start_time": int(self.loading_start),
                "loading_total_bytes": self.loading_total,
                "loading_rdb_used_mem": 0,
                "loading_loaded_bytes": self.loading_done,
                "loading_loaded_perc":
                    f"{100.0 * self.loading_done / (self.loading_total + 1):.2f}",
                "loading_eta_seconds":
                    elapsed * remaining // (self.loading_done + 1) if elapsed else 1,
            })
        return fields


class _Pace:
    """Per key written by a BGSAVE child: ``rdb-key-save-delay``, and every 1024 keys (at
    most once a second) the count so far to the parent, as Redis's rdbSaveDb does."""

    def __init__(self, fd: int, delay_us: int) -> None:
        self.fd = fd
        self.delay_us = delay_us
        self.count = 0
        self.reported = 0.0

    def after_key(self) -> None:
        if self.delay_us:
            debug_delay(self.delay_us)
        self.count += 1
        if (self.count - 1) & 1023 == 0:
            now = time.monotonic()
            if now - self.reported >= 1.0:
                self.reported = now
                self._send(b"%d %d\n" % (self.count, private_dirty()))

    def finish(self) -> None:
        self._send(b"E %d\n" % private_dirty())

    def _send(self, line: bytes) -> None:
        try:
            os.write(self.fd, line)
        except OSError:
            pass


def private_dirty() -> int:
    """This process's copy-on-write cost: its private dirty pages (Redis reads the same
    figure from /proc/self/smaps in a fork child)."""
    try:
        with open("/proc/self/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Private_Dirty:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class _PacedDb:
    """A database as the RDB writer walks it in the child, each key told to ``pace``."""

    def __init__(self, db: Any, pace: _Pace) -> None:
        self.id = db.id
        self.expires = db.expires
        self.data = _PacedItems(db.data, pace)


class _PacedItems:
    def __init__(self, data: Any, pace: _Pace) -> None:
        self._data = data
        self._pace = pace

    def __len__(self) -> int:
        return len(self._data)

    def items(self):
        after_key = self._pace.after_key
        for item in self._data.items():
            yield item
            after_key()


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _reset_child_signals() -> None:
    """A BGSAVE child finishes its save on SIGTERM/SIGINT (Redis's child only notes a
    shutdown request it never acts on); SIGUSR1, the server's own stop, ends it."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)


def _remove_temp(pid: int, directory: str) -> None:
    try:
        os.unlink(os.path.join(directory, f"temp-{pid}.rdb"))
    except OSError:
        pass
