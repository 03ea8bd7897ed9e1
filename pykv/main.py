"""``pykv-server``: command line and config file in, a running server out.

Accepts redis-server's shape: ``pykv-server [/path/to/redis.conf] [--option value ...] [-]``
plus ``--listener TYPE,key=value,...`` (repeatable). A bad option or value prints the error
the way redis-server does and exits 1. Logging follows Redis too: one line per event,
``pid:role date time.ms level-char message``, to stdout or ``logfile``, filtered by
``loglevel`` (which CONFIG SET changes at once).
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time

from pykv.assemble import build_server, command_exists
from pykv.config import Config
from pykv.config.loader import REDIS_VERSION, ConfigLoadError, load_config

log = logging.getLogger("pykv")

VERBOSE = 15  # Redis's "verbose" sits between debug and notice
logging.addLevelName(VERBOSE, "VERBOSE")
LOG_LEVELS = {"debug": logging.DEBUG, "verbose": VERBOSE, "notice": logging.INFO,
              "warning": logging.WARNING}


class RedisLogFormatter(logging.Formatter):
    """``1234:M 30 Nov 2026 00:33:46.677 * message``; role C until the server runs."""

    role = "C"

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno >= logging.WARNING:
            mark = "#"
        else:
            mark = {logging.DEBUG: ".", VERBOSE: "-"}.get(record.levelno, "*")
        stamp = time.strftime("%d %b %Y %H:%M:%S", time.localtime(record.created))
        msecs = int(record.created * 1000) % 1000
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return f"{os.getpid()}:{self.role} {stamp}.{msecs:03d} {mark} {text}"


_formatter = RedisLogFormatter()


def setup_logging(config: Config | None = None) -> None:
    """Send the ``pykv`` logger to stdout or ``logfile`` at ``loglevel``."""
    handler: logging.Handler
    if config is not None and config.logfile:
        handler = logging.FileHandler(os.path.join(config.dir, config.logfile))
    else:
        handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_formatter)
    root = logging.getLogger("pykv")
    root.handlers[:] = [handler]
    root.setLevel(LOG_LEVELS[config.loglevel] if config is not None else logging.INFO)
    root.propagate = False
    if config is not None:
        config.on_change("loglevel", lambda value: root.setLevel(LOG_LEVELS[value]))


def install_event_loop_policy() -> str:
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


def daemonize() -> None:
    """Fork into the background as redis-server does with ``daemonize yes``."""
    if os.fork():
        os._exit(0)
    os.setsid()
    fd = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(fd, std)
    if fd > 2:
        os.close(fd)


def write_pidfile(path: str) -> None:
    try:
        with open(path, "w") as fh:
            fh.write(f"{os.getpid()}\n")
    except OSError as exc:
        log.warning("Failed to write PID file: %s", exc.strerror)


async def run_server(config: Config) -> int:
    server = build_server(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.request_shutdown_signal, sig)
    # a file-size limit (ulimit -f) must fail the write with EFBIG, not kill the server:
    # persistence then reports the error (MISCONF) and keeps the previous good file
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _formatter.role = "M"
    log.info("Running mode=standalone, port=%d.", config.port)
    log.warning("Server initialized")
    if not (config.port or config.tls_port or config.unixsocket or config.listeners):
        log.warning("Configured to not listen anywhere, exiting.")
        return 1
    try:
        await server.start()
    except OSError as exc:
        text = str(exc.args[1] if len(exc.args) > 1 else exc)
        if "TCP listening socket" in text:
            log.warning("Warning: %s", text)
            log.warning("Failed listening on port %d (TCP), aborting.", config.port)
        else:
            log.warning("%s", text)
        return 1
    except ValueError as exc:
        log.warning("%s", exc)
        return 1
    await server.wait_stopped()
    return server.exit_code


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-v", "--version"):
        print(version_line())
        sys.exit(0)
    if argv and argv[0] in ("-h", "--help"):
        sys.stderr.write(USAGE)
        sys.exit(1)
    setup_logging()
    try:
        config = load_config(argv, log=log.warning, command_exists=command_exists)
    except ConfigLoadError as exc:
        if exc.as_log:
            log.warning("%s", exc)
        else:
            sys.stderr.write(str(exc))
        sys.exit(1)
    os.chdir(config.dir)
    if config.daemonize:
        daemonize()
        if not config.pidfile:
            config.pidfile = "/var/run/pykv.pid"
    setup_logging(config)
    from pykv import __version__

    log.warning("oO0OoO0OoO0Oo pykv is starting oO0OoO0OoO0Oo")
    log.warning("pykv version=%s, redis_version=%s, bits=64, pid=%d, just started",
                __version__, REDIS_VERSION, os.getpid())
    if not argv:
        log.warning("Warning: no config file specified, using the default config. In order "
                    "to specify a config file use pykv-server /path/to/redis.conf")
    else:
        log.warning("Configuration loaded")
    if config.pidfile:
        write_pidfile(config.pidfile)
    loop_name = install_event_loop_policy()
    log.log(VERBOSE, "event loop: %s", loop_name)
    try:
        code = asyncio.run(run_server(config))
    finally:
        if config.pidfile:
            try:
                os.unlink(config.pidfile)
            except OSError:
                pass
    if code == 0:
        log.warning("pykv is now ready to exit, bye bye...")
    sys.exit(code)


def version_line() -> str:
    from pykv import __version__

    return f"pykv server v={__version__} redis_version={REDIS_VERSION} bits=64"


USAGE = """Usage: pykv-server [/path/to/redis.conf] [options] [-]
       pykv-server - (read config from stdin)
       pykv-server -v or --version
       pykv-server -h or --help

Examples:
       pykv-server (run the server with default conf)
       echo 'maxmemory 128mb' | pykv-server -
       pykv-server /etc/redis/6379.conf
       pykv-server --port 7777
       pykv-server --port 7777 --bind 127.0.0.1 ::1
       pykv-server --listener tcp,bind=127.0.0.1,port=7000 --listener unix,path=/tmp/pykv.sock,perm=700
       pykv-server /etc/myredis.conf --loglevel verbose -
       pykv-server /etc/myredis.conf --loglevel verbose
"""

if __name__ == "__main__":
    main()
