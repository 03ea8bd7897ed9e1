"""``daemonize yes`` and ``pidfile``, as redis-server 7.0 does them.

The process detaches with a double fork (the first child starts a new session and forks
again, so the daemon can never reacquire a controlling terminal); stdin, stdout and stderr
then point at /dev/null, so only ``logfile`` (or syslog) still sees the log. The pidfile is
written once the listeners are open, and removed at shutdown.
"""
from __future__ import annotations

import logging
import os

log = logging.getLogger("pykv")

DEFAULT_PIDFILE = "/var/run/redis.pid"  # Redis's CONFIG_DEFAULT_PID_FILE


def daemonize() -> None:
    """Detach from the terminal; the original process exits 0 at once."""
    if os.fork():
        os._exit(0)
    os.setsid()
    if os.fork():
        os._exit(0)
    fd = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(fd, std)
    if fd > 2:
        os.close(fd)


def write_pidfile(path: str) -> None:
    """Best effort, as Redis: a failure is a warning, not a reason to stop."""
    try:
        with open(path, "w") as fh:
            fh.write(f"{os.getpid()}\n")
    except OSError as exc:
        log.warning("Failed to write PID file: %s", exc.strerror)


def remove_pidfile(path: str) -> None:
    log.info("Removing the pid file.")
    try:
        os.unlink(path)
    except OSError:
        pass
