"""A generated differential corpus: command sequences built from Redis's own metadata.

Each command of a data-type family is generated from its argument tree in
``pykv/server/command_table.json`` (Redis's ``arguments``: tokens, ``oneof`` branches,
blocks, optional and repeated parts), with per-argument value pools for keys of every
type, empty and binary strings, numbers in and out of range, and a few deliberate
mutations per command: the arity one short, an extra argument, an unknown or lower-cased
token. A *sequence* is a seeded list of such commands for one family, run against
redis-server and pykv on a keyspace set up the same on both (keys of every type, so
wrong-type errors come up), comparing each reply's bytes.

Nothing here touches a socket: ``sequence(family, seed)`` is a pure function of its
arguments, so a failing sequence id reproduces exactly. Replies that cannot be equal are
compared by ``compare_mode``: order-free for hash-table iteration, by shape for random
picks and idle times, within a second for TTLs, and HELP by its first line (the rest is
pykv's own wording, by design).
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import random
from dataclasses import dataclass

TABLE_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "pykv", "server",
                          "command_table.json")

FAMILIES = ("string", "list", "hash", "set", "sorted-set", "generic", "bitmap",
            "hyperloglog", "geo", "stream", "connection", "server", "pubsub", "cluster",
            "transactions", "scripting")
# families mostly about the server or the connection: only their commands whose replies
# are deterministic and that leave the connection usable (no HELLO/QUIT/CLIENT REPLY,
# no SUBSCRIBE mode, no INFO/TIME/ROLE, nothing that saves, forks or waits)
ONLY = {
    "connection": {"auth", "client|caching", "client|getname", "client|getredir",
                   "client|help", "client|no-evict", "client|setname", "client|trackinginfo",
                   "echo", "ping", "reset", "select"},
    "server": {"acl|cat", "acl|dryrun", "acl|help", "acl|whoami", "command|getkeys",
               "command|getkeysandflags", "command|help", "config|help", "dbsize", "flushdb",
               "latency|help", "memory|help", "module|help", "slowlog|help", "swapdb"},
    # no SCRIPT DEBUG (a debugging session), no long-running scripts
    "scripting": {"eval", "eval_ro", "evalsha", "evalsha_ro", "fcall", "fcall_ro",
                  "function|delete", "function|dump", "function|flush", "function|help",
                  "function|kill", "function|list", "function|load", "function|restore",
                  "function|stats", "script|exists", "script|flush", "script|help",
                  "script|kill", "script|load"},
    "pubsub": {"publish", "spublish", "pubsub|channels", "pubsub|help", "pubsub|numpat",
               "pubsub|numsub", "pubsub|shardchannels", "pubsub|shardnumsub", "punsubscribe",
               "sunsubscribe", "unsubscribe"},
}

# left out: they block, wait for replicas, reach the network, act at random on the data
# (SPOP), or take seconds (PFSELFTEST); DEBUG-like PFDEBUG is internal
EXCLUDED = frozenset({
    "blmove", "blmpop", "blpop", "brpop", "brpoplpush", "bzmpop", "bzpopmax", "bzpopmin",
    "wait", "migrate", "spop", "pfselftest", "pfdebug", "dump",
})
# arguments dropped from the tree: BLOCK would make XREAD/XREADGROUP wait
DROPPED_ARGS = {"xread": {"milliseconds"}, "xreadgroup": {"milliseconds"}}
# oneof branches never taken: XADD's "*" makes an ID from each server's clock
BANNED_BRANCHES = {"xadd": {"auto_id"}}

# how a reply is compared when it cannot be byte-equal by nature
UNORDERED = frozenset({"keys", "smembers", "sinter", "sunion", "sdiff", "hgetall", "hkeys",
                       "hvals", "scan", "sscan", "hscan", "zscan", "function|list"})
SHAPE = frozenset({"randomkey", "srandmember", "hrandfield", "zrandmember", "object|idletime",
                   "pttl", "pexpiretime", "xpending", "xinfo|stream", "xinfo|groups",
                   "xinfo|consumers", "xautoclaim", "xclaim",
                   "function|dump"})  # libraries in the order of Redis's dict
SCANS = {"scan": 1, "sscan": 2, "hscan": 2, "zscan": 2}  # where the cursor is in argv
NEAR = frozenset({"ttl", "expiretime"})  # whole seconds: may tick between the two servers

# the keyspace every sequence starts from (the same commands on both servers)
SETUP: list[tuple[str, ...]] = [
    ("FUNCTION", "FLUSH"), ("SCRIPT", "FLUSH"),   # FLUSHALL leaves both alone
    ("SET", "s1", "hello"), ("SET", "s2", ""), ("SET", "n1", "10"), ("SET", "f1", "1.5"),
    ("SET", "b1", "\x00\xff\x10bin"),
    ("RPUSH", "l1", "a", "b", "c", "1", "2", "a"), ("RPUSH", "l2", "x" * 70, "y"),
    ("HSET", "h1", "f1", "v1", "f2", "2", "a", "1.5"), ("HSET", "h2", "f" * 70, "big"),
    ("SADD", "st1", "1", "2", "3"), ("SADD", "st2", "a", "b", "c", "1"),
    ("ZADD", "z1", "1", "a", "2", "b", "3", "c", "3", "d"), ("ZADD", "z2", "0", "a", "0", "b"),
    ("GEOADD", "g1", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"),
    ("PFADD", "p1", "a", "b", "c"),
    ("XADD", "x1", "1-1", "f", "v"), ("XADD", "x1", "2-1", "f", "v2", "g", "w"),
    ("XGROUP", "CREATE", "x1", "g1", "0"), ("XREADGROUP", "GROUP", "g1", "c1", "COUNT", "1",
                                           "STREAMS", "x1", ">"),
    ("SETEX", "t1", "1000", "temp"), ("SET", "w_1", "3"), ("SET", "w_2", "1"),
    # past the listpack/intset limits: hashtable, skiplist and big-list encodings
    ("HSET", "h3", *[x for i in range(130) for x in (f"f{i}", str(i))]),
    ("SADD", "st3", *[str(i) for i in range(600)]),
    ("ZADD", "z3", *[x for i in range(130) for x in (str(i % 7), f"m{i}")]),
    ("RPUSH", "l3", *[f"e{i}" for i in range(300)]),
]
KEYS_BY_TYPE = {
    "string": ["s1", "s2", "n1", "f1", "b1"], "list": ["l1", "l2", "l3"],
    "hash": ["h1", "h2", "h3"], "set": ["st1", "st2", "st3"], "sorted-set": ["z1", "z2", "z3"],
    "geo": ["g1", "z1"],
    "hyperloglog": ["p1", "s1"], "stream": ["x1"], "bitmap": ["s1", "b1", "n1", "s2"],
    "generic": ["s1", "l1", "h1", "st1", "z1", "x1", "t1", "n1"],
}
for _family in ("connection", "server", "pubsub", "cluster", "transactions", "scripting"):
    KEYS_BY_TYPE[_family] = KEYS_BY_TYPE["generic"]
ALL_KEYS = sorted({k for keys in KEYS_BY_TYPE.values() for k in keys})
MISSING = ["nokey", "new1", "new2"]

INTEGERS = ["0", "1", "2", "3", "-1", "-2", "10", "100", "-100", "9223372036854775807",
            "-9223372036854775808", "9223372036854775808", "abc", "", "1.5", " 1", "+1", "007"]
DOUBLES = ["0", "1", "1.5", "-2.5", "3", "inf", "-inf", "+inf", "nan", "abc", "1e308", "1e400",
           "", "0x10", "-0", "1e-5", "(1", "(2.5"]
STRINGS = ["a", "b", "c", "1", "2", "f1", "f2", "v1", "x", "", "\x00\xff\r\n", "hello",
           "x" * 70, "3.5", "-7", "é", "Palermo", "Catania", "m5", "f100", "e7", "599"]
PATTERNS = ["*", "a*", "?1", "[a-z]*", "\\*", "", "h*", "*1", "f[0-9]", "w_*"]
UNIX_TIMES = ["0", "1", "1700000000", "9999999999", "-1", "abc", "99999999999999"]
STREAM_IDS = ["0", "0-0", "1-1", "2-1", "3-0", "5", "1-*", "-", "+", "$", ">", "abc",
              "18446744073709551615-18446744073709551615", "(1-1", "2-1"]
SCRIPTS = ["return 1", "return KEYS[1]", "return redis.call('GET', KEYS[1])",
           'return {1, 2, {3, "x"}}', "return redis.status_reply('DONE')",
           "return redis.error_reply('MY err')", "return 1.5", "return nil", "return ARGV[1]",
           "return redis.call('INCR', KEYS[1])", "return true", "return false",
           "return redis.pcall('LPUSH', KEYS[1], 'x')", "return redis.call('NOSUCH')",
           "return +", "", "return redis.call('SET', KEYS[1], ARGV[1])"]
LIBRARIES = ["#!lua name=lib\nredis.register_function('f', function(keys, args) return 1 end)",
             "#!lua name=lib2\nredis.register_function{function_name='g', callback=function("
             "keys, args) return keys[1] end, flags={'no-writes'}}",
             "#!lua name=lib\nreturn 1", "#!lua\nreturn 1", "#!python name=x\n", "no shebang",
             "#!lua name=bad\nredis.register_function('f f', function() end)"]
# argument values by name, where the name says more than the type
BY_NAME = {
    "longitude": ["13.361389", "15.087269", "-180", "180.1", "0", "abc"],
    "latitude": ["38.115556", "37.502669", "85.05112879", "86", "0", "abc"],
    "radius": ["0", "100", "200000", "-1", "abc"], "width": ["100", "400000", "0", "-1"],
    "height": ["100", "400000", "0"], "group": ["g1", "g2"], "groupname": ["g1", "g2"],
    "consumer": ["c1", "c2"], "consumername": ["c1", "c2"],
    "serialized-value": ["", "garbage", "\x00\x05hello\x0a\x00"],
    "db": ["0", "1", "15", "16", "-1", "abc"], "destination-db": ["0", "1", "16", "abc"],
    "encoding": ["u8", "i16", "u63", "i64", "u64", "x8", "i0"],
    "operation": ["AND", "OR", "XOR", "NOT", "bogus"],
    "offset": ["0", "1", "7", "100", "-1", "#1", "abc", "4294967296"],
    "bit": ["0", "1", "2"], "value": ["0", "1", "100", "-5", "abc"],
    "pivot": ["a", "b", "nosuch"], "threshold": ["0", "1", "2-1", "abc"],
    "ttl": ["0", "100000000", "-1", "abc"], "cursor": ["0", "1", "abc", "-1", "18446744073709551616"],
    "type": ["string", "list", "hash", "set", "zset", "stream", "nosuch"],
    "min-idle-time": ["0", "1000", "-1", "abc"],
    # relative expiry: now, the past, or far enough ahead that no key expires while a
    # sequence runs (a second or less would expire on one server and not yet on the other)
    "seconds": ["0", "-1", "100", "100000", "abc", "9223372036854775807", "9223372036854775"],
    "milliseconds": ["0", "-1", "1000000", "100000000", "abc", "9223372036854775807"],
    "ms": ["0", "1000000", "-1", "abc"],
    "command": ["get", "set", "mset", "zunionstore", "eval", "xread", "sort", "nosuch", "GET",
                "lmpop", "georadius", "object"],
    "index": ["0", "1", "15", "16", "-1", "abc"],   # SELECT / SWAPDB
    "script": SCRIPTS, "function-code": LIBRARIES, "function": ["f", "g", "nosuch", ""],
    "sha1": [hashlib.sha1(s.encode()).hexdigest() for s in SCRIPTS[:4]] + ["0" * 40, "abc"],
    "library-name": ["lib", "lib2", "nosuch"], "library-name-pattern": ["*", "lib*", "x"],
}
STREAM_ID_NAMES = {"id", "start", "end", "last-id", "max_deleted_entry_id"}
ZRANGE_BOUNDS = ["-", "+", "[a", "(b", "a", "0", "1", "(1", "-inf", "+inf", "-1", "abc", "[c"]


@dataclass(frozen=True)
class Command:
    """One generated command: its table name (``object|encoding``) and full argv."""

    name: str
    argv: tuple[str, ...]

    @property
    def compare(self) -> str:
        return compare_mode(self.name, self.argv)


def compare_mode(name: str, argv: tuple[str, ...] = ()) -> str:
    if name in SCANS and len(argv) > SCANS[name] and argv[SCANS[name]] != "0":
        return "shape"  # a cursor other than 0 is a position in each server's own table
    if name in UNORDERED or (name in ("sort", "sort_ro") and _sorts_by_pattern(argv)):
        return "unordered"
    if name.endswith("|help"):  # HELP texts are pykv's own words, by design
        return "help"
    if name in SHAPE:
        return "shape"
    if name in NEAR:
        return "near"
    return "bytes"


def _sorts_by_pattern(argv: tuple[str, ...]) -> bool:
    """SORT ... BY <pattern with *>: elements with equal weights come out in the order Redis
    loads them, a sorted set's hash-table order."""
    words = [w.upper() for w in argv]
    return any(w == "BY" and i + 1 < len(argv) and "*" in argv[i + 1]
               for i, w in enumerate(words))


def load_table() -> dict:
    with open(TABLE_PATH, encoding="utf-8") as f:
        return json.load(f)


def family_commands(table: dict, family: str) -> list[tuple[str, dict]]:
    """(name, metadata) of every command and subcommand of ``family``, not excluded."""
    out = []
    for name, meta in sorted(table.items()):
        subs = meta.get("subcommands") or {}
        for sub_name, sub in (sorted(subs.items()) if subs else [(name, meta)]):
            if (sub["docs"].get("group") == family and sub_name not in EXCLUDED
                    and sub_name in ONLY.get(family, (sub_name,))):
                out.append((sub_name, sub))
    return out


class Generator:
    """Argument lists for one command family, from a seeded ``random.Random``."""

    def __init__(self, rng: random.Random, family: str) -> None:
        self.rng = rng
        self.family = family

    # -- values -------------------------------------------------------------------------
    def key(self) -> str:
        r = self.rng.random()
        if r < 0.65:
            return self.rng.choice(KEYS_BY_TYPE[self.family])
        if r < 0.85:
            return self.rng.choice(ALL_KEYS)
        return self.rng.choice(MISSING)

    def value(self, arg: dict, command: str) -> str:
        name, kind = arg["name"], arg["type"]
        rng = self.rng
        if kind == "key":
            return self.key()
        if self.family == "stream" and name in STREAM_ID_NAMES:
            return rng.choice(STREAM_IDS)
        if command in ("zrangebylex", "zrevrangebylex", "zlexcount", "zremrangebylex",
                       "zrange", "zrangestore") and name in ("min", "max", "start", "stop"):
            return rng.choice(ZRANGE_BOUNDS)
        if name in BY_NAME:
            return rng.choice(BY_NAME[name])
        if kind == "integer":
            return rng.choice(INTEGERS)
        if kind == "double":
            return rng.choice(DOUBLES)
        if kind == "pattern":
            return rng.choice(PATTERNS)
        if kind == "unix-time":
            return rng.choice(UNIX_TIMES)
        return rng.choice(STRINGS)

    def token(self, token: str) -> str:
        r = self.rng.random()
        if r < 0.03:
            return "BOGUS"
        if r < 0.15:
            return token.lower()
        return token

    # -- the argument tree ---------------------------------------------------------------
    def args(self, args: list[dict], command: str) -> list[str]:
        out: list[str] = []
        dropped = DROPPED_ARGS.get(command, set())
        for arg in args:
            if arg["name"] in dropped:
                continue
            flags = arg.get("flags", [])
            if "optional" in flags and self.rng.random() < 0.55:
                continue
            reps = self.rng.choice([1, 1, 1, 2, 3]) if "multiple" in flags else 1
            for i in range(reps):
                if arg.get("token") and (i == 0 or "multiple_token" in flags):
                    out.append(self.token(arg["token"]))
                out += self.one(arg, command)
        return out

    def one(self, arg: dict, command: str) -> list[str]:
        kind = arg["type"]
        if kind == "pure-token":
            return []
        if kind == "oneof":
            banned = BANNED_BRANCHES.get(command, set())
            branches = [a for a in arg["arguments"] if a["name"] not in banned]
            return self.args([dict(self.rng.choice(branches), flags=[])], command)
        if kind == "block":
            return self.args(arg["arguments"], command)
        return [self.value(arg, command)]

    def command(self, name: str, meta: dict) -> Command:
        words = [w.upper() for w in name.split("|")]
        args = self.args(meta["docs"].get("arguments", []), name)
        args = _fix_numkeys(meta["docs"].get("arguments", []), args, self.rng)
        r = self.rng.random()
        arity = meta["arity"]
        if r < 0.04:  # one argument short of the arity
            args = args[:max(0, abs(arity) - len(words) - 1)]
        elif r < 0.07:
            args = args + [self.rng.choice(STRINGS)]
        return Command(name, tuple(words + args))


def _fix_numkeys(tree: list[dict], args: list[str], rng: random.Random) -> list[str]:
    """Most of the time make a leading ``numkeys`` count the keys that follow it."""
    names = [a["name"] for a in tree]
    if not names or "numkeys" not in names[:2] or rng.random() < 0.2:
        return args
    pos = names.index("numkeys")  # numkeys is never optional: its position is fixed
    if pos >= len(args):
        return args
    key_arg = tree[pos + 1] if pos + 1 < len(tree) else None
    if not key_arg or key_arg["type"] != "key":
        return args
    count = 0
    for word in args[pos + 1:]:
        if word in ALL_KEYS or word in MISSING:
            count += 1
        else:
            break
    return args[:pos] + [str(count)] + args[pos + 1:]


def sequence(family: str, seed: int, length: int = 40, table: dict | None = None,
             skip: tuple[str, ...] = ()) -> list[Command]:
    """The ``seed``-th sequence of ``family``: ``length`` generated commands, none of them
    matching a ``skip`` pattern (fnmatch on the table name)."""
    table = table if table is not None else load_table()
    commands = [(name, meta) for name, meta in family_commands(table, family)
                if not any(fnmatch.fnmatchcase(name, pattern) for pattern in skip)]
    rng = random.Random(f"{family}:{seed}")
    gen = Generator(rng, family)
    return [gen.command(*rng.choice(commands)) for _ in range(length)]


def corpus_ids(sequences_per_family: int) -> list[tuple[str, int]]:
    return [(family, seed) for family in FAMILIES for seed in range(sequences_per_family)]
