"""``set-proc-title`` / ``proc-title-template``: the process title ``ps`` shows.

The template's variables are Redis's: ``{title}`` (the program name), ``{listen-addr}``
(first bind address and port, or ``unixsocket:path``), ``{server-mode}`` (``[cluster]`` in
cluster mode, else empty), ``{config-file}``, ``{port}``, ``{tls-port}``, ``{unixsocket}``.

The title is set with the ``setproctitle`` package when it is installed (it rewrites
argv, so ``ps`` and ``/proc/PID/cmdline`` show it). Without it, ``prctl(PR_SET_NAME)``
through ctypes sets the kernel's 15-byte thread name (``/proc/PID/comm``, ``ps -o comm``,
``top``) instead.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import re
import sys
from typing import Any

log = logging.getLogger("pykv")

PR_SET_NAME = 15
_VARIABLE = re.compile(r"\{([^}]*)\}")


def program_title() -> str:
    """What Redis calls exec_argv[0]: the command the server was started as."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "pykv-server"
    if os.path.basename(argv0) in ("__main__.py", "-m", "-c"):
        return "pykv-server"
    return argv0


def expand(template: str, config: Any, title: str) -> str:
    def variable(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "title":
            return title
        if name == "listen-addr":
            if config.port:
                bind = config.bind[0].lstrip("-") if config.bind else "*"
                return f"{bind}:{config.port}"
            return f"unixsocket:{config.unixsocket}"
        if name == "server-mode":
            return "[cluster]" if getattr(config, "cluster_enabled", False) else ""
        if name == "config-file":
            return getattr(config, "config_file", None) or "-"
        if name == "port":
            return str(config.port)
        if name == "tls-port":
            return str(getattr(config, "tls_port", 0))
        if name == "unixsocket":
            return config.unixsocket or ""
        return match.group(0)

    return _VARIABLE.sub(variable, template).strip()


def set_title(text: str) -> str:
    """Set the title; returns which way it was set (``setproctitle``/``prctl``/``""``)."""
    try:
        import setproctitle  # a dependency; the fallback covers a build without it
    except ImportError:
        setproctitle = None
    if setproctitle is not None:
        setproctitle.setproctitle(text)
        return "setproctitle"
    libc_name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        if libc.prctl(PR_SET_NAME, text.encode()[:15], 0, 0, 0) == 0:
            return "prctl"
    except (OSError, AttributeError):
        pass
    return ""


def install(config: Any) -> None:
    """Set the title now (when ``set-proc-title yes``) and whenever the template changes."""
    title = program_title()

    def update(_value: object = None) -> None:
        if config.set_proc_title:
            set_title(expand(config.proc_title_template, config, title))

    update()
    config.on_change("proc-title-template", update)
