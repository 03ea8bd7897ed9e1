"""Redis's log: ``pid:role dd Mon yyyy hh:mm:ss.mmm <mark> text`` to stdout or ``logfile``.

Marks by level as in Redis: ``.`` debug, ``-`` verbose, ``*`` notice, ``#`` warning. The
role is ``M`` in the server process, ``C`` before it runs and in forked children (BGSAVE).
Like Redis 7.0 the logfile is opened, appended to and closed for every line, so a rotated
log (moved away by logrotate) is recreated at the next line and SIGHUP needs no handling.
With ``syslog-enabled`` every line also goes to syslog (``syslog-ident``,
``syslog-facility``) at the level Redis maps it to.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any, TextIO

VERBOSE = 15  # Redis's "verbose" sits between debug and notice
logging.addLevelName(VERBOSE, "VERBOSE")
LOG_LEVELS = {"debug": logging.DEBUG, "verbose": VERBOSE, "notice": logging.INFO,
              "warning": logging.WARNING}
_MARKS = {logging.DEBUG: ".", VERBOSE: "-", logging.INFO: "*"}

log = logging.getLogger("pykv")


def timestamp(when: float) -> str:
    """``01 Dec 2026 21:28:17.675``"""
    stamp = time.strftime("%d %b %Y %H:%M:%S", time.localtime(when))
    return f"{stamp}.{int(when * 1000) % 1000:03d}"


class RedisLogFormatter(logging.Formatter):
    """``1234:M 30 Nov 2026 00:33:46.677 * message``; role C outside the server process."""

    server_pid = 0  # set once the server runs (main process only)

    def format(self, record: logging.LogRecord) -> str:
        mark = "#" if record.levelno >= logging.WARNING else _MARKS.get(record.levelno, "*")
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        pid = os.getpid()
        role = "M" if pid == self.server_pid else "C"
        return f"{pid}:{role} {timestamp(record.created)} {mark} {text}"


class ReopeningFileHandler(logging.Handler):
    """Append each line to ``path``, opening and closing it every time (Redis's way)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
            with open(self.path, "a", encoding="utf-8", errors="replace") as fh:
                fh.write(line)
        except Exception:  # noqa: BLE001 - logging must never take the server down
            self.handleError(record)


class StdoutHandler(logging.StreamHandler):
    """stdout, looked up at each line (daemonize replaces fd 1 after set-up)."""

    def __init__(self) -> None:
        super().__init__(sys.stdout)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stdout
        super().emit(record)


class SyslogHandler(logging.Handler):
    """Every line to syslog too, with Redis's level map (verbose -> LOG_INFO)."""

    def __init__(self, ident: str, facility: str) -> None:
        super().__init__()
        import syslog

        self._syslog = syslog
        self._levels = {logging.DEBUG: syslog.LOG_DEBUG, VERBOSE: syslog.LOG_INFO,
                        logging.INFO: syslog.LOG_NOTICE, logging.WARNING: syslog.LOG_WARNING}
        syslog.openlog(ident, syslog.LOG_PID | syslog.LOG_NDELAY | syslog.LOG_NOWAIT,
                       getattr(syslog, "LOG_" + facility.upper()))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = self._levels.get(record.levelno, self._syslog.LOG_WARNING)
            self._syslog.syslog(level, record.getMessage())
        except Exception:  # noqa: BLE001
            self.handleError(record)


formatter = RedisLogFormatter()


def logfile_path(config: Any) -> str:
    return os.path.join(config.dir, config.logfile) if config.logfile else ""


def setup_logging(config: Any = None) -> None:
    """Send the ``pykv`` logger to stdout or ``logfile`` (and syslog) at ``loglevel``."""
    handlers: list[logging.Handler] = []
    if config is not None and config.logfile:
        handlers.append(ReopeningFileHandler(logfile_path(config)))
    else:
        handlers.append(StdoutHandler())
    if config is not None and config.syslog_enabled:
        handlers.append(SyslogHandler(config.syslog_ident, config.syslog_facility))
    for handler in handlers:
        handler.setFormatter(formatter)
    root = logging.getLogger("pykv")
    root.handlers[:] = handlers
    root.setLevel(LOG_LEVELS[config.loglevel] if config is not None else logging.INFO)
    root.propagate = False
    if config is not None:
        config.on_change("loglevel", lambda value: root.setLevel(LOG_LEVELS[value]))


def _output(config: Any) -> TextIO | None:
    path = logfile_path(config) if config is not None else ""
    if path:
        try:
            return open(path, "a", encoding="utf-8", errors="replace")
        except OSError:
            return None
    return None


def log_raw(text: str, config: Any = None) -> None:
    """Text without the line prefix (the ASCII logo), where the log goes."""
    fh = _output(config)
    if fh is not None:
        with fh:
            fh.write(text)
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def log_from_signal_handler(text: str, config: Any = None) -> None:
    """Redis's serverLogFromHandler line: ``pid:signal-handler (unixtime) text``."""
    if not log.isEnabledFor(logging.WARNING):
        return
    log_raw(f"{os.getpid()}:signal-handler ({int(time.time())}) {text}\n", config)
