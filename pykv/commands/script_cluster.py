"""What a script may do in cluster mode, as Redis 7.0's scriptPrepareForRun and
scriptVerifyClusterState read its flags (EVAL's shebang, a function's flags).

``no-cluster`` refuses to run the script at all on a cluster node. Without
``allow-cross-slot-keys`` every key the script's commands touch must hash to one slot: the
slot of its declared keys (the dispatcher has already checked that they share one), else
the slot of the first key it uses; the engine's cluster check enforces it through
``RunContext.slot``. Inside EXEC the slot belongs to the transaction (Redis keeps it on the
client): the first key of its queued commands, else the first a script uses, and the
scripts that follow must keep to it (``Client.exec_slot`` while EXEC runs). An EVAL
without a shebang runs as before Redis 7.0: no flags, and keys of any slot of this node.
"""
from __future__ import annotations

from typing import Any

from pykv import errors
from pykv.cluster.keyslot import key_hash_slot
from pykv.protocol import ErrorReply
from pykv.scripting.engine import SLOT_ANY


def cluster_refusal(c: Any, ctx: Any, no_cluster: bool, cross_slot: bool, numkeys: int,
                    argv: list[bytes]) -> ErrorReply | None:
    """In cluster mode: the error that stops the script from running, or None after
    setting ``ctx.slot`` (``argv[3:3 + numkeys]`` are its declared keys)."""
    if c.server.cluster is None:
        return None
    if no_cluster:
        return errors.SCRIPT_NO_CLUSTER
    if cross_slot:
        ctx.slot = SLOT_ANY
    elif getattr(c, "exec_slot", None) is not None:
        ctx.slot = c.exec_slot
    else:
        ctx.slot = key_hash_slot(argv[3]) if numkeys > 0 else -1
    return None


def script_done(c: Any, ctx: Any) -> None:
    """After a script inside EXEC: the slot it settled on holds for what follows."""
    if ctx.slot != SLOT_ANY and getattr(c, "exec_slot", None) is not None:
        c.exec_slot = ctx.slot
