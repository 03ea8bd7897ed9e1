"""CLIENT subcommands."""
from __future__ import annotations

from pykv.protocol import ErrorReply


def validate_client_name(name: bytes) -> ErrorReply | None:
    """Names may not contain spaces, newlines or other non-printable characters."""
    if any(b < 33 or b > 126 for b in name):
        return ErrorReply(b"ERR Client names cannot contain spaces, newlines or special "
                          b"characters.")
    return None
