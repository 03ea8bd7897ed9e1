"""The crash report: what redis-server 7.0 logs when it dies of SIGSEGV, SIGBUS, SIGFPE,
SIGILL or SIGABRT (``crash-log-enabled yes``), and ``DEBUG SEGFAULT``.

A C-level ``sigaction`` handler (through ctypes, with ``SA_SIGINFO`` to read the signal's
``si_code`` and faulting address) writes to the log: the ``REDIS BUG REPORT START`` banner,
``Redis 7.0.15 crashed by signal: N, si_code: N``, the crashed thread's Python stack
(``faulthandler.dump_traceback``, which writes straight to a file descriptor) and its
native stack (glibc's ``backtrace_symbols_fd``), then ``INFO all`` and the client list as
far as they can still be produced, and the end banner. Then the signal's default action
runs (so a core dump still happens where enabled) and the exit status says which signal.
A Python-level handler could not do this: Python runs its handlers later, in the main
loop, and a faulting instruction would fault again first.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import faulthandler
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from pykv.server.lifecycle.banner import REDIS_VERSION
from pykv.server.lifecycle.redislog import formatter, logfile_path, timestamp

SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT)
SA_SIGINFO, SA_ONSTACK, SA_NODEFER, SA_RESETHAND = 0x4, 0x08000000, 0x40000000, 0x80000000


class _Siginfo(ctypes.Structure):
    _fields_ = [("si_signo", ctypes.c_int), ("si_errno", ctypes.c_int),
                ("si_code", ctypes.c_int), ("_pad", ctypes.c_int),
                ("si_addr", ctypes.c_void_p)]


class _Sigaction(ctypes.Structure):  # glibc's struct sigaction (Linux)
    _fields_ = [("sa_sigaction", ctypes.c_void_p), ("sa_mask", ctypes.c_ulong * 16),
                ("sa_flags", ctypes.c_int), ("sa_restorer", ctypes.c_void_p)]


_HANDLER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(_Siginfo), ctypes.c_void_p)

_libc: Any = None
_server: Any = None
_info: Callable[[Any, list[str]], str] | None = None  # INFO's text (pykv.commands.info)
_handler: Any = None  # the ctypes callback; must stay referenced while installed
# the client whose command is running into the crash, and its arguments (DEBUG SEGFAULT)
current_client: Any = None
current_argv: list[bytes] = []


def _load_libc() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _libc.sigaction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        _libc.mmap.restype = ctypes.c_void_p
        _libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int, ctypes.c_long]
        _libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return _libc


def _log_fd() -> tuple[int, bool]:
    """Where the log goes: the logfile opened for appending, or stdout."""
    path = logfile_path(_server.config) if _server is not None else ""
    if path:
        try:
            return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644), True
        except OSError:
            pass
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001
        pass
    return 1, False


def _line(text: str) -> str:
    pid = os.getpid()
    role = "M" if pid == formatter.server_pid else "C"
    return f"{pid}:{role} {timestamp(time.time())} # {text}\n"


def _write(fd: int, text: str) -> None:
    data = text.encode("utf-8", "replace")
    while data:
        try:
            data = data[os.write(fd, data):]
        except InterruptedError:
            continue
        except OSError:
            return


def _sections() -> str:
    """INFO all, the client list, the current client: whatever can still be built."""
    out = []
    try:
        if _info is not None:
            out.append("------ INFO OUTPUT ------\n" + _info(_server, ["all"]) + "\n")
    except Exception as exc:  # noqa: BLE001 - the report must go on
        out.append(f"------ INFO OUTPUT ------\n(not available: {exc!r})\n")
    try:
        from pykv.server.client_info import client_info_line

        lines = [client_info_line(c) for c in list(_server.clients.values())]
        out.append("------ CLIENT LIST OUTPUT ------\n" + "\n".join(lines) + "\n")
        client = current_client
        if client is not None:
            argv = current_argv
            text = client_info_line(client) + "\n" + "".join(
                f"argv[{i}]: '\"{a.decode('latin-1')}\"'\n" for i, a in enumerate(argv))
            out.append("------ CURRENT CLIENT INFO ------\n" + text)
    except Exception as exc:  # noqa: BLE001
        out.append(f"------ CLIENT LIST OUTPUT ------\n(not available: {exc!r})\n")
    return "\n".join(out)


def report(fd: int, signum: int, si_code: int, address: int | None) -> None:
    """Write the whole report to ``fd``."""
    _write(fd, "\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n")
    _write(fd, _line(f"Redis {REDIS_VERSION} crashed by signal: {signum}, si_code: {si_code}"))
    if signum in (signal.SIGSEGV, signal.SIGBUS) and address is not None:
        _write(fd, _line(f"Accessing address: {address:#x}"))
    _write(fd, "\n------ STACK TRACE ------\nPython (crashed thread):\n")
    try:
        faulthandler.dump_traceback(fd, all_threads=False)
    except Exception:  # noqa: BLE001
        pass
    _write(fd, "\nBacktrace:\n")
    try:
        frames = (ctypes.c_void_p * 100)()
        libc = _load_libc()
        count = libc.backtrace(frames, 100)
        libc.backtrace_symbols_fd(frames, count, fd)
    except Exception:  # noqa: BLE001
        _write(fd, "(native backtrace not available)\n")
    if _server is not None:
        _write(fd, "\n" + _sections())
    _write(fd, "\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n"
               "       Please report the crash by opening an issue in pykv's tracker,\n"
               "       with this report and the log lines before it.\n\n")


def _on_crash(signum: int, info: Any, _context: Any) -> None:
    try:
        si_code = info.contents.si_code if info else 0
        address = info.contents.si_addr if info else None
        fd, close = _log_fd()
        try:
            report(fd, signum, si_code, address)
        finally:
            if close:
                os.close(fd)
    finally:
        # the default action, for the right exit status (and a core where enabled)
        _set(signum, 0, 0)
        os.kill(os.getpid(), signum)


def _set(signum: int, handler: int, flags: int) -> None:
    action = _Sigaction()
    action.sa_sigaction = handler
    action.sa_flags = flags
    _load_libc().sigaction(signum, ctypes.byref(action), None)


def enable(on: bool = True) -> None:
    """Install (or, with ``on=False``, remove) the crash handler for every fatal signal."""
    global _handler
    if on:
        if _handler is None:
            _handler = _HANDLER_TYPE(_on_crash)
        address = ctypes.cast(_handler, ctypes.c_void_p).value
        for signum in SIGNALS:
            _set(signum, address, SA_SIGINFO | SA_NODEFER | SA_RESETHAND)
    else:
        for signum in SIGNALS:
            _set(signum, 0, 0)


def install(server: Any, info: Callable[[Any, list[str]], str] | None = None) -> None:
    """Follow ``crash-log-enabled`` (also when CONFIG SET changes it); ``info`` gives the
    report its INFO text (``generate_info(server, sections)``)."""
    global _server, _info
    _server, _info = server, info
    try:
        enable(bool(server.config.crash_log_enabled))
    except (OSError, AttributeError):
        return  # no libc sigaction here: the default actions stay
    server.config.on_change("crash-log-enabled", lambda value: enable(bool(value)))


def segfault(client: Any, argv: list[bytes]) -> None:
    """DEBUG SEGFAULT: write to a read-only page, a real SIGSEGV (si_code SEGV_ACCERR)."""
    global current_client, current_argv
    current_client, current_argv = client, list(argv)
    libc = _load_libc()
    page = 4096
    addr = libc.mmap(None, page, 0x1 | 0x2, 0x02 | 0x20, -1, 0)  # RW, MAP_PRIVATE|ANON
    libc.mprotect(addr, page, 0x1)  # read-only now
    ctypes.memset(addr, ord("x"), 1)
