"""ACL users against real redis-server: SETUSER rules as GETUSER and ACL LIST show them,
ACL CAT, the other subcommands, AUTH/HELLO for named users and the dispatcher's checks.

Redis lists single-command rules (``+get +set``) and the commands of a category in the
order of its command dict, which changes from run to run; those few replies are compared
with that order normalised (sorted), everything else byte for byte.
"""
from __future__ import annotations

import hashlib
import itertools
import re

import pytest
from conftest import Diff
from support.resp import RawClient

CATEGORIES = (
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
    "dangerous", "connection", "transaction", "scripting",
)
HASH = hashlib.sha256(b"secret").hexdigest()


@pytest.fixture(autouse=True)
def clean_users(real_redis, pykv_proc):
    yield
    for port in (real_redis.port, pykv_proc.port):
        c = RawClient(port=port)
        c.call("ACL", "SETUSER", "default", "resetpass", "nopass", "on", "~*", "&*", "+@all",
               "clearselectors")
        names = re.findall(rb"\$\d+\r\n([^\r]*)\r\n", c.call("ACL", "USERS"))
        others = [n for n in names if n != b"default"]
        if others:
            c.call("ACL", "DELUSER", *others)
        c.close()


def _rules_sorted(raw: bytes) -> bytes:
    """Single-command rules after the categories, in sorted order (lengths unchanged)."""
    def fix(m: re.Match) -> bytes:
        tokens = m.group(0).split(b" ")
        cats = [t for t in tokens if t[1:2] == b"@"]
        singles = sorted((t for t in tokens if t[1:2] != b"@"), key=lambda t: t[1:])
        return b" ".join(cats + singles)
    return re.sub(rb"[+-]@all(?: [+-][^ \r\n)]+)*", fix, raw)


def _same_rules(diff: Diff, *args) -> None:
    real, ours = diff.both(*args)
    assert _rules_sorted(ours) == _rules_sorted(real), f"{args}:\n{real!r}\n{ours!r}"


def _pair_as(real_redis, pykv_proc, user: str, password: str, resp3: bool = False) -> Diff:
    d = Diff(RawClient(port=real_redis.port), RawClient(port=pykv_proc.port))
    d("AUTH", user, password)
    if resp3:
        d("HELLO", "3")
    return d


# -- SETUSER -> GETUSER / LIST ------------------------------------------------------------
SINGLE_RULES = [
    [], ["on"], ["off"], ["on", "off"], ["nopass"], [">pw"], [">pw", ">pw2", ">pw"],
    [">pw", ">pw2", "<pw"], ["#" + HASH], ["#" + HASH, "!" + HASH], [">pw", "nopass"],
    ["nopass", "resetpass"], ["on", ">pw", "reset"], ["sanitize-payload"],
    ["skip-sanitize-payload"], ["skip-sanitize-payload", "sanitize-payload"],
    ["allcommands"], ["nocommands"], ["+@all", "-@all"], ["+get"], ["+get", "-get"],
    ["+@read", "-get"], ["+@all", "-get"], ["+config|get"], ["+config", "-config|set"],
    ["+config|get", "-config"], ["+select|0"], ["+select|0", "+select|1", "+select|0"],
    ["+select|0", "+select"], ["+select", "-select", "+select|2"], ["+get|x"],
    ["+client|list", "+client|info"], ["+@all", "-client|kill"], ["+get", "-@all"],
    ["~a", "%R~b", "%W~c", "%RW~d"], ["~a", "%R~a"], ["%R~a", "%W~a"], ["%w~a", "%r~b"],
    ["allkeys"], ["~*"], ["~a", "allkeys"], ["~a", "resetkeys"], ["%RW~*"],
    ["&a", "&b*", "&a"], ["allchannels"], ["&*"], ["&a", "resetchannels"],
    ["&a", "allchannels"], ["(+get ~a)"], ["(+get ~a)", "(+set &c)"], ["(", "+get", "~a", ")"],
    ["(~a +@read)", "clearselectors"], ["()"], ["(%R~x &y +@all -@dangerous)"],
    ["on", ">pw", "~k*", "&ch", "+@read", "(~w* +set)"],
]
CATEGORY_RULES = (
    [["+@" + c] for c in CATEGORIES] + [["+@all", "-@" + c] for c in CATEGORIES]
    + [["+@" + a, "-@" + b] for a, b in itertools.combinations(CATEGORIES, 2)
       if (CATEGORIES.index(a) + CATEGORIES.index(b)) % 5 == 0]
    + [["+@" + a, "+@" + b] for a, b in itertools.combinations(CATEGORIES, 2)
       if (CATEGORIES.index(a) * CATEGORIES.index(b)) % 7 == 1]
)
RULE_TABLE = SINGLE_RULES + CATEGORY_RULES


@pytest.mark.parametrize("rules", RULE_TABLE, ids=lambda r: " ".join(r) or "none")
def test_setuser_getuser_list(diff, diff3, rules):
    diff("ACL", "SETUSER", "u", *rules)
    _same_rules(diff, "ACL", "GETUSER", "u")
    _same_rules(diff3, "ACL", "GETUSER", "u")
    _same_rules(diff, "ACL", "LIST")


def test_setuser_applies_to_existing_user(diff):
    diff("ACL", "SETUSER", "u", "on", ">a", "~x", "+get")
    diff("ACL", "SETUSER", "u", ">b", "-get", "+set", "%R~y")
    diff("ACL", "LIST")
    diff("ACL", "SETUSER", "u", "reset")
    diff("ACL", "LIST")


@pytest.mark.parametrize("rules", [
    ["+nosuch"], ["+@nosuch"], ["-nosuch"], ["+config|nosuch"], ["+config|get|x"],
    ["+select|"], ["bogus"], ["#abc"], ["#" + "A" * 64], ["!" + "0" * 63], ["<missing"],
    ["!" + HASH], ["~*", "~x"], ["allkeys", "%R~x"], ["&*", "&x"], ["%X~a"], ["%~a"],
    ["%R"], ["%RWR~a"], ["%RX"], ["%~"], ["%W", "%R~"], ["(+get"], ["(", "+get"], ["(on)"], ["(+nosuch)"], ["on", "+get", "+nosuch"],
    ["(~a) ("],
])
def test_setuser_errors(diff, rules):
    diff("ACL", "SETUSER", "u", *rules)
    diff("ACL", "USERS")  # a failed SETUSER creates nothing


def test_setuser_error_leaves_user_unchanged(diff):
    diff("ACL", "SETUSER", "u", "on", "+get")
    diff("ACL", "SETUSER", "u", "+set", "+nosuch")
    diff("ACL", "LIST")


def test_bad_usernames(diff):
    diff("ACL", "SETUSER", "a b")
    diff("ACL", "SETUSER", "a\x00b")


# -- the other subcommands -------------------------------------------------------------------
def test_cat(diff, diff3):
    diff("ACL", "CAT")
    diff3("ACL", "CAT")
    diff("ACL", "CAT", "nosuch")
    for cat in CATEGORIES + ("READ",):
        real, ours = diff.both("ACL", "CAT", cat)
        assert sorted(ours.split(b"\r\n")) == sorted(real.split(b"\r\n")), cat


def test_users_getuser_deluser(diff, diff3):
    diff("ACL", "SETUSER", "zed")
    diff("ACL", "SETUSER", "alice", "on")
    diff("ACL", "USERS")
    diff("ACL", "GETUSER", "nosuch")
    diff3("ACL", "GETUSER", "nosuch")
    diff("ACL", "DELUSER", "default")
    diff("ACL", "DELUSER", "zed", "nosuch", "zed")
    diff("ACL", "DELUSER", "alice", "default")
    diff("ACL", "USERS")


def test_whoami_help_genpass(diff, diff3, real_redis, pykv_proc):
    diff("ACL", "WHOAMI")
    diff("ACL", "HELP")
    diff3("ACL", "HELP")
    for bits in ("0", "-1", "4097", "x"):
        diff("ACL", "GENPASS", bits)
    for args, length in (((), 64), (("1",), 1), (("5",), 2), (("4096",), 1024)):
        real, ours = diff.both("ACL", "GENPASS", *args)
        assert re.fullmatch(rb"\$%d\r\n[0-9a-f]{%d}\r\n" % (length, length), ours), ours
        assert len(real) == len(ours)
    diff("ACL", "SETUSER", "w", "on", ">p", "+acl")
    d = _pair_as(real_redis, pykv_proc, "w", "p")
    d("ACL", "WHOAMI")


def test_unknown_subcommands(diff):
    diff("ACL", "NOSUCH")
    diff("ACL")
    for args in (["CAT", "read", "x"], ["GENPASS", "1", "2"], ["LOG", "1", "2"], ["LIST", "x"],
                 ["WHOAMI", "x"], ["USERS", "x"], ["HELP", "x"], ["DRYRUN", "default"]):
        diff("ACL", *args)


@pytest.mark.parametrize("args", [
    ["nouser", "get", "x"], ["u", "nosuch"], ["u", "get"], ["u", "config"],
    ["u", "config", "nosub"], ["u", "get", "k1"], ["u", "get", "x"], ["u", "set", "k1", "v"],
    ["u", "config", "get", "x"], ["u", "client", "id"], ["u", "select", "0"],
    ["u", "select", "1"], ["u", "publish", "ch", "m"], ["u", "publish", "other", "m"],
    ["u", "subscribe", "ch", "other"], ["u", "psubscribe", "c*"], ["u", "psubscribe", "ch"],
    ["u", "mget", "k1", "x", "k2"], ["u", "hset", "w1", "f", "v"], ["u", "hget", "w1", "f"],
    ["u", "ping"], ["u", "auth", "a", "b"],
])
def test_dryrun(diff, args):
    diff("ACL", "SETUSER", "u", "on", "~k*", "%W~w*", "&ch", "+@read", "+publish", "+subscribe",
         "+psubscribe", "+hset", "+config|get", "+select|0", "-@all", "+@read", "+publish",
         "+subscribe", "+psubscribe", "+hset", "+config|get", "+select|0")
    diff("ACL", "DRYRUN", *args)


# -- AUTH and HELLO ------------------------------------------------------------------------
def test_auth_named_users(diff, diff3, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "al", "on", ">pw", "+@all", "~*")
    diff("ACL", "SETUSER", "offuser", "off", ">pw", "+@all")
    diff("ACL", "SETUSER", "free", "on", "nopass", "+@all")
    for args in (("al", "bad"), ("nosuch", "pw"), ("offuser", "pw"), ("free", "anything"),
                 ("al", "pw"), ("pw",)):
        diff("AUTH", *args)
        diff("ACL", "WHOAMI")
    diff3("HELLO", "3", "AUTH", "al", "bad")
    diff3("HELLO", "3", "AUTH", "offuser", "pw")
    diff3("ACL", "WHOAMI")
    d = Diff(RawClient(port=real_redis.port), RawClient(port=pykv_proc.port))
    real, ours = d.both("HELLO", "2", "AUTH", "al", "pw")
    assert ours.startswith(b"*14\r\n") and real.startswith(b"*14\r\n")
    d("ACL", "WHOAMI")
    d("RESET")
    d("ACL", "WHOAMI")


def test_default_user_password(diff, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "default", ">dpw")
    diff("ACL", "LIST")
    d = Diff(RawClient(port=real_redis.port), RawClient(port=pykv_proc.port))
    d("GET", "x")
    d("AUTH", "wrong")
    d("AUTH", "dpw")
    d("GET", "x")
    d("ACL", "SETUSER", "default", "nopass")


def test_client_list_user_field(diff, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "cl", "on", ">pw", "+@all", "~*")
    d = _pair_as(real_redis, pykv_proc, "cl", "pw")
    real, ours = d.both("CLIENT", "INFO")
    assert re.search(rb" user=(\S+) ", ours).group(1) == re.search(rb" user=(\S+) ", real).group(1)
    assert b" user=cl " in ours


def test_deluser_disconnects_its_clients(diff, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "gone", "on", ">pw", "+@all", "~*")
    d = _pair_as(real_redis, pykv_proc, "gone", "pw")
    diff("ACL", "DELUSER", "gone")
    d.until_closed(b"PING\r\n")


# -- enforcement ---------------------------------------------------------------------------
def test_command_and_key_permissions(diff, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "p", "on", ">pw", "~k*", "%R~r*", "%W~w*", "+@read", "+@write",
         "-del", "+select|0", "+client|getname", "-@dangerous")
    d = _pair_as(real_redis, pykv_proc, "p", "pw")
    for cmd in (["GET", "k1"], ["GET", "x"], ["SET", "k1", "v"], ["SET", "r1", "v"],
                ["GET", "r1"], ["SET", "w1", "v"], ["GET", "w1"], ["APPEND", "w1", "x"],
                ["COPY", "r1", "w2"], ["COPY", "w1", "r2"], ["MSET", "k1", "a", "x", "b"],
                ["MGET", "k1", "r1", "w1"], ["DEL", "k1"], ["UNLINK", "k1"], ["SELECT", "0"],
                ["SELECT", "1"], ["CLIENT", "GETNAME"], ["CLIENT", "LIST"], ["FLUSHALL"],
                ["KEYS", "*"], ["PING"], ["AUTH", "p", "bad"], ["LPUSH", "w9", "a"],
                ["LMOVE", "k1", "w1", "LEFT", "RIGHT"], ["SORT", "k9"], ["EXISTS", "x", "k1"],
                ["ACL", "WHOAMI"], ["ECHO", "x"], ["SET", "w1", "v", "GET"],
                ["SET", "w1", "v", "NX"], ["SET", "k1", "v", "GET"], ["MGET", "r1"],
                ["MGET", "r1", "r2", "w1"], ["MGET", "r1", "r2"], ["BITFIELD", "r1", "GET", "u8", "0"],
                ["BITFIELD", "r1", "SET", "u8", "0", "1"], ["SORT", "r1", "STORE", "w5"]):
        d(*cmd)


def test_channel_permissions(diff, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "s", "on", ">pw", "&news.*", "&exact", "+@pubsub", "-punsubscribe")
    d = _pair_as(real_redis, pykv_proc, "s", "pw")
    for cmd in (["PUBLISH", "news.1", "m"], ["PUBLISH", "other", "m"],
                ["PUBLISH", "exact", "m"], ["SUBSCRIBE", "other"], ["PSUBSCRIBE", "news.*x"],
                ["PSUBSCRIBE", "news.*"], ["SPUBLISH", "other", "m"],
                ["SSUBSCRIBE", "other"]):
        d(*cmd)
    d("SUBSCRIBE", "news.a", "other")
    d.raw(b"*2\r\n$9\r\nSUBSCRIBE\r\n$5\r\nexact\r\n")
    d("PUNSUBSCRIBE")
    d("UNSUBSCRIBE")


def test_selectors_and_firstargs(diff, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "x", "on", ">pw", "~a*", "+get", "(~b* +set)", "(%R~c* +@read)",
         "+config|get", "+client|setname")
    d = _pair_as(real_redis, pykv_proc, "x", "pw")
    for cmd in (["GET", "a1"], ["GET", "b1"], ["SET", "b1", "v"], ["SET", "a1", "v"],
                ["GET", "c1"], ["SET", "c1", "v"], ["MGET", "a1", "c1"], ["MGET", "c1", "b1"],
                ["CONFIG", "GET", "maxmemory"], ["CONFIG", "SET", "maxmemory", "0"],
                ["CLIENT", "SETNAME", "n"], ["CLIENT", "GETNAME"]):
        d(*cmd)


def test_denied_inside_multi_and_permission_updates(diff, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "m", "on", ">pw", "~*", "+multi", "+exec", "+get")
    d = _pair_as(real_redis, pykv_proc, "m", "pw")
    d("MULTI")
    d("GET", "a")
    d("SET", "a", "1")
    d("EXEC")
    diff("ACL", "SETUSER", "m", "+set")
    d("SET", "a", "1")
    diff("ACL", "SETUSER", "m", "-set")
    d("SET", "a", "1")
    diff("ACL", "SETUSER", "default", "-get")
    diff("GET", "a")
    diff("ACL", "SETUSER", "default", "+get")
    diff("GET", "a")


def test_acl_pubsub_default(diff):
    diff("CONFIG", "SET", "acl-pubsub-default", "allchannels")
    try:
        diff("ACL", "SETUSER", "pd", "(+get)")
        diff("ACL", "SETUSER", "pd2", "&x", "reset")
        diff("ACL", "LIST")
    finally:
        diff("CONFIG", "SET", "acl-pubsub-default", "resetchannels")
    diff("ACL", "SETUSER", "pd3")
    diff("ACL", "LIST")


def _log_normalised(raw: bytes) -> bytes:
    """ACL LOG without what differs by nature (ages, client ids and addresses), keeping
    each entry's client-info ``user=`` and ``cmd=``."""
    raw = re.sub(rb"age-seconds\r\n(?:\$\d+\r\n[^\r]*|,[^\r]*)\r\n", b"age-seconds\r\nAGE\r\n",
                 raw)

    def info(m: re.Match) -> bytes:
        fields = dict(f.split(b"=", 1) for f in m.group(1).split(b" ") if b"=" in f)
        return b"client-info\r\nuser=%s cmd=%s\r\n" % (fields[b"user"], fields[b"cmd"])
    return re.sub(rb"client-info\r\n\$\d+\r\n([^\r]*)\r\n", info, raw)


def test_acl_log(diff, diff3, real_redis, pykv_proc):
    diff("ACL", "LOG", "RESET")
    diff("ACL", "SETUSER", "lg", "on", "nopass", "~k", "&c", "+get", "+multi", "+publish")
    d = _pair_as(real_redis, pykv_proc, "lg", "x")
    for cmd in (["GET", "a"], ["SET", "a", "1"], ["GET", "a"], ["PUBLISH", "d", "m"],
                ["AUTH", "nosuch", "p"], ["auth", "lg2", "p"], ["HELLO", "2", "AUTH", "x", "y"],
                ["MULTI"], ["GET", "b"], ["SET", "b", "1"]):
        d(*cmd)
    for args in ((), ("2",), ("0",), ("-1",), ("x",), ("1", "2")):
        for dd in (diff, diff3):
            real, ours = dd.both("ACL", "LOG", *args)
            assert _log_normalised(ours) == _log_normalised(real), (args, real, ours)
    diff("CONFIG", "SET", "acllog-max-len", "2")
    try:
        d("GET", "c")
        real, ours = diff.both("ACL", "LOG")
        assert _log_normalised(ours) == _log_normalised(real)
    finally:
        diff("CONFIG", "SET", "acllog-max-len", "128")
    diff("ACL", "LOG", "RESET")
    diff("ACL", "LOG")


def test_scripts_run_as_the_callers_user(diff, real_redis, pykv_proc):
    diff("ACL", "LOG", "RESET")
    diff("ACL", "SETUSER", "sc", "on", "nopass", "~k*", "&c", "+eval", "+get", "+publish")
    d = _pair_as(real_redis, pykv_proc, "sc", "x")
    for body in ("return redis.call('set','k1','v')", "return redis.call('get','x')",
                 "return redis.pcall('get','x')", "return redis.call('get','k1')",
                 "return redis.pcall('publish','d','m')", "return redis.pcall('publish','c','m')",
                 "return redis.pcall('mget','k1','x')"):
        d("EVAL", body, "0")
    real, ours = diff.both("ACL", "LOG")
    assert _log_normalised(ours) == _log_normalised(real), (real, ours)


@pytest.mark.parametrize("rules, sub, change", [
    (["&*"], ["SUBSCRIBE", "x"], ["resetchannels"]),
    (["&x", "&y"], ["SUBSCRIBE", "x"], ["resetchannels", "&y"]),
    (["&x", "&y"], ["SUBSCRIBE", "y"], ["resetchannels", "&y"]),
    (["&x*"], ["PSUBSCRIBE", "x*"], ["resetchannels", "&x*", "&z"]),
    (["&x*"], ["PSUBSCRIBE", "x*"], ["resetchannels", "&x"]),
    (["&x*"], ["SUBSCRIBE", "xa"], ["resetchannels", "&xa"]),
    (["&x"], ["SUBSCRIBE", "x"], ["(&x)"]),
    (["&x"], ["SUBSCRIBE", "x"], ["resetchannels", "(&x)"]),
    (["&x"], ["SUBSCRIBE", "x"], ["resetchannels", "-@all"]),
])
def test_revoked_channels_disconnect_subscribers(diff, real_redis, pykv_proc, rules, sub,
                                                 change):
    diff("ACL", "SETUSER", "ps", "on", ">pw", "+@all", *rules)
    d = _pair_as(real_redis, pykv_proc, "ps", "pw")
    d(*sub)
    diff("ACL", "SETUSER", "ps", *change)
    d.until_closed(b"PING\r\nQUIT\r\n")  # killed: nothing; kept: the PONG and the OK


def test_exec_rechecks_queued_commands(diff, real_redis, pykv_proc):
    diff("ACL", "LOG", "RESET")
    diff("ACL", "SETUSER", "ex", "on", "nopass", "~*", "&*", "+multi", "+exec", "+get", "+set",
         "+publish")
    d = _pair_as(real_redis, pykv_proc, "ex", "x")
    d("MULTI")
    for cmd in (["SET", "a", "1"], ["GET", "a"], ["SET", "b", "1"], ["PUBLISH", "ch", "m"],
                ["GET", "b"]):
        d(*cmd)
    diff("ACL", "SETUSER", "ex", "resetkeys", "%R~a", "-get", "+get", "resetchannels", "-set",
         "+set")
    d("EXEC")
    real, ours = diff.both("ACL", "LOG")
    assert _log_normalised(ours) == _log_normalised(real), (real, ours)


def test_client_kill_user(diff, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "kk", "on", ">pw", "+@all", "~*")
    d = _pair_as(real_redis, pykv_proc, "kk", "pw")
    diff("CLIENT", "KILL", "USER", "nosuch")
    diff("CLIENT", "KILL", "USER", "kk")
    d.until_closed(b"PING\r\n")


@pytest.mark.parametrize("args", [
    "'get','k1'", "'get','x'", "'set','k1','v'", "'get'", "", "'nosuch'", "1", "{}",
    "'config','get','x'", "'config'", "'config','nosub'", "'publish','c','m'",
    "'publish','d','m'",
])
def test_lua_acl_check_cmd(diff, real_redis, pykv_proc, args):
    diff("EVAL", f"return redis.acl_check_cmd({args})", "0")
    diff("ACL", "SETUSER", "lc", "on", "nopass", "~k*", "&c", "+eval", "+get", "+publish")
    d = _pair_as(real_redis, pykv_proc, "lc", "x")
    d("EVAL", f"return redis.acl_check_cmd({args})", "0")


def test_passwords_redacted_in_slowlog(diff, real_redis, pykv_proc):
    import redis

    diff("CONFIG", "SET", "slowlog-log-slower-than", "0")
    try:
        diff("SLOWLOG", "RESET")
        diff("ACL", "SETUSER", "rd", "on", ">secret", "+@all", "~*")
        diff("AUTH", "rd", "wrong")
        diff("AUTH", "only-a-password")
        diff.both("HELLO", "2", "AUTH", "rd", "secret", "SETNAME", "n")
        diff("AUTH", "a", "b", "c")
        logs = []
        for port in (real_redis.port, pykv_proc.port):
            r = redis.Redis(port=port)
            logs.append([e["command"] for e in reversed(r.slowlog_get(10))
                         if e["command"].split(b" ")[0] in (b"ACL", b"AUTH", b"HELLO")
                         and e["command"] != b"HELLO 3"])  # redis-py's own HELLO
            r.close()
        assert logs[1] == logs[0]
        assert b"secret" not in b" ".join(logs[1])
    finally:
        diff("CONFIG", "SET", "slowlog-log-slower-than", "10000")


def test_user_with_nothing_allowed(diff, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "none", "on", ">pw", "-@all", "resetkeys", "resetchannels")
    d = _pair_as(real_redis, pykv_proc, "none", "pw")
    for cmd in (["PING"], ["GET", "a"], ["AUTH", "none", "bad"], ["ACL", "WHOAMI"],
                ["SUBSCRIBE", "x"], ["MULTI"], ["EXEC"]):
        d(*cmd)
    d.until_closed(b"RESET\r\nQUIT\r\n")


def test_default_user_off(diff, real_redis, pykv_proc):
    diff("ACL", "SETUSER", "default", "off")
    try:
        d = Diff(RawClient(port=real_redis.port), RawClient(port=pykv_proc.port))
        d("PING")
        d("AUTH", "x")
        d("HELLO", "3")
    finally:
        diff("ACL", "SETUSER", "default", "on")
    diff("PING")


@pytest.mark.parametrize("args", [
    ["CAT", "x" * 200], ["CAT", "\x00\xff\r\n"], ["CAT", "re\x00ad"],
    ["SETUSER", "u", "+ge\x00t"], ["SETUSER", "u", "(+ge\x00t"], ["SETUSER", "u", "+" + "x" * 200],
    ["DRYRUN", "u\x00x", "get"], ["DRYRUN", "default", "g\x00et"], ["DRYRUN", "x" * 200, "get"],
])
def test_error_texts_with_odd_arguments(diff, args):
    diff("ACL", *args)
