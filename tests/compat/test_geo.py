"""Geo commands against real redis-server 7.0: coordinates and distances to the digit."""
from __future__ import annotations

import random

import pytest

PLACES = [
    ("13.361389", "38.115556", "Palermo"), ("15.087269", "37.502669", "Catania"),
    ("2.349014", "48.864716", "Paris"), ("-0.127758", "51.507351", "London"),
    ("-73.935242", "40.730610", "NewYork"), ("139.691706", "35.689487", "Tokyo"),
    ("-179.9999", "-85.05112878", "SouthWestCorner"), ("180", "85.05112878", "NorthEast"),
    ("0", "0", "Origin"), ("12.496365", "41.902782", "Rome"),
]


def _load(d):
    d("GEOADD", "g", *[x for place in PLACES for x in place])


@pytest.mark.parametrize("proto", [2, 3])
def test_add_pos_dist_hash(diff, diff3, proto):
    d = diff if proto == 2 else diff3
    _load(d)
    d.many([
        ("ZRANGE", "g", "0", "-1", "WITHSCORES"),
        ("GEOPOS", "g", *[p[2] for p in PLACES], "nosuch"),
        ("GEOPOS", "nokey", "a"), ("GEOHASH", "g", *[p[2] for p in PLACES], "nosuch"),
        ("GEOHASH", "nokey", "a", "b"),
        ("GEODIST", "g", "Palermo", "Catania"), ("GEODIST", "g", "Palermo", "Tokyo", "km"),
        ("GEODIST", "g", "Paris", "London", "MI"), ("GEODIST", "g", "Paris", "London", "ft"),
        ("GEODIST", "g", "Paris", "Paris"), ("GEODIST", "g", "Paris", "nosuch"),
        ("GEODIST", "nokey", "a", "b"), ("GEODIST", "g", "Paris", "London", "yd"),
        ("GEODIST", "g", "Paris", "London", "km", "x"),
        ("GEOADD", "g", "CH", "13.361389", "38.115556", "Palermo", "1", "1", "New"),
        ("GEOADD", "g", "NX", "CH", "2", "2", "Palermo"), ("GEOADD", "g", "XX", "3", "3", "Zed"),
        ("GEOADD", "g", "NX", "XX", "1", "1", "a"), ("GEOADD", "g", "1", "1"),
        ("GEOADD", "g", "181", "1", "bad"), ("GEOADD", "g", "1", "86", "bad"),
        ("GEOADD", "g", "x", "1", "bad"), ("GEOADD", "g", "NX", "CH", "CH"),
        ("GEOADD", "g", "GT", "1", "1", "a"),
        ("SET", "s", "v"), ("GEOADD", "s", "1", "1", "a"), ("GEOPOS", "s", "a"),
    ])


@pytest.mark.parametrize("proto", [2, 3])
def test_searches(diff, diff3, proto):
    d = diff if proto == 2 else diff3
    _load(d)
    cases = [
        ("GEORADIUS", "g", "15", "37", "200", "km"),
        ("GEORADIUS", "g", "15", "37", "200", "km", "WITHDIST", "WITHCOORD", "WITHHASH"),
        ("GEORADIUS", "g", "15", "37", "2000", "km", "ASC", "WITHDIST"),
        ("GEORADIUS", "g", "15", "37", "5000", "km", "DESC", "COUNT", "3"),
        ("GEORADIUS", "g", "15", "37", "5000", "km", "COUNT", "2", "ANY"),
        ("GEORADIUS", "g", "15", "37", "20000", "km"),
        ("GEORADIUS", "g", "0", "0", "0", "m", "WITHDIST"),
        ("GEORADIUS", "g", "15", "37", "-1", "km"), ("GEORADIUS", "g", "15", "37", "x", "km"),
        ("GEORADIUS", "g", "15", "37", "1", "parsec"), ("GEORADIUS", "g", "15", "37", "1", "km", "COUNT", "0"),
        ("GEORADIUS", "g", "15", "37", "1", "km", "ANY"), ("GEORADIUS", "g", "15", "37", "1", "km", "FOO"),
        ("GEORADIUS", "g", "15", "37", "1", "km", "STORE", "d", "WITHDIST"),
        ("GEORADIUS", "g", "15", "37", "300", "km", "STORE", "d"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("GEORADIUS", "g", "15", "37", "300", "km", "STOREDIST", "d"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("GEORADIUS", "g", "15", "37", "1", "m", "STORE", "d"), ("EXISTS", "d"),
        ("GEORADIUS_RO", "g", "15", "37", "300", "km", "STORE", "d"),
        ("GEORADIUS_RO", "g", "15", "37", "300", "km", "WITHCOORD"),
        ("GEORADIUSBYMEMBER", "g", "Palermo", "500", "km", "WITHDIST", "ASC"),
        ("GEORADIUSBYMEMBER", "g", "nosuch", "500", "km"),
        ("GEORADIUSBYMEMBER", "nokey", "nosuch", "500", "km"),
        ("GEORADIUSBYMEMBER_RO", "g", "Paris", "1000", "km", "COUNT", "2", "DESC"),
        ("GEOSEARCH", "g", "FROMMEMBER", "Paris", "BYRADIUS", "1000", "km", "ASC", "WITHDIST"),
        ("GEOSEARCH", "g", "FROMLONLAT", "10", "45", "BYBOX", "2000", "1500", "km", "WITHCOORD"),
        ("GEOSEARCH", "g", "FROMLONLAT", "10", "45", "BYBOX", "4000", "4000", "km", "DESC"),
        ("GEOSEARCH", "g", "FROMLONLAT", "10", "45", "BYBOX", "-1", "4", "km"),
        ("GEOSEARCH", "g", "FROMLONLAT", "10", "45", "BYBOX", "x", "4", "km"),
        ("GEOSEARCH", "g", "FROMLONLAT", "10", "45", "BYBOX", "1", "x", "km"),
        ("GEOSEARCH", "g", "FROMLONLAT", "10", "45"),
        ("GEOSEARCH", "g", "BYRADIUS", "10", "km"),
        ("GEOSEARCH", "g", "FROMMEMBER", "Paris", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "g", "FROMMEMBER", "nosuch", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "nokey", "FROMMEMBER", "nosuch", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "g", "FROMLONLAT", "10", "45", "BYRADIUS", "1", "km", "STORE", "x"),
        ("GEOSEARCHSTORE", "dst", "g", "FROMLONLAT", "10", "45", "BYRADIUS", "3000", "km"),
        ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("GEOSEARCHSTORE", "dst", "g", "FROMLONLAT", "10", "45", "BYRADIUS", "3000", "km",
         "STOREDIST", "COUNT", "2"),
        ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("GEOSEARCHSTORE", "dst", "g", "FROMLONLAT", "10", "45", "BYRADIUS", "1", "km",
         "WITHDIST"),
        ("GEOSEARCHSTORE", "dst", "nokey", "FROMLONLAT", "10", "45", "BYRADIUS", "1", "km"),
        ("EXISTS", "dst"),
    ]
    for cmd in cases:
        d(*cmd)


def test_random_points_and_searches(diff):
    rng = random.Random(1234)
    args = []
    for i in range(300):
        lon = round(rng.uniform(-10, 30), rng.randrange(1, 8))
        lat = round(rng.uniform(30, 60), rng.randrange(1, 8))
        args += [str(lon), str(lat), f"p{i}"]
    diff("GEOADD", "pts", *args)
    diff("GEOPOS", "pts", *[f"p{i}" for i in range(0, 300, 7)])
    for _ in range(40):
        lon, lat = f"{rng.uniform(-10, 30):.5f}", f"{rng.uniform(30, 60):.5f}"
        radius = rng.choice(["10", "150", "500", "1200", "0.5"])
        unit = rng.choice(["km", "mi", "m", "ft"])
        if unit in ("m", "ft"):
            radius = str(float(radius) * 1000)
        diff("GEORADIUS", "pts", lon, lat, radius, unit, "WITHDIST", "WITHCOORD")
        diff("GEOSEARCH", "pts", "FROMLONLAT", lon, lat, "BYBOX", radius, radius, unit,
             "WITHHASH", "ASC")
        diff("GEODIST", "pts", f"p{rng.randrange(300)}", f"p{rng.randrange(300)}", unit)
    diff("GEOHASH", "pts", *[f"p{i}" for i in range(0, 300, 11)])


def test_near_poles_and_antimeridian(diff):
    diff("GEOADD", "edge", "179.9", "80", "a", "-179.9", "80", "b", "179.99", "-84", "c",
         "-179.99", "-84.5", "d", "0.0001", "84.9", "e")
    for lon, lat in (("179.95", "80"), ("-180", "-84.2"), ("0", "85"), ("90", "70")):
        for r in ("50", "500", "3000"):
            diff("GEORADIUS", "edge", lon, lat, r, "km", "WITHDIST")
            diff("GEOSEARCH", "edge", "FROMLONLAT", lon, lat, "BYBOX", r, r, "km")
