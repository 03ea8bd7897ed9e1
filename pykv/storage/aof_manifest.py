"""The AOF manifest: which files make up the AOF, read and checked as Redis 7.0 reads it.

One line per file, ``file <name> seq <n> type <b|h|i>`` (keywords in any case, in any order,
more pairs allowed), ``#`` lines are comments. Redis refuses anything else at start-up with a
``*** FATAL AOF MANIFEST FILE ERROR ***`` block naming the line; ``parse`` raises
``ManifestError`` carrying those lines.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pykv.protocol import split_args

BASE, HISTORY, INCR = "b", "h", "i"
_MAX_LINE = 1024  # Redis's MANIFEST_MAX_LINE: longer lines are an error


class AofLoadError(Exception):
    """The AOF can't be loaded: the message is the last line the server logs before it
    exits 1 (any earlier lines were logged already)."""


class ManifestError(AofLoadError):
    """A manifest Redis would refuse; ``lines`` are the warnings to log before ``str()``."""

    def __init__(self, reason: str, line_no: int | None = None,
                 line: str | None = None) -> None:
        super().__init__(reason + "\n")
        self.lines = ["\n*** FATAL AOF MANIFEST FILE ERROR ***\n"]
        if line is not None:
            self.lines += [f"Reading the manifest file, at line {line_no}\n", f">>> '{line}'\n"]


@dataclass
class AofFile:
    name: str
    seq: int
    kind: str  # BASE, HISTORY or INCR


@dataclass
class Manifest:
    base: AofFile | None = None
    incrs: list[AofFile] = field(default_factory=list)
    history: list[AofFile] = field(default_factory=list)

    def render(self) -> str:
        lines = []
        if self.base is not None:
            lines.append(_line(self.base))
        lines += [_line(f) for f in self.history]
        lines += [_line(f) for f in self.incrs]
        return "".join(lines)

    @classmethod
    def parse(cls, text: str | bytes) -> Manifest:
        data = text.encode("latin-1") if isinstance(text, str) else text
        m = cls()
        max_seq = 0
        pos = line_no = 0
        while True:
            if pos >= len(data):
                if line_no == 0:
                    raise ManifestError("Found an empty AOF manifest")
                return m
            end = data.find(b"\n", pos, pos + _MAX_LINE)
            chunk = data[pos:end + 1 if end >= 0 else pos + _MAX_LINE]
            pos += len(chunk)
            line_no += 1
            if chunk.startswith(b"#"):
                continue
            if end < 0:
                raise ManifestError("The AOF manifest file contains too long line")
            raw = chunk.strip(b" \t\r\n")
            line = raw.decode("latin-1")
            words = [w.decode("latin-1") for w in split_args(raw) or ()] if raw else None
            if not words or len(words) < 6 or len(words) % 2:
                raise ManifestError("Invalid AOF manifest file format", line_no, line)
            name, seq, kind = None, 0, ""
            for key, value in zip(words[0::2], words[1::2], strict=True):
                key = key.lower()
                if key == "file":
                    name = value
                    if "/" in name or "\\" in name:
                        raise ManifestError("File can't be a path, just a filename",
                                            line_no, line)
                elif key == "seq":
                    seq = atoi(value.encode("latin-1"))
                elif key == "type":
                    kind = value[:1]
            if not name or not seq or not kind:
                raise ManifestError("Invalid AOF manifest file format", line_no, line)
            f = AofFile(name, seq, kind)
            if kind == BASE:
                if m.base is not None:
                    raise ManifestError("Found duplicate base file information", line_no, line)
                m.base = f
            elif kind == HISTORY:
                m.history.append(f)
            elif kind == INCR:
                if seq <= max_seq:
                    raise ManifestError("Found a non-monotonic sequence number", line_no, line)
                m.incrs.append(f)
                max_seq = seq
            else:
                raise ManifestError("Unknown AOF file type", line_no, line)


def _line(f: AofFile) -> str:
    name = f.name
    if any(c in name for c in ' "\'\\') or not name.isprintable():
        name = '"' + "".join(_repr_char(c) for c in name) + '"'
    return f"file {name} seq {f.seq} type {f.kind}\n"


def _repr_char(c: str) -> str:
    if c in '\\"':
        return "\\" + c
    if c.isprintable():
        return c
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, f"\\x{ord(c):02x}")


def atoi(text: bytes) -> int:
    """C's atoi/atoll: leading blanks, a sign, then digits up to the first other byte."""
    s = text.lstrip(b" \t\n\r\v\f")
    i = 1 if s[:1] in (b"-", b"+") else 0
    while i < len(s) and 48 <= s[i] <= 57:
        i += 1
    return int(s[:i]) if s[:i].lstrip(b"+-") else 0
