"""The few OpenSSL calls Redis's TLS setup makes that Python's ``ssl`` does not offer.

``tls-ciphersuites`` (TLS 1.3 suites: ``SSL_CTX_set_ciphersuites``; ``set_ciphers`` covers
only TLS 1.2 and below), the session cache's mode, size and timeout
(``SSL_CTX_set_session_cache_mode``, ``SSL_CTX_sess_set_cache_size``,
``SSL_CTX_set_timeout``), and the text of OpenSSL's error codes as Redis logs them
(``error:0A00010B:SSL routines::wrong version number``).

They are called through ctypes on the very OpenSSL the ``_ssl`` module is linked with
(symbols are looked up through ``_ssl``'s own handle), on the ``SSL_CTX`` an
``ssl.SSLContext`` wraps: CPython keeps that pointer right after the object header. The
pointer is checked before use (OpenSSL's view of the context's options must equal
``SSLContext.options``); where the check fails, ``available()`` is False and the callers
say so instead of guessing.
"""
from __future__ import annotations

import ctypes
import ssl
from functools import cache
from typing import Any

_SET_SESS_CACHE_SIZE = 42  # SSL_CTRL_SET_SESS_CACHE_SIZE
_SET_SESS_CACHE_MODE = 44  # SSL_CTRL_SET_SESS_CACHE_MODE
SESS_CACHE_OFF = 0
SESS_CACHE_SERVER = 2
_ERR_LIB_SSL = 20
_ERR_LIB_OFFSET = 23  # OpenSSL 3: ERR_PACK(lib, 0, reason) = lib << 23 | reason
_REASON_MAX = 1 << 12  # SSL's reason codes are well below this


@cache
def _lib() -> Any:
    import _ssl

    try:
        lib = ctypes.CDLL(_ssl.__file__)
        lib.SSL_CTX_get_options.restype = ctypes.c_uint64
        lib.SSL_CTX_get_options.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_set_ciphersuites.restype = ctypes.c_int
        lib.SSL_CTX_set_ciphersuites.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.SSL_CTX_ctrl.restype = ctypes.c_long
        lib.SSL_CTX_ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long,
                                     ctypes.c_void_p]
        lib.SSL_CTX_set_timeout.restype = ctypes.c_long
        lib.SSL_CTX_set_timeout.argtypes = [ctypes.c_void_p, ctypes.c_long]
        lib.ERR_reason_error_string.restype = ctypes.c_char_p
        lib.ERR_reason_error_string.argtypes = [ctypes.c_ulong]
        lib.ERR_lib_error_string.restype = ctypes.c_char_p
        lib.ERR_lib_error_string.argtypes = [ctypes.c_ulong]
    except (OSError, AttributeError):
        return None
    return lib


def _ctx_pointer(ctx: ssl.SSLContext) -> int | None:
    """The ``SSL_CTX *`` behind ``ctx``, if it checks out."""
    lib = _lib()
    if lib is None:
        return None
    ptr = ctypes.c_void_p.from_address(id(ctx) + object.__basicsize__).value
    if not ptr or lib.SSL_CTX_get_options(ptr) != int(ctx.options):
        return None
    return ptr


def available() -> bool:
    """Whether these calls work in this interpreter."""
    return _ctx_pointer(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)) is not None


def set_ciphersuites(ctx: ssl.SSLContext, suites: str) -> bool:
    """``SSL_CTX_set_ciphersuites``; False when OpenSSL refuses the list (or cannot be
    reached: see ``available``)."""
    ptr = _ctx_pointer(ctx)
    if ptr is None:
        return False
    return _lib().SSL_CTX_set_ciphersuites(ptr, suites.encode("latin-1")) == 1


def set_session_cache(ctx: ssl.SSLContext, enabled: bool, size: int, timeout: int) -> bool:
    """Redis's session cache setup: the server cache with ``size`` entries kept
    ``timeout`` seconds, or no cache at all."""
    ptr = _ctx_pointer(ctx)
    if ptr is None:
        return False
    lib = _lib()
    if enabled:
        lib.SSL_CTX_ctrl(ptr, _SET_SESS_CACHE_MODE, SESS_CACHE_SERVER, None)
        lib.SSL_CTX_ctrl(ptr, _SET_SESS_CACHE_SIZE, size, None)
        lib.SSL_CTX_set_timeout(ptr, timeout)
    else:
        lib.SSL_CTX_ctrl(ptr, _SET_SESS_CACHE_MODE, SESS_CACHE_OFF, None)
    return True


@cache
def _reason_codes() -> dict[str, int]:
    """OpenSSL's SSL reason texts to their codes (Python's exceptions carry only names)."""
    lib = _lib()
    codes: dict[str, int] = {}
    if lib is None:
        return codes
    for reason in range(1, _REASON_MAX):
        text = lib.ERR_reason_error_string((_ERR_LIB_SSL << _ERR_LIB_OFFSET) | reason)
        if text:
            codes.setdefault(text.decode("latin-1"), reason)
    return codes


def error_text(exc: BaseException) -> str:
    """``ERR_error_string`` of the failure behind ``exc``, as Redis logs a failed accept.
    A connection lost mid-handshake is OpenSSL's unexpected EOF."""
    reason = getattr(exc, "reason", None) if isinstance(exc, ssl.SSLError) else None
    if reason:
        text = reason.lower().replace("_", " ")
    elif isinstance(exc, (ConnectionError, EOFError)) or isinstance(exc, ssl.SSLEOFError):
        text = "unexpected eof while reading"
    else:
        return str(exc)
    code = _reason_codes().get(text)
    if code is None:
        return text
    lib = _lib()
    packed = (_ERR_LIB_SSL << _ERR_LIB_OFFSET) | code
    lib_name = (lib.ERR_lib_error_string(packed) or b"SSL routines").decode("latin-1")
    return f"error:{packed:08X}:{lib_name}::{text}"
