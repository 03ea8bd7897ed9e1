"""Redis 7.0's cluster bus messages (``clusterMsg`` of cluster.h), sans-IO.

``decode(data)`` turns one whole message (as framed by its ``totlen``) into a ``Message``
or raises ``MalformedMessage`` — whatever the bytes, nothing else escapes; ``encode``
builds the bytes. All integers are big-endian. The fixed header is 2256 bytes:

    sig "RCmb" | totlen u32 | ver u16 (1) | port u16 | type u16 | count u16
    currentEpoch u64 | configEpoch u64 | offset u64 | sender[40] | myslots[2048]
    slaveof[40] | myip[46] | extensions u16 | notused[30] | pport u16 | cport u16
    flags u16 | state u8 | mflags[3]

then the body of its type: ``count`` gossip entries of 104 bytes for PING/PONG/MEET
(followed by the ping extensions when mflags[0] has EXT_DATA, each ``length u32, type u16,
unused u16, payload`` padded to 8 bytes; 7.0.15 defines only the hostname extension),
a node name for FAIL, ``channel_len u32, message_len u32, bytes`` for PUBLISH and
PUBLISHSHARD, ``configEpoch u64, nodename[40], slots[2048]`` for UPDATE, ``module_id u64,
len u32, type u8, bytes`` for MODULE, nothing for FAILOVER_AUTH_REQUEST/ACK and MFSTART.
The length checks are Redis's clusterIsValidPacket.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

SIGNATURE = b"RCmb"
VERSION = 1
NAMELEN = 40
IPLEN = 46
SLOT_BYTES = 16384 // 8
NULL_NAME = b"\0" * NAMELEN

PING, PONG, MEET, FAIL, PUBLISH, FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, UPDATE, \
    MFSTART, MODULE, PUBLISHSHARD = range(11)
TYPE_COUNT = 11
TYPE_NAMES = ("ping", "pong", "meet", "fail", "publish", "auth-req", "auth-ack", "update",
              "mfstart", "module", "publishshard")

# node flags (cluster.h CLUSTER_NODE_*)
F_MASTER, F_SLAVE, F_PFAIL, F_FAIL, F_MYSELF, F_HANDSHAKE, F_NOADDR, F_MEET, \
    F_MIGRATE_TO, F_NOFAILOVER = (1 << i for i in range(10))
# message flags, mflags[0]
MF_PAUSED, MF_FORCEACK, MF_EXT_DATA = 1, 2, 4
EXT_HOSTNAME = 0

_HEAD = struct.Struct(">4sIHHHHQQQ40s2048s40s46sH30sHHHB3s")
HEADER_LEN = _HEAD.size  # 2256
_GOSSIP = struct.Struct(">40sII46sHHHHH")
GOSSIP_LEN = _GOSSIP.size  # 104
_EXT = struct.Struct(">IHH")
_PUBLISH = struct.Struct(">II")
_UPDATE = struct.Struct(">Q40s2048s")
_MODULE = struct.Struct(">QIB")
MODULE_HEAD_LEN = 16  # sizeof(clusterMsgModule) with its 3 placeholder bytes
MIN_LEN = 8  # a reader needs the signature and the length to frame a message


class MalformedMessage(ValueError):
    """The bytes are not a valid Redis 7.0 cluster bus message (the text says why)."""


@dataclass
class Gossip:
    name: bytes
    ping_sent: int = 0
    pong_received: int = 0
    ip: str = ""
    port: int = 0
    cport: int = 0
    flags: int = 0
    pport: int = 0


@dataclass
class Message:
    type: int
    sender: bytes
    port: int = 0
    pport: int = 0
    cport: int = 0
    current_epoch: int = 0
    config_epoch: int = 0
    offset: int = 0
    myslots: bytes = b"\0" * SLOT_BYTES
    slaveof: bytes | None = None  # the master's name, None for a master
    myip: str = ""
    flags: int = 0
    state: int = 0  # 0 ok, 1 fail: the cluster state the sender sees
    mflags: bytes = b"\0\0\0"
    count: int = 0  # as sent (gossip entries for PING/PONG/MEET)
    gossip: list[Gossip] = field(default_factory=list)
    extensions: list[tuple[int, bytes]] = field(default_factory=list)  # (type, payload)
    fail_name: bytes = b""  # FAIL
    channel: bytes = b""  # PUBLISH, PUBLISHSHARD
    message: bytes = b""
    update_epoch: int = 0  # UPDATE
    update_name: bytes = b""
    update_slots: bytes = b""
    module_id: int = 0  # MODULE
    module_type: int = 0
    module_payload: bytes = b""
    version: int = VERSION

    @property
    def hostname(self) -> str | None:
        """The hostname extension's text (None when the sender sent none)."""
        for ext_type, payload in self.extensions:
            if ext_type == EXT_HOSTNAME:
                return payload.split(b"\0", 1)[0].decode("utf-8", "replace")
        return None


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("latin-1")


def _name(raw: bytes) -> bytes | None:
    return None if raw == NULL_NAME else raw


def frame_length(head: bytes) -> int:
    """The ``totlen`` of a message starting with ``head`` (at least 8 bytes), or raises
    ``MalformedMessage`` on a wrong signature or a length below the header's."""
    if head[:4] != SIGNATURE:
        raise MalformedMessage("bad signature")
    totlen = int.from_bytes(head[4:8], "big")
    if totlen < HEADER_LEN:
        raise MalformedMessage(f"bad length {totlen}")
    return totlen


def decode(data: bytes) -> Message:
    """One whole message (exactly ``totlen`` bytes) -> ``Message``."""
    try:
        return _decode(bytes(data))
    except MalformedMessage:
        raise
    except (struct.error, ValueError, IndexError, UnicodeError) as exc:
        raise MalformedMessage(str(exc)) from None


def _decode(data: bytes) -> Message:
    if len(data) < HEADER_LEN:
        raise MalformedMessage(f"truncated: {len(data)} bytes")
    (sig, totlen, ver, port, mtype, count, cur_epoch, cfg_epoch, offset, sender, myslots,
     slaveof, myip, n_ext, _unused, pport, cport, flags, state, mflags) = \
        _HEAD.unpack_from(data)
    if sig != SIGNATURE:
        raise MalformedMessage("bad signature")
    if totlen != len(data):
        raise MalformedMessage(f"totlen {totlen} but {len(data)} bytes")
    if ver != VERSION:
        raise MalformedMessage(f"unsupported version {ver}")
    msg = Message(mtype, sender, port=port, pport=pport, cport=cport,
                  current_epoch=cur_epoch, config_epoch=cfg_epoch, offset=offset,
                  myslots=myslots, slaveof=_name(slaveof), myip=_cstr(myip), flags=flags,
                  state=state, mflags=mflags, count=count, version=ver)
    pos = HEADER_LEN
    if mtype in (PING, PONG, MEET):
        explen = HEADER_LEN + GOSSIP_LEN * count
        if explen > totlen:
            raise MalformedMessage(f"{count} gossip entries exceed {totlen} bytes")
        for _ in range(count):
            g = _GOSSIP.unpack_from(data, pos)
            msg.gossip.append(Gossip(g[0], g[1], g[2], _cstr(g[3]), g[4], g[5], g[6], g[7]))
            pos += GOSSIP_LEN
        if mflags[0] & MF_EXT_DATA:
            for _ in range(n_ext):
                if pos + _EXT.size > totlen:
                    raise MalformedMessage("extension header past the end")
                length, ext_type, _pad = _EXT.unpack_from(data, pos)
                if length % 8 or length < _EXT.size:
                    raise MalformedMessage(f"extension without proper padding ({length})")
                if totlen - pos < length:
                    raise MalformedMessage("extension data exceeds the packet length")
                msg.extensions.append((ext_type, data[pos + _EXT.size:pos + length]))
                pos += length
        if pos != totlen:
            raise MalformedMessage(f"length {totlen}, expected {pos}")
    elif mtype == FAIL:
        _expect(totlen, HEADER_LEN + NAMELEN)
        msg.fail_name = data[pos:pos + NAMELEN]
    elif mtype in (PUBLISH, PUBLISHSHARD):
        if totlen < HEADER_LEN + _PUBLISH.size:
            raise MalformedMessage("truncated publish")
        clen, mlen = _PUBLISH.unpack_from(data, pos)
        _expect(totlen, HEADER_LEN + _PUBLISH.size + clen + mlen)
        pos += _PUBLISH.size
        msg.channel = data[pos:pos + clen]
        msg.message = data[pos + clen:pos + clen + mlen]
    elif mtype in (FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART):
        _expect(totlen, HEADER_LEN)
    elif mtype == UPDATE:
        _expect(totlen, HEADER_LEN + _UPDATE.size)
        msg.update_epoch, msg.update_name, msg.update_slots = _UPDATE.unpack_from(data, pos)
    elif mtype == MODULE:
        if totlen < HEADER_LEN + MODULE_HEAD_LEN:
            raise MalformedMessage("truncated module message")
        msg.module_id, mlen, msg.module_type = _MODULE.unpack_from(data, pos)
        _expect(totlen, HEADER_LEN + MODULE_HEAD_LEN - 3 + mlen)
        start = pos + _MODULE.size
        msg.module_payload = data[start:start + mlen]
    # other types: Redis only counts them; the header is all there is to read
    return msg


def _expect(totlen: int, explen: int) -> None:
    if totlen != explen:
        raise MalformedMessage(f"length {totlen}, expected {explen}")


def _pad_ip(ip: str) -> bytes:
    return ip.encode("latin-1")[:IPLEN - 1]


def encode(msg: Message) -> bytes:
    """``msg`` as bytes on the wire (totlen computed; ``count`` from the body)."""
    body = bytearray()
    mtype = msg.type
    count = msg.count
    n_ext = 0
    mflags = bytearray(msg.mflags)
    if mtype in (PING, PONG, MEET):
        count = len(msg.gossip)
        for g in msg.gossip:
            body += _GOSSIP.pack(g.name, g.ping_sent, g.pong_received, _pad_ip(g.ip), g.port,
                                 g.cport, g.flags, g.pport, 0)
        for ext_type, payload in msg.extensions:
            length = _EXT.size + len(payload)
            length += -length % 8
            body += _EXT.pack(length, ext_type, 0) + payload
            body += b"\0" * (length - _EXT.size - len(payload))
            n_ext += 1
    elif mtype == FAIL:
        body += msg.fail_name
    elif mtype in (PUBLISH, PUBLISHSHARD):
        body += _PUBLISH.pack(len(msg.channel), len(msg.message)) + msg.channel + msg.message
    elif mtype == UPDATE:
        body += _UPDATE.pack(msg.update_epoch, msg.update_name, msg.update_slots)
    elif mtype == MODULE:
        body += _MODULE.pack(msg.module_id, len(msg.module_payload), msg.module_type)
        body += msg.module_payload
    totlen = HEADER_LEN + len(body)
    head = _HEAD.pack(SIGNATURE, totlen, msg.version, msg.port, mtype, count,
                      msg.current_epoch, msg.config_epoch, msg.offset, msg.sender,
                      msg.myslots, msg.slaveof or NULL_NAME, _pad_ip(msg.myip), n_ext,
                      b"\0" * 30, msg.pport, msg.cport, msg.flags, msg.state, bytes(mflags))
    return head + bytes(body)


def hostname_extension(hostname: str) -> tuple[int, bytes]:
    """The hostname ping extension's (type, payload): the name and its NUL."""
    return EXT_HOSTNAME, hostname.encode() + b"\0"
