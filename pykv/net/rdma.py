"""The ``rdma`` connection type: Valkey's Redis-over-RDMA protocol as a pykv transport.

``--listener rdma,bind=IP,port=P[,rx-size=N][,comp-vector=N][,backend=B]`` (B: ``soft``,
``ibverbs`` or ``pyverbs``; or the ``rdma-bind``/``rdma-port`` configs) opens one CM
listener per bind address. Each CM event channel fd is watched by the server's event
loop, and each connection's completion-channel fd (plus, on the software fabric, its wire
fd) by the loop's ``ReadMux`` (pykv.net._readmux), which calls the endpoint from C; the
dispatcher sees an ordinary ``Connection``, whose requests and replies pass by C calls
(pykv.util._byteio). As in Valkey, there is no writability event: output that does not
fit the peer's window waits for its next RegisterXferMemory, and connections with work
left after a CQ drain are processed again on the next loop iteration
(``has_pending_data``).

Importing this module needs nothing beyond the standard library; the real-verbs backends
(the compiled ``ibverbs`` extension, pyverbs) are imported only when a listener selects one.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from pykv.net._readmux import read_mux
from pykv.net.base import (
    AcceptFn,
    Connection,
    ConnectionHandler,
    ConnectionType,
    Listener,
    ListenerSpec,
)
from pykv.rdma import verbs as v
from pykv.rdma.endpoint import (
    EV_EARLY,
    EV_ERROR,
    EV_FD_DONE,
    EV_OUTPUT,
    EV_PENDING,
    Endpoint,
)
from pykv.rdma.session import SERVER

log = logging.getLogger("pykv")

RX_SIZE_MIN, RX_SIZE_MAX, RX_SIZE_DEFAULT = 64 * 1024, 16 * 1024 * 1024, 1024 * 1024
CLOSE_FLUSH_TIMEOUT = 5.0


class RdmaConnection(Connection):
    """One accepted RDMA client."""

    type_name = "rdma"

    def __init__(self, listener: RdmaListener, qp: v.QueuePair, rx_size: int) -> None:
        self.listener = listener
        self.loop = listener.loop
        self.qp = qp
        self.endpoint = Endpoint(qp, SERVER, rx_size, self._drop_data,
                                 keepalive_interval=listener.keepalive_interval)
        self.handler: ConnectionHandler | None = None
        self.closing = False
        self.closed = False
        self._fds: list[int] = []   # watched for input: by the loop's ReadMux (_mux_fds)
        self._mux_fds: set[int] = set()   # or by a loop callback each
        self._mux: Any = None
        self._wfds: set[int] = set()
        # the endpoint reports what an event left to do (EV_* flags) to _after, after every
        # event while ``always_after`` (closing, or fds watched for writability)
        self.endpoint.after = self._after
        self._send = self.endpoint.send   # (None once torn down)
        self._timer: asyncio.TimerHandle | None = None
        self._close_timer: asyncio.TimerHandle | None = None
        self._pending_scheduled = False

    # -- wiring into the loop ---------------------------------------------------------------
    def start(self, handler: ConnectionHandler) -> None:
        self.handler = handler
        if self.closed:  # the server refused it at once (e.g. maxclients)
            handler.on_close()
            return
        # straight to the handler until close(): a Client takes the bytes and gives its
        # replies by C calls (no Python frame per request), anything else by on_data/write
        sink = self.endpoint.attach(handler)
        if sink is not None and hasattr(handler, "send_through"):
            handler.send_through(sink)
        # the endpoint is called for its fds (and calls _after only when flags are set) by
        # the loop's reader, in the callback that serves the socket clients, else by a
        # loop callback each
        self._mux = read_mux(self.loop)
        for fd in [self.qp.comp_fd, *self.qp.aux_fds()]:
            self._watch(fd)

    def _watch(self, fd: int) -> None:
        self._fds.append(fd)
        if self._mux is not None:
            try:
                self._mux.watch(fd, self.endpoint, self._event_failed)
                self._mux_fds.add(fd)
                return
            except OSError:  # (epoll refused it): a loop callback of its own
                pass
        if fd == self.qp.comp_fd:
            self.loop.add_reader(fd, self.endpoint.comp_ready)
        else:
            self.loop.add_reader(fd, self.endpoint.aux_ready, fd)

    def _event_failed(self, exc: Exception) -> None:
        """An exception out of the endpoint's event handling (the client's, mostly):
        reported as the loop reports one out of a callback, and the connection dropped."""
        self.loop.call_exception_handler({
            "message": "RDMA: handling a completion event failed", "exception": exc})
        self._teardown()

    def _stop_sending_through(self) -> None:
        if self.handler is not None and hasattr(self.handler, "send_through"):
            self.handler.send_through(None)

    def _after(self, flags: int, fd: int = -1) -> None:
        """What an event or a write left to do (the endpoint's EV_* flags)."""
        if flags & EV_FD_DONE:
            self._unwatch(fd)
        if flags & EV_ERROR:
            self._fail(self.endpoint.error)
            return
        if flags & EV_EARLY:
            # the peer is talking, so it is established even if the CM event was not
            # attributed to us (or not processed yet): announce our window now
            self.established()
            return
        if self.closing and self.endpoint.idle():
            self._teardown()
            return
        if flags & EV_PENDING and not self._pending_scheduled:
            self._pending_scheduled = True
            self.loop.call_soon(self._run_pending)
        if flags & EV_OUTPUT or self._wfds:
            self._sync_writers()

    def _sync_writers(self) -> None:
        """Watch fabric fds for writability only while the fabric has output queued."""
        want = set(self.qp.write_fds())
        if want == self._wfds:
            return
        for fd in want - self._wfds:
            self.loop.add_writer(fd, self._on_writable, fd)
        for fd in self._wfds - want:
            self.loop.remove_writer(fd)
        self._wfds = want
        self.endpoint.always_after = self.closing or bool(want)

    def _on_writable(self, fd: int) -> None:
        if not self.closed:
            self.qp.pump_write(fd)
            self._sync_writers()

    def _run_pending(self) -> None:
        self._pending_scheduled = False
        if not self.closed:
            self.endpoint.comp_ready()

    def _drop_data(self, data: bytes) -> None:
        """Input before start() or after close(): nobody is reading it."""

    def established(self) -> None:
        """CM ESTABLISHED or the peer's first message, whichever comes first (idempotent)."""
        err = self.endpoint.established(time.monotonic())
        if err is None and self._timer is None:
            self._schedule_keepalive(self.endpoint.session.next_keepalive)
        self._after(self.endpoint.status())

    def _schedule_keepalive(self, when: float | None) -> None:
        if when is not None and not self.closed:
            self._timer = self.loop.call_later(max(0.0, when - time.monotonic()), self._keepalive)

    def _keepalive(self) -> None:
        if self.closed:
            return
        nxt, err = self.endpoint.tick(time.monotonic())
        if err is not None:
            self._fail(err)
            return
        self._schedule_keepalive(nxt)

    def _unwatch(self, fd: int) -> None:
        if fd in self._fds:
            self._fds.remove(fd)
            if fd in self._mux_fds:
                self._mux_fds.discard(fd)
                self._mux.remove(fd, self.endpoint)
            else:
                self.loop.remove_reader(fd)

    # -- Connection interface ---------------------------------------------------------------
    def write(self, data: bytes | bytearray) -> None:
        send = self._send
        if send is not None:
            flags = send(data)
            if flags or self.endpoint.always_after:
                self._after(flags)

    def close(self) -> None:
        """Close once every queued reply has reached the peer (bounded by a timeout)."""
        if self.closed or self.closing:
            return
        self.closing = True
        self.endpoint.always_after = True
        self.endpoint.detach()
        self._stop_sending_through()   # replies (the last ones) go through write()
        if self.endpoint.idle():
            self._teardown()
            return
        err = self.endpoint.send_fence()
        if err is not None:
            self._teardown()
            return
        self._close_timer = self.loop.call_later(CLOSE_FLUSH_TIMEOUT, self._teardown)

    def abort(self) -> None:
        self._teardown()

    def peer_address(self) -> str:
        return self.qp.peer_address

    def local_address(self) -> str:
        return self.qp.local_address

    def fd(self) -> int:
        return self.qp.comp_fd

    def pending_write_bytes(self) -> int:
        return self.endpoint.session.pending_bytes

    def has_pending_data(self) -> bool:
        return not self.closed and self.endpoint.has_pending()

    def process_pending_data(self) -> None:
        self.endpoint.comp_ready()

    def serve_while_busy(self, handler: ConnectionHandler) -> None:
        """A busy script holds the loop: drain the CQ as the loop's callback would (the
        client answers -BUSY, or runs SCRIPT KILL), unless this endpoint is the one whose
        delivery ran the script (its unread span is not consumed yet)."""
        if self.closed or self.endpoint.delivering:
            return
        for fd in [fd for fd in self._fds if fd != self.qp.comp_fd]:  # (a fabric's wire)
            self.endpoint.aux_ready(fd)
        if not self.closed:
            self.endpoint.comp_ready()

    # -- teardown ---------------------------------------------------------------------------
    def on_cm_closed(self, event_type: int) -> None:
        if not self.closed:
            log.info("RDMA: client %s disconnected (CM event %d)", self.peer_address(), event_type)
            self._teardown()

    def _fail(self, reason: str) -> None:
        if not self.closed:
            log.warning("%s; closing RDMA connection from %s", reason, self.peer_address())
            self._teardown()

    def _teardown(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._send = None
        self._stop_sending_through()
        # (cycles: the endpoint holds this connection's _after and the client, both of
        # which hold the endpoint)
        self.endpoint.after = None
        self.endpoint.detach()
        for handle in (self._timer, self._close_timer):
            if handle is not None:
                handle.cancel()
        for fd in list(self._fds):
            self._unwatch(fd)
        for fd in self._wfds:
            self.loop.remove_writer(fd)
        self._wfds = set()
        try:
            self.endpoint.close()
        except OSError as exc:
            log.warning("RDMA: teardown of %s: %s", self.peer_address(), exc)
        finally:
            # only after the QP is gone: forgetting the last connection of a closing
            # listener destroys the listener's device context, and pyverbs then closes every
            # PD/CQ/QP made from it (a QP used after that is a NULL pointer: segfault)
            self.listener.forget(self)
        if self.handler is not None:
            handler, self.handler = self.handler, None
            handler.on_close()


class RdmaListener(Listener):
    """CM listeners (one per bind address) and the connections they accepted."""

    def __init__(self, spec: ListenerSpec, backend: v.Backend, accept: AcceptFn,
                 loop: asyncio.AbstractEventLoop, rx_size: int, comp_vector: int,
                 keepalive_interval: float) -> None:
        self.spec = spec
        self.backend = backend
        self.accept_fn = accept
        self.loop = loop
        self.rx_size = rx_size
        self.comp_vector = comp_vector
        self.keepalive_interval = keepalive_interval
        self.cms: list[v.CmListener] = []
        self.conns: dict[int, RdmaConnection] = {}   # id(qp) -> connection
        self.max_events_per_cycle = 1000
        self.closing = False

    def open(self, ip: str, port: int, backlog: int) -> None:
        cm = self.backend.listen(ip, port, backlog)
        self.cms.append(cm)
        for fd in cm.fds():
            self.loop.add_reader(fd, self._on_cm, cm, fd)

    def _on_cm(self, cm: v.CmListener, fd: int) -> None:
        try:
            cm.pump(fd)
        except OSError as exc:
            log.warning("RDMA: listener %s:%s: %s", cm.bind, cm.port, exc)
        for _ in range(self.max_events_per_cycle):
            if cm not in self.cms:
                # the last event's teardown destroyed this listener (closing, and its last
                # connection gone): its channel is closed, reading it again would crash
                return
            ev = cm.get_event()
            if ev is None:
                return
            try:
                self._dispatch(ev)
            except Exception:
                log.exception("RDMA: handling CM event %d failed", ev.type)
            finally:
                ev.acknowledge()

    def _dispatch(self, ev: v.CmEvent) -> None:
        if ev.type == v.CM_CONNECT_REQUEST:
            assert ev.request is not None
            self._accept(ev.request)
            return
        conn = self.conns.get(id(ev.qp)) if ev.qp is not None else None
        if ev.type == v.CM_ESTABLISHED:
            if conn is not None:
                conn.established()
        elif ev.type in v.CM_CLOSING_EVENTS:
            if conn is not None:
                conn.on_cm_closed(ev.type)
            elif ev.qp is None and ev.type == v.CM_DISCONNECTED:
                # backend could not say which connection: probe all with a keepalive
                for c in list(self.conns.values()):
                    c.endpoint.send_fence()
                    c._after(c.endpoint.status())
        else:
            log.info("RDMA: listen channel ignore event %d", ev.type)

    def _accept(self, req: v.ConnectRequest) -> None:
        qp = None
        try:
            qp = req.create_qp(self.comp_vector)
            conn = RdmaConnection(self, qp, self.rx_size)
            conn.endpoint.post_receives()
            req.accept(qp)
        except Exception as exc:
            log.warning("RDMA: cannot accept %s: %s", req.peer_address, exc)
            try:
                req.reject()
            except OSError:
                pass
            return
        self.conns[id(qp)] = conn
        conn.start(self.accept_fn(conn))

    def forget(self, conn: RdmaConnection) -> None:
        self.conns.pop(id(conn.qp), None)
        if self.closing and not self.conns:
            self._destroy()

    def close(self) -> None:
        """Stop accepting; connections already accepted stay up (as TCP clients do), and
        the event channels they report on are destroyed after the last one is gone."""
        if self.closing:
            return
        self.closing = True
        for cm in self.cms:
            before = set(cm.fds())
            try:
                cm.stop_listening()
            except OSError as exc:
                log.warning("RDMA: closing listener: %s", exc)
            for fd in before - set(cm.fds()):
                self._unwatch(fd)
        if not self.conns:
            self._destroy()

    def abort_all(self) -> None:
        for conn in list(self.conns.values()):
            conn.abort()

    def _unwatch(self, fd: int) -> None:
        try:
            self.loop.remove_reader(fd)
        except (ValueError, OSError):
            pass

    def _destroy(self) -> None:
        for cm in self.cms:
            for fd in cm.fds():
                self._unwatch(fd)
            try:
                cm.close()
            except OSError as exc:
                log.warning("RDMA: closing listener: %s", exc)
        self.cms = []


def _int_option(spec: ListenerSpec, name: str, default: int) -> int:
    text = spec.options.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"rdma listener option {name}='{text}' is not a number") from None


def open_listener(spec: ListenerSpec, accept: AcceptFn, server: Any,
                  loop: asyncio.AbstractEventLoop) -> RdmaListener:
    """Open every bind address of ``spec`` now (synchronously); ``SetupError`` says why not."""
    cfg = getattr(server, "config", None)
    rx_size = _int_option(spec, "rx-size", int(getattr(cfg, "rdma_rx_size", RX_SIZE_DEFAULT)))
    if not RX_SIZE_MIN <= rx_size <= RX_SIZE_MAX:
        raise ValueError(f"rdma rx-size {rx_size} must be between {RX_SIZE_MIN} and "
                         f"{RX_SIZE_MAX} bytes")
    comp_vector = _int_option(spec, "comp-vector",
                              int(getattr(cfg, "rdma_completion_vector", -1)))
    keepalive = float(spec.options.get("keepalive", "3"))
    backend = v.get_backend(spec.options.get("backend"))
    binds = spec.binds or backend.default_binds()
    listener = RdmaListener(spec, backend, accept, loop, rx_size, comp_vector, keepalive)
    backlog = int(getattr(cfg, "tcp_backlog", 511))
    for raw in binds:
        optional = raw.startswith("-")
        ip = raw[1:] if optional else raw
        try:
            listener.open(ip, spec.port, backlog)
        except OSError as exc:
            if optional:
                log.warning("RDMA: optional bind address %s skipped: %s", ip, exc)
                continue
            listener.close()
            raise v.SetupError(f"Failed listening on RDMA {ip}:{spec.port}: {exc}") from None
    if not listener.cms:
        raise v.SetupError("RDMA: no bind address could be opened")
    log.info("RDMA listening on %s port %d (backend %s, rx-size %d)",
             " ".join(binds), spec.port, backend.name, rx_size)
    return listener


class RdmaConnectionType(ConnectionType):
    name = "rdma"

    async def listen(self, spec: ListenerSpec, accept: AcceptFn, server: Any) -> Listener:
        return open_listener(spec, accept, server, asyncio.get_running_loop())
