"""``pykv-server``: command line and config file in, a running server out.

Accepts redis-server's shape: ``pykv-server [/path/to/redis.conf] [--option value ...] [-]``
plus ``--listener TYPE,key=value,...`` (repeatable). A bad option or value prints the error
the way redis-server does and exits 1. The process then lives as redis-server 7.0 does:
supervision detected, daemonized if asked, Redis's start-up lines, listeners, pidfile,
process title, logo, dataset, ``Ready to accept connections``; signals, shutdown and crash
report as Redis (the parts are in ``pykv.server.lifecycle``).
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

from pykv.assemble import build_server, command_exists
from pykv.commands.debug import register_subcommand
from pykv.commands.info import generate_info
from pykv.config import Config
from pykv.config.loader import REDIS_VERSION, ConfigLoadError, load_config
from pykv.server.lifecycle import banner, crash, daemon, oom, proctitle, signals, supervision
from pykv.server.lifecycle.redislog import LOG_LEVELS, VERBOSE, setup_logging

__all__ = ["LOG_LEVELS", "VERBOSE", "main", "setup_logging", "version_line"]

log = logging.getLogger("pykv")


def install_event_loop_policy() -> str:
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


def _exit_now(code: int) -> None:
    """Leave at once, as Redis's exit() after the last log line: no interpreter teardown
    (freeing a large dataset object by object can take seconds)."""
    for handler in log.handlers:
        try:
            handler.flush()
        except Exception:  # noqa: BLE001
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


async def run_server(config: Config, supervisor: supervision.Supervisor | None = None,
                     loop_name: str = "asyncio", background: bool = False) -> int:
    try:
        server = build_server(config)
    except ValueError as exc:  # e.g. nodes.conf locked by another node: Redis exits 1
        log.warning("%s", exc)
        return 1
    server.supervisor = supervisor
    signals.install(asyncio.get_running_loop(), server)
    # a file-size limit (ulimit -f) must fail the write with EFBIG, not kill the server:
    # persistence then reports the error (MISCONF) and keeps the previous good file
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    banner.initializing(config, loop_name)
    crash.install(server, generate_info)
    register_subcommand(b"segfault", 2, crash.segfault)
    try:
        await server.open_listeners()
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
    if not server.listeners:
        log.warning("Configured to not listen anywhere, exiting.")
        return 1
    if background or config.pidfile:
        daemon.write_pidfile(config.pidfile)
    proctitle.install(config)
    banner.announce(config, config.port or config.tls_port)
    try:
        await server.load_and_serve()
    except ValueError as exc:
        log.warning("%s", exc)
        return 1
    if not server.shutdown_asap:
        banner.ready(config, any(lst.spec.type != "unix" for lst in server.listeners
                                 if getattr(lst, "spec", None) is not None))
        if supervisor is not None:
            supervisor.ready()
        oom.install(config)
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
    if argv and argv[0] == "--test-memory":
        sys.exit(test_memory(argv))
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
    setup_logging(config)
    supervisor = supervision.detect(config.supervised)
    background = bool(config.daemonize) and supervisor.mode == "no"
    if background:
        daemon.daemonize()
        if not config.pidfile:
            config.pidfile = daemon.DEFAULT_PIDFILE
    banner.starting(proctitle.program_title(), bool(argv))
    loop_name = install_event_loop_policy()
    code = asyncio.run(run_server(config, supervisor, loop_name, background))
    _exit_now(code)


def version_line() -> str:
    """redis-server's ``--version`` line, pykv's own version after it."""
    from pykv import __version__

    return (f"Redis server v={REDIS_VERSION} sha={banner.GIT_SHA1}:0 malloc=libc bits=64 "
            f"build=0000000000000000 pykv={__version__}")


def test_memory(argv: list[str]) -> int:
    """``--test-memory MB``: Redis's answer without a size; pykv has no memory tester."""
    if len(argv) != 2:
        sys.stderr.write("Please specify the amount of memory to test in megabytes.\n"
                         "Example: ./redis-server --test-memory 4096\n\n")
        return 1
    sys.stderr.write("pykv-server does not include a memory test. Please use one of the "
                     "following two tools:\n1) memtest86: http://www.memtest86.com/\n"
                     "2) memtester: http://pyropus.ca/software/memtester/\n")
    return 1


USAGE = """Usage: pykv-server [/path/to/redis.conf] [options] [-]
       pykv-server - (read config from stdin)
       pykv-server -v or --version
       pykv-server -h or --help
       pykv-server --test-memory <megabytes>

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
