"""Geohash arithmetic: interleaving, round trips, and Redis's documented example values."""
from __future__ import annotations

import random

from pykv.storage import geohash as gh


def test_spread_and_squash_are_inverse():
    rng = random.Random(2)
    for _ in range(1000):
        v = rng.getrandbits(32)
        assert gh._squash(gh._spread(v)) == v
        assert gh._spread(v) & gh._ODD == 0


def test_round_trip_stays_within_the_cell():
    rng = random.Random(3)
    for _ in range(1000):
        lon, lat = rng.uniform(-180, 180), rng.uniform(gh.LAT_MIN, gh.LAT_MAX)
        lon2, lat2 = gh.decode_score(gh.score_of(lon, lat))
        assert abs(lon2 - lon) < 360 / 2 ** 26 and abs(lat2 - lat) < 171 / 2 ** 26


def test_documented_values():
    # GEOADD Sicily 13.361389 38.115556 "Palermo" 15.087269 37.502669 "Catania"
    palermo = gh.score_of(13.361389, 38.115556)
    catania = gh.score_of(15.087269, 37.502669)
    assert palermo == 3479099956230698
    assert gh.geohash_string(palermo) == b"sqc8b49rny0"
    assert gh.geohash_string(catania) == b"sqdtr74hyu0"
    d = gh.distance(*gh.decode_score(palermo), *gh.decode_score(catania))
    assert b"%.4f" % d == b"166274.1516"
    assert gh.human_double(gh.decode_score(palermo)[0]) == b"13.36138933897018433"


def test_out_of_range_and_boxes():
    assert gh.encode(181, 0) is None and gh.encode(0, 86) is None
    shape = gh.Shape()
    shape.lon, shape.lat, shape.radius = 13.0, 38.0, 200.0
    shape.conversion = 1000.0
    boxes = gh.search_boxes(shape)
    assert boxes and all(lo < hi for lo, hi in boxes)
    assert any(lo <= gh.score_of(13.0, 38.0) < hi for lo, hi in boxes)
