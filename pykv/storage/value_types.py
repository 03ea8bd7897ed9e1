"""One place that knows every value type's class, for code that handles all of them.

RDB/DUMP (``pykv.storage.rdb.objects``) and AOF rewriting read a value's contents and build
values from contents through these functions, so the persistence code never reaches into a
type's internals and a type can change its representation without touching persistence.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pykv.storage._intset import IntSet
from pykv.storage._listpack import ListpackFull, ListpackMap, ListpackZset
from pykv.storage.hash_type import HashValue
from pykv.storage.list_type import ListValue
from pykv.storage.set_type import SetValue
from pykv.storage.zset_type import ZSet, score_text


def list_items(value: ListValue) -> list[bytes]:
    return list(value.items)


def make_list(items: list[bytes], config: Any) -> ListValue:
    return ListValue(items)


def set_members(value: SetValue) -> list[bytes]:
    return list(value.ordered())


def make_set(members: list[bytes], config: Any) -> SetValue:
    return SetValue.build(members, config)


def set_intset(value: SetValue) -> bytes:
    """The intset blob of an intset-encoded set (its buffer, as RDB/DUMP store it)."""
    return value.s.blob()


def make_set_from_intset(blob: bytes, members: list[bytes], config: Any) -> SetValue:
    """A set loaded from a validated intset ``blob`` holding ``members``: the buffer is
    copied as it is (Redis keeps a loaded intset's width) unless it has too many members."""
    if len(members) <= config.set_max_intset_entries:
        return SetValue(IntSet.from_blob(blob), True)
    return SetValue(set(members), False)


def hash_items(value: HashValue) -> Collection[tuple[bytes, bytes]]:
    """The (field, value) pairs as a live view (``len`` and one pass, the hash unchanged
    meanwhile): a big hash's pairs are made while they are read, not all at once."""
    return value.d.items()


def hash_listpack(value: HashValue) -> bytes:
    """The listpack blob of a listpack-encoded hash (its buffer, as RDB/DUMP store it)."""
    return value.d.blob()


def make_hash_from_listpack(blob: bytes, pairs: list[tuple[bytes, bytes]],
                            config: Any) -> HashValue:
    """A hash loaded from a valid, canonically encoded listpack ``blob`` holding ``pairs``
    (duplicates are the caller's check): the buffer is copied as it is when it stays a
    listpack."""
    if len(pairs) <= config.hash_max_listpack_entries:
        return HashValue(ListpackMap.from_blob(blob, len(pairs)), True)
    return HashValue(pairs, False)


def adopt_hash_listpack(blob: bytes, pairs: int) -> HashValue:
    """A listpack-encoded hash over a copy of ``blob``, a checked listpack of ``pairs``
    distinct fields (``listpack_adoptable_pairs``)."""
    return HashValue(ListpackMap.from_blob(blob, pairs), True)


def make_hash(pairs: list[tuple[bytes, bytes]], config: Any, packed: bool = False) -> HashValue:
    """``packed``: loaded from a listpack/ziplist, which Redis keeps packed unless it has
    too many entries (element sizes are not looked at)."""
    if packed:
        if len(pairs) > config.hash_max_listpack_entries:
            return HashValue(pairs, False)
        return HashValue(dict(pairs), True)
    return HashValue.build(pairs, config)


def zset_items(value: ZSet) -> list[tuple[bytes, float]]:
    """(member, score) pairs in ascending (score, member) order."""
    if value.packed is not None:
        return value.packed.members_scores()
    return [(member, score) for score, member in value.sl]


def make_zset(pairs: list[tuple[bytes, float]], config: Any, packed: bool = False) -> ZSet:
    """``packed`` as for ``make_hash``."""
    small = len(pairs) <= config.zset_max_listpack_entries and (packed or all(
        len(member) <= config.zset_max_listpack_value for member, _ in pairs))
    scores: dict[bytes, float] = {}
    for member, score in pairs:
        if member not in scores:
            # a listpack keeps scores as text, where -0 reads back as 0 (ZSet.insert)
            scores[member] = 0.0 if small and score == 0.0 else score
    ordered = sorted((score, member) for member, score in scores.items())
    if small:
        lp = ListpackZset()
        try:
            lp.extend_sorted([(member, score_text(score)) for score, member in ordered])
            return ZSet(True, lp)
        except ListpackFull:  # past 1 GB: built as a skiplist
            pass
    zset = ZSet(listpack=False)
    zset.scores = scores
    zset.sl.update(ordered)
    return zset


def zset_listpack(value: ZSet) -> bytes:
    """The listpack blob of a listpack-encoded zset (its buffer, as RDB/DUMP store it)."""
    return value.packed.blob()


def make_zset_from_listpack(blob: bytes, pairs: list[tuple[bytes, float]],
                            config: Any) -> ZSet:
    """A zset loaded from a valid, canonically encoded listpack ``blob`` holding ``pairs``
    in (score, member) order with distinct members and no ``-0`` score: the buffer is
    copied as it is when it stays a listpack."""
    if len(pairs) <= config.zset_max_listpack_entries:
        return ZSet(True, ListpackZset.from_blob(blob, len(pairs)))
    return make_zset(pairs, config, packed=True)


def adopt_zset_listpack(blob: bytes, pairs: int) -> ZSet:
    """A listpack-encoded zset over a copy of ``blob``, a checked, sorted listpack of
    ``pairs`` distinct members (``listpack_adoptable_pairs``)."""
    return ZSet(True, ListpackZset.from_blob(blob, pairs))


def save_stream(writer: Any, value: Any) -> None:
    from pykv.storage.stream_type import save_stream as save

    save(writer, value)


def load_stream(reader: Any, type_byte: int, config: Any, integrity: Any = None) -> Any:
    from pykv.storage.stream_type import load_stream as load

    return load(reader, type_byte, config, integrity)


def stream_entries(value: Any) -> list[tuple[tuple[int, int], list[bytes]]]:
    """Every live stream entry as ((ms, seq), flat field/value list), in ID order."""
    from pykv.storage.stream_type import MAX_ID, MIN_ID

    return value.range(MIN_ID, MAX_ID)
