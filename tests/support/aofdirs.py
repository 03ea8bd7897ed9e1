"""Damaged multi-part AOF directories as data, and a runner that starts a server on one.

Each ``AofCase`` says what ``appendonlydir`` holds (the manifest text and every file's bytes)
and which options the server gets. ``run_on_copy`` copies a case into a fresh ``dir``, starts
either redis-server or pykv on it with ``appendonly yes`` and reports what happened: the exit
status (or that it started), the log, the keyspace, the files afterwards, and, when it
started, the files after one more write and a clean shutdown. The AOF tests run every case
against both servers and compare those outcomes.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from pykv.testing import free_port
from support.resp import RawClient, encode_command

BASE = "appendonly.aof.1.base.aof"
INCR1 = "appendonly.aof.1.incr.aof"
INCR2 = "appendonly.aof.2.incr.aof"


def cmd(*args: str) -> bytes:
    return encode_command(*args)


SELECT0 = cmd("SELECT", "0")
MANIFEST = f"file {BASE} seq 1 type b\nfile {INCR1} seq 1 type i\n"
MANIFEST2 = MANIFEST + f"file {INCR2} seq 2 type i\n"
BASE_DATA = SELECT0 + cmd("SET", "a", "1")
INCR_DATA = SELECT0 + cmd("SET", "b", "2")


@dataclass
class AofCase:
    name: str
    manifest: str | None = MANIFEST
    files: dict[str, bytes | None] = field(default_factory=dict)  # None: a directory
    config: dict[str, str] = field(default_factory=dict)


def _case(name: str, incr: bytes, manifest: str = MANIFEST, base: bytes = BASE_DATA,
          **config: str) -> AofCase:
    return AofCase(name, manifest, {BASE: base, INCR1: incr},
                   {k.replace("_", "-"): v for k, v in config.items()})


_TRUNCATED = INCR_DATA + b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$2\r\n3"
_MULTI = INCR_DATA + cmd("MULTI") + cmd("SET", "c", "3") + cmd("INCR", "n")

CASES = [
    _case("clean", INCR_DATA),
    _case("truncated-last-command-allowed", _TRUNCATED, aof_load_truncated="yes"),
    _case("truncated-last-command-refused", _TRUNCATED, aof_load_truncated="no"),
    _case("truncated-count-line", INCR_DATA + b"*3", aof_load_truncated="yes"),
    _case("truncated-lone-star", INCR_DATA + b"*", aof_load_truncated="yes"),
    AofCase("truncated-base-not-last", MANIFEST,
            {BASE: BASE_DATA + b"*2\r\n$3\r\nGET", INCR1: INCR_DATA}),
    AofCase("truncated-first-of-two-incrs", MANIFEST2,
            {BASE: BASE_DATA, INCR1: _TRUNCATED, INCR2: cmd("SET", "d", "4")}),
    AofCase("truncated-incr-before-empty-last", MANIFEST2,
            {BASE: BASE_DATA, INCR1: _TRUNCATED, INCR2: b""}),
    _case("bad-format-no-star", INCR_DATA + b"GARBAGE\r\n" + cmd("SET", "z", "9")),
    _case("bad-format-no-dollar", INCR_DATA + b"*2\r\n$3\r\nGET\r\n!x\r\n"),
    _case("bad-format-zero-argc", INCR_DATA + b"*0\r\n"),
    _case("bad-format-in-base", INCR_DATA, base=b"+OK\r\n" + BASE_DATA),
    _case("unchecked-crlf-after-argument", INCR_DATA + b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$1\r\n3XY"),
    _case("unknown-command", INCR_DATA + cmd("NOSUCHCOMMAND", "x") + cmd("SET", "z", "9")),
    _case("unfinished-multi-allowed", _MULTI, aof_load_truncated="yes"),
    _case("unfinished-multi-refused", _MULTI, aof_load_truncated="no"),
    _case("finished-multi", _MULTI + cmd("EXEC")),
    _case("annotations-skipped", b"#TS:1700000000\r\n" + INCR_DATA + b"#TS:1700000001\r\n"
          + cmd("SET", "c", "3")),
    AofCase("missing-incr-file", MANIFEST2, {BASE: BASE_DATA, INCR1: INCR_DATA}),
    AofCase("missing-base-file", MANIFEST, {INCR1: INCR_DATA}),
    AofCase("unreadable-incr-file", MANIFEST, {BASE: BASE_DATA, INCR1: None}),
    AofCase("missing-history-file-is-fine",
            f"file {BASE} seq 1 type b\nfile appendonly.aof.9.base.aof seq 9 type h\n"
            f"file {INCR1} seq 1 type i\n", {BASE: BASE_DATA, INCR1: INCR_DATA}),
    _case("manifest-too-few-fields", INCR_DATA, f"file {BASE} seq 1\n"),
    _case("manifest-odd-fields", INCR_DATA, f"file {BASE} seq 1 type b x\n"),
    _case("manifest-seq-zero", INCR_DATA, f"file {BASE} seq 0 type b\n"),
    _case("manifest-unknown-type", INCR_DATA, MANIFEST + f"file {INCR2} seq 2 type x\n"),
    _case("manifest-path-not-a-name", INCR_DATA, f"file ../{BASE} seq 1 type b\n"),
    _case("manifest-duplicate-base", INCR_DATA,
          f"file {BASE} seq 1 type b\nfile {BASE} seq 2 type b\nfile {INCR1} seq 1 type i\n"),
    _case("manifest-blank-line", INCR_DATA, f"file {BASE} seq 1 type b\n\n"
          f"file {INCR1} seq 1 type i\n"),
    _case("manifest-non-increasing-seq", INCR_DATA,
          f"file {BASE} seq 1 type b\nfile {INCR1} seq 2 type i\nfile {INCR2} seq 2 type i\n"),
    _case("manifest-empty", INCR_DATA, ""),
    _case("manifest-comments-and-keyword-case", INCR_DATA,
          f"# written by hand\nFILE {BASE} SEQ 1 TYPE b\n  file {INCR1} seq 1 type i  \n"),
    _case("manifest-last-line-without-newline", INCR_DATA, MANIFEST.rstrip("\n")),
    _case("empty-files", b"", base=b""),
]

# one case of each outcome and message runs in the default suite, the rest under -m slow
DEFAULT_SLICE = {
    "clean", "truncated-last-command-allowed", "truncated-last-command-refused",
    "truncated-first-of-two-incrs", "bad-format-no-star", "unchecked-crlf-after-argument",
    "unknown-command", "unfinished-multi-allowed", "annotations-skipped", "missing-incr-file",
    "unreadable-incr-file", "manifest-too-few-fields", "manifest-duplicate-base",
    "manifest-blank-line", "manifest-non-increasing-seq", "empty-files",
}

# lines that differ between the two servers for reasons unrelated to AOF loading
_NOISE = re.compile(r"WARNING |User requested shutdown|ready to exit|Received SIG|"
                    r"Saving the final|DB saved on disk|Calling fsync")
_AOF_NOTICES = re.compile(r"DB loaded from (base|incr) file|DB loaded from append only file|"
                          r"Opening AOF|Creating AOF|"
                          r"Reading RDB base file|Removing the history file")
_LINE = re.compile(r"^\d+:[A-Z] \d\d \w{3} \d{4} [\d:.]+ ([#*.-]) (.*)$")


def loading_lines(log: str) -> list[str]:
    """What a server logged about loading (and refusing) the AOF: every warning, and the
    notices about AOF files, with timings masked; the lines a fatal error continues with
    (the manifest error is a multi-line block) are kept too."""
    out: list[str] = []
    started = False
    keep_continuation = False
    for raw in log.splitlines():
        m = _LINE.match(raw)
        if m is None:
            if keep_continuation and raw.strip():
                out.append(raw.strip())
            continue
        mark, text = m.groups()
        if "Server initialized" in text:
            started = True
            continue
        keep_continuation = False
        if not started or _NOISE.search(text):
            continue
        if mark == "#" or _AOF_NOTICES.search(text):
            out.append(re.sub(r"\d+\.\d+ seconds", "N seconds", text.strip()))
            keep_continuation = mark == "#"
    return out


@dataclass
class Outcome:
    exit_status: int | None  # None: it started and answered PING
    lines: list[str]
    keys: list[tuple[bytes, bytes]]
    files: dict[str, bytes]
    files_after_write: dict[str, bytes]
    log: str


def materialise(case: AofCase, root: str) -> str:
    aofdir = os.path.join(root, "appendonlydir")
    os.makedirs(aofdir)
    if case.manifest is not None:
        with open(os.path.join(aofdir, "appendonly.aof.manifest"), "w") as fh:
            fh.write(case.manifest)
    for name, data in case.files.items():
        if data is None:
            os.makedirs(os.path.join(aofdir, name))
        else:
            with open(os.path.join(aofdir, name), "wb") as fh:
                fh.write(data)
    return aofdir


def _files(aofdir: str) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(aofdir)):
        path = os.path.join(aofdir, name)
        out[name] = b"<dir>" if os.path.isdir(path) else _read(path)
    return out


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def command_line(server: str, port: int, root: str, config: dict[str, str]) -> list[str]:
    binary = ([shutil.which("redis-server") or "redis-server"] if server == "redis"
              else [sys.executable, "-m", "pykv"])
    args = [*binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", root,
            "--appendonly", "yes", "--appendfsync", "always", "--enable-debug-command", "yes"]
    for name, value in config.items():
        args += [f"--{name}", value]
    return args


def _keys(client: RawClient) -> list[tuple[bytes, bytes]]:
    reply = client.call("KEYS", "*")
    names = [k for k in reply.split(b"\r\n")[2::2] if k]
    return sorted((k, client.call("DUMP", k)) for k in names)


def run_on_copy(case: AofCase, server: str, timeout: float = 30) -> Outcome:
    """Start ``server`` ("redis" or "pykv") on a fresh copy of ``case``; report the outcome."""
    root = tempfile.mkdtemp(prefix=f"aofcase-{server}-")
    try:
        aofdir = materialise(case, root)
        port = free_port()
        log_path = os.path.join(root, "server.log")
        env = dict(os.environ)
        with open(log_path, "wb") as log_fh:
            proc = subprocess.Popen(command_line(server, port, root, case.config),
                                    stdout=log_fh, stderr=subprocess.STDOUT, cwd=root, env=env)
        try:
            client = _wait_started(proc, port, timeout)
            if client is None:
                log = _read(log_path).decode("utf-8", "replace")
                return Outcome(proc.returncode, loading_lines(log), [], _files(aofdir), {},
                               log)
            keys = _keys(client)
            files = _files(aofdir)
            assert client.call("SET", "written", "after start") == b"+OK\r\n"
            client.send_raw(encode_command("SHUTDOWN", "NOSAVE"))
            client.read_until_closed()
            proc.wait(timeout)
            log = _read(log_path).decode("utf-8", "replace")
            return Outcome(None, loading_lines(log), keys, files, _files(aofdir), log)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _wait_started(proc: subprocess.Popen, port: int, timeout: float) -> RawClient | None:
    """A client once the server answers PING with +PONG; None if it exits first."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            return None
        try:
            client = RawClient(port=port, timeout=10)
            if client.call("PING") == b"+PONG\r\n":
                return client
            client.close()
        except OSError:
            pass
        assert time.monotonic() < deadline, f"server neither started nor exited in {timeout}s"
        time.sleep(0.05)
