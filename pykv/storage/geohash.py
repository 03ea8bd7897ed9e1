"""Redis's geohash arithmetic: 52-bit interleaved scores, areas, neighbours and distances.

A point's zset score is its geohash: longitude and latitude (latitude limited to the Web
Mercator band ±85.05112878) scaled to 26-bit integers and interleaved (latitude in the even
bits, longitude in the odd bits). Searches cover the target with the geohash box at an
estimated precision plus its 8 neighbours, scan each box's score range in order and keep
the points within the shape, visiting boxes in Redis's order so unsorted replies match.
Distances use the haversine formula with Redis's Earth radius.
"""
from __future__ import annotations

import math
from decimal import Decimal

LONG_MIN, LONG_MAX = -180.0, 180.0
LAT_MIN, LAT_MAX = -85.05112878, 85.05112878
STEP_MAX = 26
EARTH_RADIUS = 6372797.560856
MERCATOR_MAX = 20037726.37
D_R = math.pi / 180.0
_M64 = (1 << 64) - 1
_EVEN = 0x5555555555555555
_ODD = 0xAAAAAAAAAAAAAAAA
BASE32 = b"0123456789bcdefghjkmnpqrstuvwxyz"


def _spread(v: int) -> int:
    """Spread the 32 low bits of ``v`` to the even bit positions of a 64-bit word."""
    v &= 0xFFFFFFFF
    v = (v | (v << 16)) & 0x0000FFFF0000FFFF
    v = (v | (v << 8)) & 0x00FF00FF00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v << 2)) & 0x3333333333333333
    v = (v | (v << 1)) & 0x5555555555555555
    return v


def _squash(v: int) -> int:
    """Inverse of ``_spread``: gather the even bits of ``v``."""
    v &= 0x5555555555555555
    v = (v | (v >> 1)) & 0x3333333333333333
    v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v >> 4)) & 0x00FF00FF00FF00FF
    v = (v | (v >> 8)) & 0x0000FFFF0000FFFF
    v = (v | (v >> 16)) & 0x00000000FFFFFFFF
    return v


def encode(lon: float, lat: float, step: int = STEP_MAX,
           lat_min: float = LAT_MIN, lat_max: float = LAT_MAX) -> int | None:
    """``geohashEncode``: the interleaved hash bits at ``step`` (None out of range)."""
    if lon > LONG_MAX or lon < LONG_MIN or lat > LAT_MAX or lat < LAT_MIN:
        return None
    if lat < lat_min or lat > lat_max:
        return None
    lat_off = (lat - lat_min) / (lat_max - lat_min) * float(1 << step)
    lon_off = (lon - LONG_MIN) / (LONG_MAX - LONG_MIN) * float(1 << step)
    return _spread(int(lat_off)) | (_spread(int(lon_off)) << 1)


def decode_area(bits: int, step: int) -> tuple[float, float, float, float]:
    """``geohashDecode``: (lon_min, lon_max, lat_min, lat_max) of a hash box."""
    ilat = _squash(bits)
    ilon = _squash(bits >> 1)
    scale = float(1 << step)
    lat_scale = LAT_MAX - LAT_MIN
    lon_scale = LONG_MAX - LONG_MIN
    return (LONG_MIN + (ilon * 1.0 / scale) * lon_scale,
            LONG_MIN + ((ilon + 1) * 1.0 / scale) * lon_scale,
            LAT_MIN + (ilat * 1.0 / scale) * lat_scale,
            LAT_MIN + ((ilat + 1) * 1.0 / scale) * lat_scale)


def decode_score(score: float) -> tuple[float, float]:
    """A zset score back to (longitude, latitude): the centre of its 52-bit box."""
    bits = int(score) & _M64
    lon_min, lon_max, lat_min, lat_max = decode_area(bits, STEP_MAX)
    lon = min(max((lon_min + lon_max) / 2, LONG_MIN), LONG_MAX)
    lat = min(max((lat_min + lat_max) / 2, LAT_MIN), LAT_MAX)
    return lon, lat


def score_of(lon: float, lat: float) -> int:
    """The 52-bit score GEOADD stores for a point."""
    bits = encode(lon, lat)
    return 0 if bits is None else bits


def geohash_string(score: float) -> bytes:
    """GEOHASH's 11-character standard geohash (re-encoded with latitude ±90)."""
    lon, lat = decode_score(score)
    bits = encode(lon, lat, STEP_MAX, -90.0, 90.0) or 0
    out = bytearray()
    for i in range(11):
        idx = 0 if i == 10 else (bits >> (52 - (i + 1) * 5)) & 0x1F
        out.append(BASE32[idx])
    return bytes(out)


def lat_distance(lat1: float, lat2: float) -> float:
    return EARTH_RADIUS * abs(lat2 * D_R - lat1 * D_R)


def distance(lon1: float, lat1: float, lon2: float, lat2: float) -> float:
    """Haversine distance in meters, computed exactly as Redis does."""
    lon1r = lon1 * D_R
    lon2r = lon2 * D_R
    v = math.sin((lon2r - lon1r) / 2)
    if v == 0.0:
        return lat_distance(lat1, lat2)
    lat1r = lat1 * D_R
    lat2r = lat2 * D_R
    u = math.sin((lat2r - lat1r) / 2)
    a = u * u + math.cos(lat1r) * math.cos(lat2r) * v * v
    return 2.0 * EARTH_RADIUS * math.asin(math.sqrt(a))


def human_double(value: float) -> bytes:
    """``%.17Lf`` with trailing zeros (and a bare '.') removed, as GEOPOS prints."""
    text = format(Decimal(value), ".17f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text == "-0":
        text = "0"
    return text.encode()


# -- search areas ------------------------------------------------------------------------
class Shape:
    """A search shape: a circle (``radius``) or a box (``width``/``height``), in units."""

    __slots__ = ("lon", "lat", "radius", "width", "height", "conversion", "is_box")

    def __init__(self) -> None:
        self.lon = self.lat = 0.0
        self.radius = self.width = self.height = 0.0
        self.conversion = 1.0
        self.is_box = False

    def bounding_box(self) -> tuple[float, float, float, float]:
        """(min_lon, min_lat, max_lon, max_lat) around the shape."""
        if self.is_box:
            height = self.conversion * (self.height / 2)
            width = self.conversion * (self.width / 2)
        else:
            height = width = self.conversion * self.radius
        lat_delta = (height / EARTH_RADIUS) / D_R
        top = (width / EARTH_RADIUS / math.cos((self.lat + lat_delta) * D_R)) / D_R
        bottom = (width / EARTH_RADIUS / math.cos((self.lat - lat_delta) * D_R)) / D_R
        delta = bottom if self.lat < 0 else top
        return self.lon - delta, self.lat - lat_delta, self.lon + delta, self.lat + lat_delta

    def contains(self, lon: float, lat: float) -> float | None:
        """Distance (meters) from the centre when the point is inside, else None."""
        if not self.is_box:
            dist = distance(self.lon, self.lat, lon, lat)
            return None if dist > self.radius * self.conversion else dist
        if lat_distance(lat, self.lat) > self.height * self.conversion / 2:
            return None
        if distance(lon, lat, self.lon, lat) > self.width * self.conversion / 2:
            return None
        return distance(self.lon, self.lat, lon, lat)


def estimate_steps(range_meters: float, lat: float) -> int:
    if range_meters == 0:
        return 26
    step = 1
    while range_meters < MERCATOR_MAX:
        range_meters *= 2
        step += 1
    step -= 2
    if lat > 66 or lat < -66:
        step -= 1
        if lat > 80 or lat < -80:
            step -= 1
    return max(1, min(26, step))


def _move(bits: int, step: int, dx: int, dy: int) -> int:
    if dx:
        x = bits & _ODD
        y = bits & _EVEN
        zz = _EVEN >> (64 - step * 2)
        if dx > 0:
            x = (x + (zz + 1)) & _M64
        else:
            x = ((x | zz) - (zz + 1)) & _M64
        x &= _ODD >> (64 - step * 2)
        bits = x | y
    if dy:
        x = bits & _ODD
        y = bits & _EVEN
        zz = _ODD >> (64 - step * 2)
        if dy > 0:
            y = (y + (zz + 1)) & _M64
        else:
            y = ((y | zz) - (zz + 1)) & _M64
        y &= _EVEN >> (64 - step * 2)
        bits = x | y
    return bits


# centre, N, S, E, W, NE, NW, SE, SW — Redis's visiting order
_DIRECTIONS = ((0, 0), (0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))


def search_boxes(shape: Shape) -> list[tuple[int, int]]:
    """The score ranges [lo, hi) to scan, in Redis's order (duplicates skipped alike)."""
    min_lon, min_lat, max_lon, max_lat = shape.bounding_box()
    if shape.is_box:
        radius = math.sqrt((shape.width / 2) ** 2 + (shape.height / 2) ** 2)
    else:
        radius = shape.radius
    radius *= shape.conversion
    steps = estimate_steps(radius, shape.lat)
    bits = encode(shape.lon, shape.lat, steps) or 0
    boxes = [_move(bits, steps, dx, dy) for dx, dy in _DIRECTIONS]
    north = decode_area(boxes[1], steps)
    south = decode_area(boxes[2], steps)
    east = decode_area(boxes[3], steps)
    west = decode_area(boxes[4], steps)
    if steps > 1 and (north[3] < max_lat or south[2] > min_lat or east[1] < max_lon
                      or west[0] > min_lon):
        steps -= 1
        bits = encode(shape.lon, shape.lat, steps) or 0
        boxes = [_move(bits, steps, dx, dy) for dx, dy in _DIRECTIONS]
    alive = [True] * 9
    if steps >= 2:
        area = decode_area(bits, steps)
        if area[2] < min_lat:
            alive[2] = alive[8] = alive[7] = False
        if area[3] > max_lat:
            alive[1] = alive[5] = alive[6] = False
        if area[0] < min_lon:
            alive[4] = alive[8] = alive[6] = False
        if area[1] > max_lon:
            alive[3] = alive[7] = alive[5] = False
    out = []
    last = 0
    shift = 52 - steps * 2
    for i, box in enumerate(boxes):
        if not alive[i]:
            continue
        if last and box == boxes[last]:
            continue
        out.append((box << shift, (box + 1) << shift))
        last = i
    return out
