"""READONLY, READWRITE, ASKING and CLUSTER on a server without cluster support.

pykv is always what Redis 7.0 is with ``cluster-enabled no``: these commands exist (tools
such as ``valkey-cli --bigkeys`` send READONLY first and accept only this error) and every
one of them answers ``ERR This instance has cluster support disabled``, after the usual
arity and subcommand checks.
"""
from __future__ import annotations

from pykv import errors
from pykv.commands.registry import METADATA, command

_CLUSTER_SUBCOMMANDS = sorted(METADATA["cluster"].get("subcommands", {}))


@command("readonly", "readwrite", "asking", *_CLUSTER_SUBCOMMANDS)
def cluster_disabled(c, argv):
    return errors.CLUSTER_DISABLED
