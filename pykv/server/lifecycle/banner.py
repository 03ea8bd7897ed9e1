"""What redis-server 7.0 logs while it starts, in its order, words and levels.

``starting`` (before the config is applied: ``oO0OoO0OoO0Oo``, version, config loaded or
the no-config-file warning), ``initializing`` (role M from here: monotonic clock, open
files limit), ``announce`` (the ASCII logo or ``Running mode=...``, the TCP backlog warning,
``Server initialized`` and the memory warnings) and ``ready``. pykv's own facts (its
version, the event loop) are logged apart, at ``verbose``.
"""
from __future__ import annotations

import errno
import logging
import os
import resource
import sys
from importlib import resources
from typing import Any

from pykv.server.lifecycle.redislog import VERBOSE, formatter, log_raw

log = logging.getLogger("pykv")

REDIS_VERSION = "7.0.15"
GIT_SHA1 = "00000000"
# file descriptors Redis keeps for itself beyond maxclients (CONFIG_MIN_RESERVED_FDS)
RESERVED_FDS = 32

_OVERCOMMIT = (
    "WARNING Memory overcommit must be enabled! Without it, a background save or "
    "replication may fail under low memory condition. Being disabled, it can can also cause "
    "failures without low memory condition, see https://github.com/jemalloc/jemalloc/issues/"
    "1328. To fix this issue add 'vm.overcommit_memory = 1' to /etc/sysctl.conf and then "
    "reboot or run the command 'sysctl vm.overcommit_memory=1' for this to take effect.")


def starting(program: str, had_arguments: bool) -> None:
    """The first lines, still as role C (Redis logs them before initServer)."""
    log.warning("oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo")
    log.warning("Redis version=%s, bits=64, commit=%s, modified=0, pid=%d, just started",
                REDIS_VERSION, GIT_SHA1, os.getpid())
    if not had_arguments:
        log.warning("Warning: no config file specified, using the default config. In order "
                    "to specify a config file use %s /path/to/redis.conf", program)
    else:
        log.warning("Configuration loaded")


def initializing(config: Any, loop_name: str) -> None:
    """From here the process is the server (role M): Redis's initServer lines."""
    from pykv import __version__

    formatter.server_pid = os.getpid()
    log.info("monotonic clock: POSIX clock_gettime")
    log.log(VERBOSE, "pykv %s (Python %d.%d.%d), event loop: %s", __version__,
            *sys.version_info[:3], loop_name)
    adjust_open_files_limit(config)


def adjust_open_files_limit(config: Any) -> None:
    """Redis's adjustOpenFilesLimit: raise RLIMIT_NOFILE to maxclients + 32 if possible,
    else lower maxclients to what the limit allows (with Redis's warnings)."""
    wanted = config.maxclients + RESERVED_FDS
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        log.warning("Unable to obtain the current NOFILE limit (%s), assuming 1024 and "
                    "setting the max clients configuration accordingly.", "unknown")
        config.maxclients = 1024 - RESERVED_FDS
        return
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    limit = wanted
    error = ""
    while limit > soft:
        try:
            # the hard limit only ever goes up (an unlimited one stays unlimited)
            new_hard = hard if hard == resource.RLIM_INFINITY else max(hard, limit)
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, new_hard))
            break
        except OSError as exc:
            error = exc.strerror or str(exc)
            limit -= 16 if limit > 16 else 1
        except ValueError as exc:  # Python's own words for EPERM / EINVAL: use libc's
            code = errno.EPERM if "not allowed" in str(exc) else errno.EINVAL
            error = os.strerror(code)
            limit -= 16 if limit > 16 else 1
    else:
        limit = soft
    if limit >= wanted:
        log.info("Increased maximum number of open files to %d (it was originally set to %d).",
                 limit, soft)
        return
    log.warning("You requested maxclients of %d requiring at least %d max file descriptors.",
                config.maxclients, wanted)
    log.warning("Server can't set maximum open files to %d because of OS error: %s.",
                wanted, error or "Operation not permitted")
    if limit <= RESERVED_FDS:
        log.warning("Your current 'ulimit -n' of %d is not enough for the server to start. "
                    "Please increase your open file limit to at least %d. Exiting.",
                    soft, wanted)
        raise SystemExit(1)
    config.maxclients = limit - RESERVED_FDS
    log.warning("Current maximum open files is %d. maxclients has been reduced to %d to "
                "compensate for low ulimit. If you need higher maxclients increase "
                "'ulimit -n'.", limit, config.maxclients)


def _logo() -> str:
    return resources.files(__package__).joinpath("logo.txt").read_text(encoding="utf-8")


def shows_logo(config: Any) -> bool:
    """Redis: the logo with ``always-show-logo``, or on a terminal when not logging
    elsewhere."""
    if config.always_show_logo:
        return True
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty and not config.logfile and not config.syslog_enabled


def announce(config: Any, port: int) -> None:
    """The logo (or its one-line form), then ``Server initialized`` and the warnings."""
    mode = "cluster" if config.cluster_enabled else "standalone"
    if shows_logo(config):
        if log.isEnabledFor(logging.INFO):
            log_raw(_logo().format(version=REDIS_VERSION, sha=GIT_SHA1, dirty=0, bits=64,
                                   mode=mode, port=port, pid=os.getpid()), config)
    else:
        log.info("Running mode=%s, port=%d.", mode, port)
    somaxconn = _read_int("/proc/sys/net/core/somaxconn")
    if somaxconn is not None and somaxconn < config.tcp_backlog:
        log.warning("WARNING: The TCP backlog setting of %d cannot be enforced because "
                    "/proc/sys/net/core/somaxconn is set to the lower value of %d.",
                    config.tcp_backlog, somaxconn)
    log.warning("Server initialized")
    if _read_int("/proc/sys/vm/overcommit_memory") == 0:
        log.warning("%s", _OVERCOMMIT)


def ready(config: Any, tcp_listening: bool) -> None:
    if tcp_listening:
        log.info("Ready to accept connections")
    if config.unixsocket:
        log.info("The server is now ready to accept connections at %s", config.unixsocket)


def _read_int(path: str) -> int | None:
    try:
        with open(path) as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
