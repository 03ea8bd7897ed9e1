"""``pykv-server``: command line and config file in, a running server out.

Accepts redis-server's shape: ``pykv-server [/path/to/redis.conf] [--option value ...]``,
plus ``--listener TYPE,key=value,...`` (repeatable). A bad option or value prints the
error the way redis-server does and exits non-zero.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

from pykv.config import Config
from pykv.config.loader import ConfigLoadError, load_config

log = logging.getLogger("pykv")


def setup_logging(config: Config) -> None:
    level = {
        "debug": logging.DEBUG, "verbose": logging.INFO, "notice": logging.INFO,
        "warning": logging.WARNING, "nothing": logging.CRITICAL + 10,
    }[config.loglevel]
    handler: logging.Handler
    if config.logfile:
        handler = logging.FileHandler(config.logfile)
    else:
        handler = logging.StreamHandler(sys.stdout)
    pid = os.getpid()
    handler.setFormatter(logging.Formatter(
        f"{pid}:M %(asctime)s.%(msecs)03d %(levelchar)s %(message)s", "%d %b %Y %H:%M:%S"))
    handler.addFilter(_LevelChar())
    root = logging.getLogger("pykv")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


class _LevelChar(logging.Filter):
    """Redis marks log lines with ``.`` debug, ``-`` verbose, ``*`` notice, ``#`` warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.levelchar = {logging.DEBUG: ".", logging.INFO: "*"}.get(record.levelno, "#")
        return True


def install_event_loop_policy() -> str:
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


async def run_server(config: Config) -> int:
    from pykv.server.server import Server

    server = Server(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.request_shutdown_signal, sig)
    try:
        await server.start()
    except (OSError, ValueError) as exc:
        log.warning("%s", exc)
        return 1
    await server.wait_stopped()
    return server.exit_code


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-v", "--version"):
        from pykv import __version__
        from pykv.server.server import REDIS_VERSION

        print(f"pykv server v={__version__} redis_version={REDIS_VERSION}")
        sys.exit(0)
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        sys.exit(0)
    try:
        config = load_config(argv)
    except ConfigLoadError as exc:
        sys.stderr.write(str(exc))
        sys.exit(1)
    setup_logging(config)
    loop_name = install_event_loop_policy()
    log.info("pykv starting (event loop: %s, pid %d)", loop_name, os.getpid())
    sys.exit(asyncio.run(run_server(config)))


USAGE = """Usage: pykv-server [/path/to/redis.conf] [options] [-]
       pykv-server -v or --version
       pykv-server -h or --help

Examples:
       pykv-server (run the server with default config: 127.0.0.1:6379)
       pykv-server /etc/redis/6379.conf
       pykv-server --port 7777
       pykv-server --listener tcp,bind=127.0.0.1,port=7000 --listener unix,path=/tmp/pykv.sock
       pykv-server /etc/myredis.conf --loglevel verbose
"""

if __name__ == "__main__":
    main()
