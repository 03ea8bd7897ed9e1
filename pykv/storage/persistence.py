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
from typing import Any

from pykv import errors
from pykv.storage.rdb.encoding import RdbFormatError
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
        self.loaded_keys = 0
        self.fork_usec = 0
        self.saves = 0

    # -- paths and payload ---------------------------------------------------------------
    @property
    def path(self) -> str:
        cfg = self.server.config
        return os.path.join(cfg.dir, cfg.dbfilename)

    def snapshot(self) -> bytes:
        server = self.server
        now = int(time.time())
        aux = {
            b"redis-ver": server.version.encode(),
            b"redis-bits": b"64",
            b"ctime": b"%d" % now,
            b"used-mem": b"%d" % _rss_bytes(),
            b"aof-base": b"0",
        }
        functions = []
        library_dump = getattr(server, "function_library_sources", None)
        if library_dump is not None:
            functions = library_dump()
        return serialize(server.dbs, server.config, aux, functions)

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
        self.saves += 1

    # -- BGSAVE ---------------------------------------------------------------------------
    @property
    def child_running(self) -> bool:
        return self.child_pid > 0

    def bgsave(self) -> bool:
        """Fork a child that saves; False if the fork failed."""
        server = self.server
        self.last_bgsave_try = time.time()
        self.dirty_before_bgsave = server.dirty
        start = time.monotonic()
        try:
            pid = os.fork()
        except OSError as exc:
            log.warning("Can't save in background: fork: %s", exc.strerror)
            self.last_bgsave_ok = False
            return False
        if pid == 0:  # child: save and leave without running any parent machinery
            code = 1
            try:
                _reset_child_signals()
                write_atomically(self.path, self.snapshot())
                code = 0
            except BaseException as exc:  # noqa: BLE001 - the child must always exit
                try:
                    os.write(2, f"BGSAVE child failed: {exc}\n".encode())
                except OSError:
                    pass
            finally:
                os._exit(code)
        self.fork_usec = int((time.monotonic() - start) * 1e6)
        self.child_pid = pid
        self.child_type = "rdb"
        self.child_started = time.time()
        log.info("Background saving started by pid %d", pid)
        return True

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
        self.last_bgsave_time_sec = int(time.time() - self.child_started)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            log.info("Background saving terminated with success")
            self._saved(self.child_started, self.dirty_before_bgsave)
        else:
            if os.WIFSIGNALED(status):
                log.warning("Background saving terminated by signal %d", os.WTERMSIG(status))
                _remove_temp(pid, self.server.config.dir)
            else:
                log.warning("Background saving error")
            self.last_bgsave_ok = False
        self.update_write_denial()
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
        server = self.server
        self.loading_start = time.time()
        start = time.monotonic()
        now_ms = int(time.time() * 1000)
        count = 0
        expired = 0

        dbs = server.dbs

        def add(db_id: int, key: bytes, value: Any, expire_ms: int, idle: int) -> None:
            nonlocal count, expired
            if db_id >= len(dbs):
                raise RdbFormatError(f"FATAL: Data file was created with a Redis server "
                                     f"configured to handle more than {len(dbs)} "
                                     f"databases. Exiting")
            if 0 <= expire_ms < now_ms:
                expired += 1
                return
            db = dbs[db_id]
            if not replace and key in db.data:
                raise RdbFormatError(f"Duplicate key '{key!r}' found in RDB file")
            db.data[key] = value
            if expire_ms >= 0:
                db.expires[key] = expire_ms
            count += 1

        self.loading_total = len(data)
        self.loading_done = 0
        steps = parse_steps(data, server.config, add,
                            verify_checksum=getattr(server.config, "rdbchecksum", True))
        while True:
            try:
                self.loading_done = next(steps)
            except StopIteration as done:
                contents = done.value
                break
            yield self.loading_done
        restore = getattr(server, "restore_function_libraries", None)
        if contents.functions and restore is not None:
            restore(contents.functions)
        self.loaded_keys = count
        server.stat_dump_payload_sanitizations = \
            getattr(server, "stat_dump_payload_sanitizations", 0) + contents.sanitized
        if contents.empty_keys:
            log.warning("Done loading RDB, keys loaded: %d, keys expired: %d, empty keys "
                        "skipped: %d.", count, expired, contents.empty_keys)
        else:
            log.info("Done loading RDB, keys loaded: %d, keys expired: %d.", count, expired)
        log.info("DB loaded from disk: %.3f seconds", time.monotonic() - start)
        return True

    # -- INFO -----------------------------------------------------------------------------
    def info_fields(self) -> dict[str, Any]:
        server = self.server
        now = time.time()
        loading = server.loading
        fields: dict[str, Any] = {"loading": int(loading)}
        if loading:
            elapsed = max(now - self.loading_start, 1e-6)
            perc = 100.0 * self.loading_done / self.loading_total if self.loading_total else 0
            rate = self.loading_done / elapsed
            fields.update({
                "loading_start_time": int(self.loading_start),
                "loading_total_bytes": self.loading_total,
                "loading_rdb_used_mem": 0,
                "loading_loaded_bytes": self.loading_done,
                "loading_loaded_perc": f"{perc:.2f}",
                "loading_eta_seconds": int((self.loading_total - self.loading_done) / rate)
                if rate else 1,
            })
        return fields | {
            "async_loading": 0,
            "current_cow_peak": 0,
            "current_cow_size": 0,
            "current_cow_size_age": 0,
            "current_fork_perc": "0.00",
            "current_save_keys_processed": 0,
            "current_save_keys_total": 0,
            "rdb_changes_since_last_save": server.dirty,
            "rdb_bgsave_in_progress": int(self.child_type == "rdb"),
            "rdb_last_save_time": self.lastsave,
            "rdb_last_bgsave_status": "ok" if self.last_bgsave_ok else "err",
            "rdb_last_bgsave_time_sec": self.last_bgsave_time_sec,
            "rdb_current_bgsave_time_sec": int(now - self.child_started)
            if self.child_type == "rdb" else -1,
            "rdb_saves": self.saves,
            "rdb_last_cow_size": 0,
            "rdb_last_load_keys_expired": 0,
            "rdb_last_load_keys_loaded": self.loaded_keys,
            **server.aof.info_fields(),
        }


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _reset_child_signals() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)


def _remove_temp(pid: int, directory: str) -> None:
    try:
        os.unlink(os.path.join(directory, f"temp-{pid}.rdb"))
    except OSError:
        pass
