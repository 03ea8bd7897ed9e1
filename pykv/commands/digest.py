"""DEBUG DIGEST / DIGEST-VALUE: Redis 7.0's dataset checksum, reproduced bit for bit.

The digest is built from the logical contents only (never from an encoding), with two
SHA-1 based steps: ``xor`` (xor SHA1(data) into the digest; order-free, for sets, hash
fields, zset members and the keys of a database) and ``mix`` (xor SHA1(data) in, then
replace the digest by its own SHA1; order-sensitive, for lists, stream entries and the
parts of one element). A value starts with its type code mixed in; a key with a TTL gets
``!!expire!!`` xored in at the end; every non-empty database mixes its id into the total
before xor-folding in each key's digest. Members are digested as Redis stores them (integers
as decimal text), scores as ``%.17g``, stream IDs as ``ms.seq``.
"""
from __future__ import annotations

import hashlib
from typing import Any

from pykv.storage import value_types as vt
from pykv.storage.values import is_string

_sha1 = hashlib.sha1
_TYPE_CODES = {b"string": 0, b"list": 1, b"set": 2, b"zset": 3, b"hash": 4, b"stream": 6}
_EXPIRE_MARK = b"!!expire!!"


def _xor(digest: bytearray, data: bytes) -> None:
    for i, b in enumerate(_sha1(data).digest()):
        digest[i] ^= b


def _mix(digest: bytearray, data: bytes) -> None:
    _xor(digest, data)
    digest[:] = _sha1(digest).digest()


def _pair_digest(first: bytes, second: bytes) -> bytes:
    ele = bytearray(20)
    _mix(ele, first)
    _mix(ele, second)
    return bytes(ele)


def value_digest(digest: bytearray, value: Any, has_expire: bool) -> None:
    """Redis's ``xorObjectDigest``: fold one value (and its TTL flag) into ``digest``."""
    kind = b"string" if is_string(value) else value.type_name
    code = _TYPE_CODES.get(kind)
    if code is None:
        raise TypeError(f"no digest for values of type {kind!r}")
    _mix(digest, code.to_bytes(4, "big"))
    if code == 0:
        _mix(digest, bytes(value))
    elif code == 1:
        for item in vt.list_items(value):
            _mix(digest, item)
    elif code == 2:
        for member in vt.set_members(value):
            _xor(digest, member)
    elif code == 3:
        for member, score in vt.zset_items(value):
            _xor(digest, _pair_digest(member, b"%.17g" % score))
    elif code == 4:
        for field, val in vt.hash_items(value):
            _xor(digest, _pair_digest(field, val))
    else:
        for (ms, seq), flat in vt.stream_entries(value):
            _mix(digest, b"%d.%d" % (ms, seq))
            for item in flat:
                _mix(digest, item)
    if has_expire:
        _xor(digest, _EXPIRE_MARK)


def key_digest(db: Any, key: bytes) -> bytes:
    """DIGEST-VALUE's 20 bytes for ``key`` (zeros when it does not exist; logically
    expired keys still count, as in Redis)."""
    digest = bytearray(20)
    value = db.data.get(key)
    if value is not None:
        value_digest(digest, value, key in db.expires)
    return bytes(digest)


def dataset_digest(dbs: list[Any]) -> bytes:
    """DIGEST's 20 bytes (``computeDatasetDigest``): all zeros for an empty dataset."""
    final = bytearray(20)
    for db in dbs:
        if not db.data:
            continue
        _mix(final, db.id.to_bytes(4, "big"))
        expires = db.expires
        for key, value in list(db.data.items()):
            digest = bytearray(20)
            _mix(digest, key)
            value_digest(digest, value, key in expires)
            _xor(final, bytes(digest))
    return bytes(final)
