"""pykv.acl: a user's ACL LIST form, applied to a new user, gives back the same permissions
(the check Redis runs on its own description), over generated rule sequences."""
from __future__ import annotations

import random

import pytest

from pykv.acl import Acl
from pykv.acl.categories import CATEGORIES
from pykv.acl.selector import RuleError

COMMANDS = ["get", "set", "config", "config|get", "client|list", "select|0", "select|7",
            "xinfo", "xinfo|stream", "flushall", "ping", "eval", "publish"]
RULES = (["+@" + c for c in CATEGORIES] + ["-@" + c for c in CATEGORIES]
         + ["+" + c for c in COMMANDS] + ["-" + c for c in COMMANDS if "|" not in c
                                          or not c.startswith("select")]
         + ["+@all", "-@all", "allcommands", "nocommands", "~a*", "%R~b", "%W~c", "allkeys",
            "resetkeys", "&x", "allchannels", "resetchannels", "on", "off", ">p", "nopass"])


def _state(user):
    s = user.root  # first-args of an allowed command change nothing (nor does Redis show them)
    return (frozenset(s.allowed), s.future,
            {k: sorted(v) for k, v in s.firstargs.items() if k not in s.allowed},
            s.allkeys, [tuple(p) for p in s.patterns], s.allchannels, list(s.channels),
            user.enabled, user.nopass, list(user.passwords))


@pytest.mark.parametrize("seed", range(200))
def test_description_round_trips(seed):
    rng = random.Random(seed)
    acl = Acl()
    user = acl.create(b"u")
    for _ in range(rng.randint(1, 12)):
        try:
            user.apply(rng.choice(RULES).encode())
        except RuleError:
            pass  # refused (a pattern after allkeys...), as ACL SETUSER would
    again = acl.create(b"v")
    for rule in user.describe().split(" "):
        again.apply(rule.encode())
    assert _state(again) == _state(user), user.describe()
