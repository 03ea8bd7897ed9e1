"""The ACL file (``aclfile``): ACL LOAD's parser with Redis 7.0's error texts, ACL SAVE.

A file is ``user <name> <rule>...`` lines split on spaces (no quoting, no comments in
7.0). Loading is all or nothing: with any error the current users stay as they are.
"""
from __future__ import annotations

import os
import tempfile

from pykv import errors
from pykv.acl.registry import ROOT_RULES, Acl
from pykv.acl.selector import UNKNOWN, RuleError
from pykv.acl.user import User, merge_selector_args


def parse(acl: Acl, text: bytes, filename: str) -> tuple[dict[bytes, User] | None, str]:
    """The users the file declares, or (None, Redis's error text)."""
    users: dict[bytes, User] = {}
    problems: list[str] = []
    for linenum, raw in enumerate(text.split(b"\n"), 1):
        line = raw.strip(b" \t\r\n")
        if not line:
            continue
        words = [w for w in line.split(b" ") if w]  # runs of spaces count as one
        if words[0] != b"user" or len(words) < 2:
            problems.append(errors.acl_load_not_user(filename, linenum))
            continue
        name = words[1]
        if name in users:
            problems.append(errors.acl_load_duplicate(_text(name), linenum))
            continue
        user = users[name] = acl.new_user(name)
        rules, _ = merge_selector_args(words[2:])
        if rules is None:
            problems.append(errors.acl_load_unmatched_paren(filename, linenum))
            rules = []
        syntax_error = False
        for rule in rules:
            rule = rule.strip(b"\t\r\n")
            try:
                user.apply(rule)
            except RuleError as exc:
                reason = exc.args[0]
                if reason == UNKNOWN:
                    problems.append(
                        errors.acl_load_unknown(filename, linenum, _text(rule), reason))
                elif not syntax_error:
                    problems.append(errors.acl_load_rule_error(filename, linenum, reason))
                    syntax_error = True
    if problems:
        return None, "".join(problems) + errors.ACL_LOAD_NO_CHANGE
    return users, ""


def install_users(acl: Acl, users: dict[bytes, User]) -> list[User]:
    """Replace the users with ``users``; the default user object stays (its rules are the
    file's, or a fresh default's). Returns the users that are gone."""
    new_default = users.pop(b"default", None)
    if new_default is None:
        new_default = acl.new_user(b"default")
        for rule in ROOT_RULES:
            new_default.apply(rule)
    acl.default.assign(new_default)
    gone = [u for name, u in acl.users.items() if name != b"default"]
    acl.users = {b"default": acl.default, **users}
    return gone


def save(acl: Acl, path: str) -> None:
    """Write every user (ACL LIST's lines) to ``path`` atomically; raises OSError."""
    data = b"".join(b"user " + u.name + b" " + u.describe().encode("utf-8", "surrogateescape")
                    + b"\n" for u in acl.sorted_users())
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-acl-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")
