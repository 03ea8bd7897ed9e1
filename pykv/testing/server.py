"""The embedded testing server: a real pykv in a subprocess, for a user's own tests.

``with Server() as s:`` starts ``python -m pykv`` on a free 127.0.0.1 port (and, with
``unix_socket=True``, on a unix socket in a private temporary directory), waits until it
answers PING, and on exit stops it: SIGTERM first, SIGKILL if it has not exited in time.

Why a subprocess rather than a thread: the server owns an event loop, installs signal
handlers and forks for persistence (BGSAVE), none of which mix well with the test process;
a subprocess also makes "the server crashed" observable (``returncode``) instead of taking
the tests down with it. Starting one costs 0.2-0.4 s on a quiet machine (mostly importing
pykv in the new interpreter), seconds on a heavily loaded one. No redis binary is needed; the clients (``client()``,
``async_client()``) need redis-py: ``pip install 'pykv[testing]'``.

Everything the server writes to stdout/stderr goes to ``pykv.log`` in the server's working
directory; ``log()`` returns it (the pytest plugin attaches it to failing tests). The working
directory is a fresh temporary directory (also the server's ``dir``) removed on ``stop()``
unless ``keep_dir=True``.
"""
from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["Server", "ServerError", "free_port", "MissingDependency"]

INSTALL_HINT = "pip install 'pykv[testing]'"

# started and not yet stopped: strong references, so that a server whose object a test
# dropped is still found and stopped at interpreter exit
_LIVE: set[Server] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago on ``host`` (bind to port 0, read, release)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class ServerError(RuntimeError):
    """The server could not start (or died); the message ends with its log."""


class MissingDependency(ImportError):
    """A testing helper needs a package that is not installed (the message says which)."""


def _redis_module(name: str = "redis") -> Any:
    """redis-py (or ``redis.asyncio``), or one line saying what to install."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise MissingDependency(
            f"pykv.testing clients need redis-py (>= 5): {INSTALL_HINT}") from None


def config_args(config: Mapping[str, Any]) -> list[str]:
    """``{"maxclients": 10, "save": ""}`` -> ``["--maxclients", "10", "--save", ""]``.

    A list or tuple value gives several arguments (``{"bind": ["127.0.0.1", "::1"]}``);
    ``True``/``False`` become ``yes``/``no``. Underscores in names become dashes.
    """
    args: list[str] = []
    for name, value in config.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        args.append("--" + name.replace("_", "-"))
        for v in values:
            if isinstance(v, bool):
                v = "yes" if v else "no"
            args.append(str(v))
    return args


class Server:
    """A pykv server process for tests.

    Parameters (all optional):

    ``port``          TCP port (default: a free one); ``port=0`` means no TCP listener.
    ``host``          bind address (default ``127.0.0.1``).
    ``unix_socket``   also listen on ``<workdir>/pykv.sock`` (``unix_path``).
    ``unixsocketperm`` permission bits for that socket (e.g. ``0o700``).
    ``config``        more options, each passed as ``--name value`` (see ``config_args``);
                      ``save`` defaults to ``""`` (no RDB snapshots) unless given here.
    ``listeners``     ``--listener`` specs, e.g. ``["tcp,bind=::1,port=7001"]``.
    ``extra_args``    raw arguments appended last.
    ``loglevel``      the server's loglevel (default ``notice``, so the log is useful).
    ``start_timeout`` seconds to wait for the first PONG.
    ``env``           extra environment variables for the server process.
    ``keep_dir``      keep the working directory after ``stop()`` (for post-mortems).
    ``config_file``   a redis.conf to start from (see ``from_config_file``).

    With a port picked for you, a start that loses the port to another process (parallel
    test runs: pytest-xdist workers pick ports at the same time) retries on a new one.
    """

    def __init__(self, port: int | None = None, host: str = "127.0.0.1",
                 unix_socket: bool = False, config: Mapping[str, Any] | None = None,
                 extra_args: Iterable[str] | None = None, start_timeout: float = 15.0,
                 python: str | None = None, *, unixsocketperm: int | None = None,
                 listeners: Iterable[str] | None = None, loglevel: str = "notice",
                 env: Mapping[str, str] | None = None, keep_dir: bool = False,
                 tls: bool = False,
                 config_file: str | os.PathLike[str] | None = None) -> None:
        self.host = host
        self._auto_port = port is None
        self.port = free_port(host) if port is None else port
        self.config_file = (os.path.abspath(os.fspath(config_file))
                            if config_file is not None else None)
        self._file_password: str | None = None
        if self.config_file is not None:
            self._file_password = _file_setting(self.config_file, "requirepass")
        self.config = dict(config or {})
        self.extra_args = list(extra_args or [])
        self.listeners = list(listeners or [])
        self.start_timeout = start_timeout
        self.python = python or sys.executable
        self.loglevel = loglevel
        self.env = dict(env or {})
        self.keep_dir = keep_dir
        self.unixsocketperm = unixsocketperm
        self._want_unix = unix_socket or unixsocketperm is not None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._workdir: str | None = None
        self.unix_path: str | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: str | None = None
        self.returncode: int | None = None
        # tls=True: a TLS listener on tls_port with certificates from a new CA (tls_certs)
        self.tls = tls
        self.tls_port = free_port(host) if tls else 0
        self.tls_certs: Any = None

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def workdir(self) -> str:
        """The server's working directory (and ``dir``), created on first use."""
        if self._workdir is None:
            if self.keep_dir:
                self._workdir = tempfile.mkdtemp(prefix="pykv-test-")
            else:
                self._tmpdir = tempfile.TemporaryDirectory(prefix="pykv-test-")
                self._workdir = self._tmpdir.name
        return self._workdir

    @classmethod
    def from_config_file(cls, path: str | os.PathLike[str], **kwargs: Any) -> Server:
        """A server started from a redis.conf: the file's settings apply, then the testing
        server's own (a free port on 127.0.0.1, its temporary ``dir``, ``save ""``, the
        loglevel), which ``port=``, ``host=`` or ``config=`` override. A ``requirepass``
        in the file is used by ``client()``."""
        return cls(config_file=path, **kwargs)

    def _tls_args(self) -> list[str]:
        if not self.tls:
            return []
        if self.tls_certs is None:
            from pykv.testing.certs import make_certs

            self.tls_certs = make_certs(os.path.join(self.workdir, "tls"))
        certs = self.tls_certs
        args = ["--tls-port", str(self.tls_port), "--tls-cert-file", certs.server_cert,
                "--tls-key-file", certs.server_key, "--tls-ca-cert-file", certs.ca_cert]
        if "tls-auth-clients" not in self.config:
            args += ["--tls-auth-clients", "optional"]
        return args

    def command_line(self) -> list[str]:
        args = [self.python, "-m", "pykv"]
        if self.config_file is not None:
            args.append(self.config_file)
        args += ["--port", str(self.port)] + self._tls_args()
        if self.port:
            args += ["--bind", self.host]
        if self.unix_path:
            args += ["--unixsocket", self.unix_path]
            if self.unixsocketperm is not None:
                args += ["--unixsocketperm", format(self.unixsocketperm, "o")]
        if "dir" not in self.config:
            args += ["--dir", self.workdir]
        if "loglevel" not in self.config:
            args += ["--loglevel", self.loglevel]
        if "save" not in self.config:
            args += ["--save", ""]  # no snapshot at shutdown unless a test asks for one
        args += config_args(self.config)
        for spec in self.listeners:
            args += ["--listener", spec]
        return args + self.extra_args

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> Server:
        """Start the process and wait for PONG; raises ``ServerError`` with the log."""
        if self.running:
            return self
        for attempt in range(3):
            try:
                return self._start_once()
            except ServerError as exc:
                lost_port = "Address already in use" in str(exc) and self._auto_port
                if not lost_port or attempt == 2:
                    raise
                self.port = free_port(self.host)
                if self.tls:
                    self.tls_port = free_port(self.host)
        raise AssertionError("unreachable")

    def _start_once(self) -> Server:
        if self._want_unix:
            self.unix_path = os.path.join(self.workdir, "pykv.sock")
        self.log_path = os.path.join(self.workdir, "pykv.log")
        env = dict(os.environ)
        env.update(self.env)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command_line(), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, cwd=self.workdir, env=env,
            )
        self.returncode = None
        _LIVE.add(self)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                self.returncode = code
                self.process = None
                text = self.log()
                _LIVE.discard(self)
                self._cleanup_dir()
                raise ServerError(f"pykv exited with status {code} at start:\n{text}")
            if self._owns_listener() and self.ping():
                return self
            time.sleep(0.03)
        text = self.log()
        self.stop()
        raise ServerError(f"pykv did not answer PING within {self.start_timeout}s:\n{text}")

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, wait up to ``timeout`` s, then SIGKILL. Returns the exit status.

        Safe to call twice or on a server that already died.
        """
        proc = self.process
        if proc is not None:
            if proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            self.returncode = proc.returncode
            self.process = None
        _LIVE.discard(self)
        self._cleanup_dir()
        return self.returncode

    def kill(self) -> int | None:
        """SIGKILL at once (simulate a crash); the working directory is kept until stop()."""
        proc = self.process
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        return proc.returncode if proc is not None else None

    def restart(self) -> Server:
        """Stop and start again on the same port, socket and working directory."""
        keep, self.keep_dir = self.keep_dir, True
        try:
            self.stop()
        finally:
            self.keep_dir = keep
        return self.start()

    def _cleanup_dir(self) -> None:
        if self.keep_dir:
            return
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None
            self._workdir = None

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else f"stopped rc={self.returncode}"
        return f"<pykv.testing.Server {self.host}:{self.port} {state}>"

    # -- health and logs ----------------------------------------------------------------
    def ping(self, timeout: float = 1.0) -> bool:
        """True if the server answers PING (or NOAUTH: it is up, just protected)."""
        try:
            sock = self._raw_socket(timeout)
        except OSError:
            return False
        try:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            return sock.recv(64).startswith((b"+PONG", b"-NOAUTH"))
        except OSError:
            return False
        finally:
            sock.close()

    def endpoint(self) -> tuple[str, str, int]:
        """Where to reach the server: ``("tcp", host, port)`` or ``("unix", path, 0)``.

        The TCP port first, then the unix socket, then the first tcp/unix ``listeners`` spec.
        """
        if self.port:
            return ("tcp", self.host, self.port)
        if self.unix_path:
            return ("unix", self.unix_path, 0)
        for spec in self.listeners:
            kind, *opts = spec.split(",")
            fields = dict(o.split("=", 1) for o in opts if "=" in o)
            if kind == "tcp" and fields.get("port", "0") != "0":
                host = fields.get("bind", "127.0.0.1").split(" ")[0].lstrip("-")
                return ("tcp", host, int(fields["port"]))
            if kind == "unix" and fields.get("path"):
                return ("unix", fields["path"], 0)
        raise OSError("server has neither a TCP port nor a unix socket")

    def _owns_listener(self) -> bool:
        """Whether *our* process holds the listening socket (not another server on the port).

        Linux: match the process's socket inodes against /proc/net/{tcp,tcp6,unix}.
        Elsewhere this is not checked (True).
        """
        pid = self.pid
        if pid is None or not os.path.isdir("/proc/self/fd"):
            return True
        inodes = set()
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            return False
        try:
            kind, where, port = self.endpoint()
        except OSError:
            return True
        if kind == "tcp":
            want = f":{port:04X}"
            for table in ("/proc/net/tcp", "/proc/net/tcp6"):
                try:
                    with open(table) as fh:
                        next(fh, None)
                        for line in fh:
                            f = line.split()
                            # local_address, state 0A = LISTEN, inode
                            if f[1].endswith(want) and f[3] == "0A" and f[9] in inodes:
                                return True
                except OSError:
                    continue
            return False
        try:
            with open("/proc/net/unix") as fh:
                return any(len(f) >= 8 and f[-1] == where and f[6] in inodes
                           for f in (line.split() for line in fh))
        except OSError:
            return True

    def _raw_socket(self, timeout: float) -> socket.socket:
        kind, where, port = self.endpoint()
        if kind == "tcp":
            return socket.create_connection((where, port), timeout=timeout)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(where)
        except OSError:
            sock.close()
            raise
        return sock

    def log_size(self) -> int:
        """Current length of the log in bytes (a mark for ``log(since=...)``)."""
        try:
            return os.path.getsize(self.log_path or "")
        except OSError:
            return 0

    def log(self, since: int = 0) -> str:
        """The server's output so far (from byte offset ``since``)."""
        try:
            with open(self.log_path or "", "rb") as fh:
                fh.seek(since)
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    # -- clients -------------------------------------------------------------------------
    @property
    def password(self) -> str | None:
        """The ``requirepass`` given in ``config``, used by ``client()`` and ``flush()``."""
        value = self.config.get("requirepass") or self._file_password
        return str(value) if value else None

    @property
    def url(self) -> str:
        """``redis://host:port`` (``redis://[::1]:port`` for IPv6)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"redis://{host}:{self.port}"

    @property
    def unix_url(self) -> str | None:
        return f"unix://{self.unix_path}" if self.unix_path else None

    def client(self, protocol: int = 2, unix: bool = False, **kwargs: Any) -> Any:
        """A ``redis.Redis`` connected to this server (needs the ``redis`` package, >= 5).

        ``protocol=3`` speaks RESP3 (``HELLO 3``); ``unix=True`` uses the unix socket.
        Other keyword arguments go to ``redis.Redis`` (``decode_responses=True``, ``db=1``…).
        """
        return self._client(_redis_module("redis").Redis, protocol, unix, kwargs)

    def async_client(self, protocol: int = 2, unix: bool = False, **kwargs: Any) -> Any:
        """A ``redis.asyncio.Redis`` on this server (same arguments as ``client()``);
        ``await r.aclose()`` when done."""
        return self._client(_redis_module("redis.asyncio").Redis, protocol, unix, kwargs)

    def _client(self, cls: Any, protocol: int, unix: bool, kwargs: dict[str, Any]) -> Any:
        if unix and not self.unix_path:
            raise ValueError("this server has no unix socket (Server(unix_socket=True))")
        if protocol != 2:
            kwargs["protocol"] = protocol
        if kwargs.get("ssl") and self.tls:  # TLS: this server's port and CA
            kwargs.setdefault("ssl_ca_certs", self.tls_certs.ca_cert)
            return cls(host=self.host, port=self.tls_port,
                               password=kwargs.pop("password", self.password), **kwargs)
        if self.password and "password" not in kwargs:
            kwargs["password"] = self.password
        if unix:
            return cls(unix_socket_path=self.unix_path, **kwargs)
        kind, where, port = self.endpoint()
        if kind == "unix":
            return cls(unix_socket_path=where, **kwargs)
        return cls(host=where, port=port, **kwargs)

    def flush(self) -> None:
        """FLUSHALL: empty every database (quick reset between tests)."""
        request = b"*1\r\n$8\r\nFLUSHALL\r\n"
        expected = b"+OK\r\n"
        if self.password:
            pw = self.password.encode()
            request = b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(pw), pw) + request
            expected *= 2
        sock = self._raw_socket(5.0)
        reply = b""
        try:
            sock.sendall(request)
            while len(reply) < len(expected) and b"-" not in reply:
                chunk = sock.recv(256)
                if not chunk:
                    break
                reply += chunk
        finally:
            sock.close()
        if reply != expected:
            raise ServerError(f"FLUSHALL failed: {reply!r}")


def _file_setting(path: str, name: str) -> str | None:
    """The last ``name value`` line of a redis.conf (quotes removed), or None."""
    value = None
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                words = line.strip().split(None, 1)
                if len(words) == 2 and words[0].lower() == name:
                    value = words[1].strip().strip('"').strip("'")
    except OSError:
        return None
    return value or None


@atexit.register
def _stop_leftovers() -> None:
    """Servers a test forgot to stop must not outlive the interpreter."""
    for server in list(_LIVE):
        try:
            server.stop(timeout=3)
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
