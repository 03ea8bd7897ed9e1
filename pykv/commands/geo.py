"""Geo commands: points are zset members whose score is a 52-bit geohash.

GEOADD goes through ZADD (same flags, events and replies); searches walk the geohash boxes
of ``pykv.storage.geohash`` over the zset's score order, exactly in Redis's order, then sort
and format as Redis does (``%.4f`` distances, ``%.17Lf``-trimmed coordinates).
"""
from __future__ import annotations

from typing import Any

from pykv import errors
from pykv.commands.args import to_float, to_int
from pykv.commands.registry import TABLE, command
from pykv.commands.zsets import _zadd, get_zset
from pykv.protocol import NULL_ARRAY, ErrorReply, RawReply
from pykv.server.notify import notify
from pykv.storage import geohash as gh
from pykv.storage.zset_type import ZSet

ERR_UNIT = ErrorReply(b"ERR unsupported unit provided. please use M, KM, FT, MI")
ERR_RADIUS = ErrorReply(b"ERR need numeric radius")
ERR_RADIUS_NEG = ErrorReply(b"ERR radius cannot be negative")
ERR_WIDTH = ErrorReply(b"ERR need numeric width")
ERR_HEIGHT = ErrorReply(b"ERR need numeric height")
ERR_BOX_NEG = ErrorReply(b"ERR height or width cannot be negative")
ERR_MEMBER = ErrorReply(b"ERR could not decode requested zset member")
ERR_COUNT = ErrorReply(b"ERR COUNT must be > 0")
ERR_ANY = ErrorReply(b"ERR the ANY argument requires COUNT argument")

_UNITS = {b"m": 1.0, b"km": 1000.0, b"ft": 0.3048, b"mi": 1609.34}


def _unit(data: bytes) -> float:
    factor = _UNITS.get(data.lower())
    if factor is None:
        raise ERR_UNIT
    return factor


def _lonlat(lon_arg: bytes, lat_arg: bytes) -> tuple[float, float]:
    """``extractLongLatOrReply``."""
    lon = to_float(lon_arg)
    if lon is None:
        raise errors.NOT_FLOAT
    lat = to_float(lat_arg)
    if lat is None:
        raise errors.NOT_FLOAT
    if lon < gh.LONG_MIN or lon > gh.LONG_MAX or lat < gh.LAT_MIN or lat > gh.LAT_MAX:
        raise ErrorReply(b"ERR invalid longitude,latitude pair %f,%f" % (lon, lat))
    return lon, lat


def _coord_reply(c: Any, value: float) -> Any:
    text = gh.human_double(value)
    return text if c.resp == 2 else RawReply(b"," + text + b"\r\n")


def _dist_reply(value: float) -> bytes:
    return b"%.4f" % value


@command("geoadd")
def geoadd(c, argv):
    idx = 2
    nx = xx = False
    while idx < len(argv):
        opt = argv[idx].lower()
        if opt == b"nx":
            nx = True
        elif opt == b"xx":
            xx = True
        elif opt != b"ch":
            break
        idx += 1
    if (len(argv) - idx) % 3 or (nx and xx):
        raise errors.SYNTAX
    zargv = [b"zadd"] + argv[1:idx]
    for j in range(idx, len(argv), 3):
        lon, lat = _lonlat(argv[j], argv[j + 1])
        zargv.append(b"%d" % gh.score_of(lon, lat))
        zargv.append(argv[j + 2])
    return _zadd(c, zargv, False)


@command("geopos")
def geopos(c, argv):
    z = get_zset(c.db, argv[1])
    out: list = []
    for member in argv[2:]:
        score = None if z is None else z.scores.get(member)
        if score is None:
            out.append(NULL_ARRAY)
            continue
        lon, lat = gh.decode_score(score)
        out.append([_coord_reply(c, lon), _coord_reply(c, lat)])
    return out


@command("geohash")
def geohash_cmd(c, argv):
    z = get_zset(c.db, argv[1])
    out: list = []
    for member in argv[2:]:
        score = None if z is None else z.scores.get(member)
        out.append(None if score is None else gh.geohash_string(score))
    return out


@command("geodist")
def geodist(c, argv):
    to_meter = 1.0
    if len(argv) == 5:
        to_meter = _unit(argv[4])
    elif len(argv) > 5:
        raise errors.SYNTAX
    z = get_zset(c.db, argv[1])
    if z is None:
        return None
    s1 = z.scores.get(argv[2])
    s2 = z.scores.get(argv[3])
    if s1 is None or s2 is None:
        return None
    lon1, lat1 = gh.decode_score(s1)
    lon2, lat2 = gh.decode_score(s2)
    return _dist_reply(gh.distance(lon1, lat1, lon2, lat2) / to_meter)


# -- searches ----------------------------------------------------------------------------
RADIUS_COORDS, RADIUS_MEMBER, SEARCH, SEARCHSTORE, NOSTORE = 1, 2, 4, 8, 16


def _member_lonlat(z: ZSet, member: bytes) -> tuple[float, float]:
    score = z.scores.get(member)
    if score is None:
        raise ERR_MEMBER
    return gh.decode_score(score)


def _radius(shape: gh.Shape, value: bytes, unit: bytes) -> None:
    radius = to_float(value)
    if radius is None:
        raise ERR_RADIUS
    if radius < 0:
        raise ERR_RADIUS_NEG
    shape.radius = radius
    shape.conversion = _unit(unit)


@command("georadius")
def georadius(c, argv):
    return _search(c, argv, 1, RADIUS_COORDS)


@command("georadius_ro")
def georadius_ro(c, argv):
    return _search(c, argv, 1, RADIUS_COORDS | NOSTORE)


@command("georadiusbymember")
def georadiusbymember(c, argv):
    return _search(c, argv, 1, RADIUS_MEMBER)


@command("georadiusbymember_ro")
def georadiusbymember_ro(c, argv):
    return _search(c, argv, 1, RADIUS_MEMBER | NOSTORE)


@command("geosearch")
def geosearch(c, argv):
    return _search(c, argv, 1, SEARCH)


@command("geosearchstore")
def geosearchstore(c, argv):
    return _search(c, argv, 2, SEARCH | SEARCHSTORE)


def _search(c: Any, argv: list[bytes], src: int, flags: int) -> Any:
    """Redis's ``georadiusGeneric``: options in its order, then boxes, sort, reply/store."""
    z = get_zset(c.db, argv[src])
    shape = gh.Shape()
    store: bytes | None = None
    storedist = False
    if flags & RADIUS_COORDS:
        base = 6
        shape.lon, shape.lat = _lonlat(argv[2], argv[3])
        _radius(shape, argv[4], argv[5])
    elif flags & RADIUS_MEMBER:
        base = 5
        if z is not None:
            shape.lon, shape.lat = _member_lonlat(z, argv[2])
            _radius(shape, argv[3], argv[4])
    else:
        base = 2
        if flags & SEARCHSTORE:
            base = 3
            store = argv[1]
    withdist = withhash = withcoord = any_ = False
    frommember = fromloc = byradius = bybox = False
    sort = 0  # 1 asc, -1 desc
    count = 0
    argc = len(argv)
    i = base
    while i < argc:
        arg = argv[i].lower()
        left = argc - i - 1
        if arg == b"withdist":
            withdist = True
        elif arg == b"withhash":
            withhash = True
        elif arg == b"withcoord":
            withcoord = True
        elif arg == b"any":
            any_ = True
        elif arg == b"asc":
            sort = 1
        elif arg == b"desc":
            sort = -1
        elif arg == b"count" and left >= 1:
            count = to_int(argv[i + 1])
            if count is None:
                raise errors.NOT_INTEGER
            if count <= 0:
                raise ERR_COUNT
            i += 1
        elif arg in (b"store", b"storedist") and left >= 1 and not flags & (NOSTORE | SEARCH):
            store = argv[i + 1]
            storedist = arg == b"storedist"
            i += 1
        elif arg == b"storedist" and flags & SEARCHSTORE:
            storedist = True
        elif arg == b"frommember" and left >= 1 and flags & SEARCH and not fromloc:
            if z is not None:
                shape.lon, shape.lat = _member_lonlat(z, argv[i + 1])
            frommember = True
            i += 1
        elif arg == b"fromlonlat" and left >= 2 and flags & SEARCH and not frommember:
            shape.lon, shape.lat = _lonlat(argv[i + 1], argv[i + 2])
            fromloc = True
            i += 2
        elif arg == b"byradius" and left >= 2 and flags & SEARCH and not bybox:
            _radius(shape, argv[i + 1], argv[i + 2])
            shape.is_box = False
            byradius = True
            i += 2
        elif arg == b"bybox" and left >= 3 and flags & SEARCH and not byradius:
            width = to_float(argv[i + 1])
            if width is None:
                raise ERR_WIDTH
            height = to_float(argv[i + 2])
            if height is None:
                raise ERR_HEIGHT
            if height < 0 or width < 0:
                raise ERR_BOX_NEG
            shape.conversion = _unit(argv[i + 3])
            shape.width, shape.height = width, height
            shape.is_box = True
            bybox = True
            i += 3
        else:
            raise errors.SYNTAX
        i += 1
    if store is not None and (withdist or withhash or withcoord):
        what = b"GEOSEARCHSTORE" if flags & SEARCHSTORE else b"STORE option in GEORADIUS"
        raise ErrorReply(
            b"ERR " + what + b" is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
    if flags & SEARCH and not (frommember or fromloc):
        raise ErrorReply(
            b"ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + argv[0])
    if flags & SEARCH and not (byradius or bybox):
        raise ErrorReply(
            b"ERR exactly one of BYRADIUS and BYBOX can be specified for " + argv[0])
    if any_ and not count:
        raise ERR_ANY
    if z is None:
        if store is not None:
            if c.db.delete(store):
                notify(c.server, "g", b"del", store, c.db.id)
                c.server.dirty += 1
            return 0
        return []
    if count and not sort and not any_:
        sort = 1
    found = _points_in_shape(z, shape, count if any_ else 0)
    if not found and store is None:
        return []
    if sort:
        found.sort(key=lambda p: p[0], reverse=sort < 0)
    if count:
        found = found[:count]
    conv = shape.conversion
    if store is None:
        out: list = []
        for dist, score, member, lon, lat in found:
            if not (withdist or withhash or withcoord):
                out.append(member)
                continue
            item: list = [member]
            if withdist:
                item.append(_dist_reply(dist / conv))
            if withhash:
                item.append(int(score))
            if withcoord:
                item.append([_coord_reply(c, lon), _coord_reply(c, lat)])
            out.append(item)
        return out
    db = c.db
    if not found:
        if db.delete(store):
            notify(c.server, "g", b"del", store, db.id)
            c.server.dirty += 1
        return 0
    result = ZSet(False)
    for dist, score, member, _, _ in found:
        result.insert(member, dist / conv if storedist else score)
    cfg = c.server.config
    result.convert_if_small(cfg.zset_max_listpack_entries, cfg.zset_max_listpack_value)
    db.set(store, result)
    event = b"geosearchstore" if flags & SEARCH else b"georadiusstore"
    notify(c.server, "z", event, store, db.id)
    c.server.dirty += len(found)
    return len(found)


def _points_in_shape(z: ZSet, shape: gh.Shape, limit: int) -> list:
    """(distance, score, member, lon, lat) of the points inside, in Redis's visit order."""
    found: list = []
    sl = z.sl
    for lo, hi in gh.search_boxes(shape):
        if limit and len(found) >= limit:
            break
        start = sl.bisect_left((float(lo),))
        stop = sl.bisect_left((float(hi),))
        for score, member in sl.islice(start, stop):
            lon, lat = gh.decode_score(score)
            dist = shape.contains(lon, lat)
            if dist is None:
                continue
            found.append((dist, score, member, lon, lat))
            if limit and len(found) >= limit:
                break
    return found


def _georadius_keys(argv: list[bytes]) -> list[int]:
    keys = [1]
    for i in range(2, len(argv) - 1):
        if argv[i].lower() in (b"store", b"storedist"):
            keys.append(i + 1)
    return keys


for _name in ("georadius", "georadiusbymember"):
    _cmd = TABLE.lookup_path(_name)
    if _cmd is not None:
        _cmd.get_keys = _georadius_keys
