"""ACL users, as Redis 7.0 keeps them.

This package owns the users (``registry``), their rules and selectors (``user``,
``selector``: ``on|off``, passwords, ``+cmd``/``-@category``, ``~pattern``, ``&channel``,
``(...)`` selectors) with the canonical ``ACL LIST`` form of each, the categories as Redis
assigns them from the command table (``categories``), and the permission check the
dispatcher runs for a restricted user. It sits just above the server layer because it reads
the server's command table and key specs; the dispatcher reaches it only through the
``acl_user`` object a client carries (``check(cmd, argv)``).
"""
from pykv.acl.registry import Acl
from pykv.acl.user import User

__all__ = ["Acl", "User"]
