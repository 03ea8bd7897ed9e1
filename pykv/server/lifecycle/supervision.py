"""``supervised systemd|upstart|auto|no``: tell the service manager how start-up goes.

systemd: datagrams to ``$NOTIFY_SOCKET`` (sd_notify's protocol: ``STATUS=...``,
``READY=1``; a leading ``@`` names an abstract socket). upstart: ``SIGSTOP`` to ourselves once
ready to be watched, as Redis does (``expect stop``). ``auto`` picks one from the
environment. A supervised server does not daemonize.
"""
from __future__ import annotations

import logging
import os
import signal
import socket

log = logging.getLogger("pykv")


class Supervisor:
    """The detected supervision mode and the way to talk to it."""

    def __init__(self, mode: str = "no") -> None:
        self.mode = mode

    @property
    def systemd(self) -> bool:
        return self.mode == "systemd"

    def notify(self, message: str) -> bool:
        """One sd_notify datagram (systemd only); False if it could not be sent."""
        if not self.systemd:
            return False
        return sd_notify(message)

    def ready(self) -> None:
        if self.systemd:
            sd_notify("STATUS=Ready to accept connections\n")
            sd_notify("READY=1\n")


def sd_notify(message: str) -> bool:
    path = os.environ.get("NOTIFY_SOCKET", "")
    if not path:
        return False
    address = "\0" + path[1:] if path.startswith("@") else path
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(message.encode(), address)
    except OSError:
        return False
    return True


def detect(mode: str) -> Supervisor:
    """Redis's redisIsSupervised: which mode applies, logged as Redis logs it."""
    if mode == "auto":
        if os.environ.get("UPSTART_JOB"):
            log.log(15, "Upstart supervision detected.")
            mode = "upstart"
        elif os.environ.get("NOTIFY_SOCKET"):
            log.log(15, "Systemd supervision detected.")
            mode = "systemd"
    if mode == "upstart":
        if not os.environ.get("UPSTART_JOB"):
            log.warning("upstart supervision requested, but UPSTART_JOB not found!")
            return Supervisor()
        log.info("supervised by upstart, will stop to signal readiness.")
        os.kill(os.getpid(), signal.SIGSTOP)
        del os.environ["UPSTART_JOB"]
        return Supervisor("upstart")
    if mode == "systemd":
        if not sd_notify("STATUS=Redis is loading...\n"):
            return Supervisor()
        log.info("Supervised by systemd. Please make sure you set appropriate values for "
                 "TimeoutStartSec and TimeoutStopSec in your service unit.")
        return Supervisor("systemd")
    return Supervisor()
