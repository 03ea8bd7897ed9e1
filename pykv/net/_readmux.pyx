# cython: language_level=3
"""Client sockets read from C: one epoll set per event loop for its plain TCP/unix clients.

Through uvloop a read costs a Python-level protocol callback run in a context, with a new
``bytes`` object for the data: ~1.9k instructions per request at ``redis-benchmark -P 1``,
more than the parser and the command together. Here the loop watches one epoll descriptor
instead of each client socket. When it is readable, ``ReadMux`` takes the ready sockets
in one callback and for each does what Redis's ``readQueryFromClient`` does: one
``recv()`` into a buffer shared by all of them, then a C call of its ``ReadTarget``
(the client, which parses and runs the commands and sends the replies).

Only reading moves here. The transport keeps the socket, its writes, its close and its
errors: when a socket reports EOF or an error, it leaves the epoll set and its transport
reads again (``release``), meets the same EOF or error and handles it as it always did.
An exception out of ``read_ready`` goes to ``fault``, as uvloop handles one out of
``data_received``. Linux only (``pykv.net.stream`` falls back to the transport's reads).

A transport that reads its descriptors itself registers them with ``watch``: the RDMA
endpoint's completion channel and fabric fds (``pykv.net.rdma``). They are served in the
same callback, by a C call of their ``FdTarget.fd_ready``, instead of a loop callback
each (~900 instructions of uvloop's per event: the handle, the call, the GIL).
"""
from cpython.ref cimport Py_DECREF, Py_INCREF, PyObject
from libc.errno cimport EAGAIN, EEXIST, EINTR, errno
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memset

from pykv.util._byteio cimport FdTarget, ReadTarget


cdef extern from "<sys/epoll.h>" nogil:
    ctypedef union epoll_data_t:
        void *ptr
        int fd
    struct epoll_event:
        unsigned int events
        epoll_data_t data
    int epoll_create1(int flags)
    int epoll_ctl(int epfd, int op, int fd, epoll_event *event)
    int epoll_wait(int epfd, epoll_event *events, int maxevents, int timeout)
    enum:
        EPOLL_CTL_ADD
        EPOLL_CTL_DEL
        EPOLLIN
        EPOLL_CLOEXEC

cdef extern from "<sys/socket.h>" nogil:
    ssize_t recv(int fd, void *buf, size_t n, int flags)
    enum:
        MSG_DONTWAIT

cdef extern from "<unistd.h>" nogil:
    int close(int fd)


cdef enum:
    READ_SIZE = 262144  # per recv, as uvloop reads (Redis: 16 KB, more for a big argument)
    MAX_EVENTS = 128  # sockets served per callback; the rest are still ready at the next


cdef class _Slot:
    """A registered descriptor: who it is read for, and the transport's hooks."""
    cdef object target  # the ReadTarget or FdTarget it was registered for
    cdef ReadTarget reader  # a socket: recv() here, then its read_ready (else None)
    cdef FdTarget watcher  # any other fd: its fd_ready reads it (else None)
    cdef object release  # EOF or an error: the transport reads (and closes) from now on
    cdef object fault  # called with an exception read_ready/fd_ready raised
    cdef bint watched  # in the epoll set (not while paused)


cdef class ReadMux:
    """One event loop's epoll set of client sockets (see the module docstring)."""

    cdef int epfd
    cdef object loop
    cdef char *buf
    cdef PyObject **slots  # by fd: a _Slot (a reference held) or NULL
    cdef int nslots
    cdef epoll_event events[MAX_EVENTS]

    def __cinit__(self, loop):
        self.epfd = -1
        self.epfd = epoll_create1(EPOLL_CLOEXEC)
        if self.epfd < 0:
            raise OSError(errno, "epoll_create1")
        self.buf = <char *>malloc(READ_SIZE)
        if self.buf == NULL:
            raise MemoryError()
        self.loop = loop
        loop.add_reader(self.epfd, self._ready)

    def __dealloc__(self):
        self._free()

    cdef void _free(self) noexcept:
        cdef int fd
        if self.slots != NULL:
            for fd in range(self.nslots):
                if self.slots[fd] != NULL:
                    Py_DECREF(<object>self.slots[fd])
            free(self.slots)
            self.slots = NULL
            self.nslots = 0
        if self.buf != NULL:
            free(self.buf)
            self.buf = NULL
        if self.epfd >= 0:
            close(self.epfd)
            self.epfd = -1

    def add(self, int fd, ReadTarget target not None, release, fault) -> None:
        """Read socket ``fd`` for ``target`` from now on (its transport must not read)."""
        cdef _Slot slot = _Slot.__new__(_Slot)
        slot.reader, slot.release = target, release
        self._add(fd, target, slot, fault)

    def watch(self, int fd, FdTarget target not None, fault) -> None:
        """Call ``target.fd_ready(fd)`` whenever ``fd`` is readable (``remove`` stops it):
        for a transport that reads its descriptors itself, so that they are served in the
        same callback as the sockets instead of one loop callback each."""
        cdef _Slot slot = _Slot.__new__(_Slot)
        slot.watcher = target
        self._add(fd, target, slot, fault)

    cdef int _add(self, int fd, object target, _Slot slot, object fault) except -1:
        cdef int n
        cdef PyObject **grown
        if fd < 0 or self.epfd < 0:
            raise ValueError("no descriptor or no epoll set")
        if fd >= self.nslots:
            n = max(fd + 1, 2 * self.nslots, 64)
            grown = <PyObject **>realloc(self.slots, n * sizeof(PyObject *))
            if grown == NULL:
                raise MemoryError()
            memset(grown + self.nslots, 0, (n - self.nslots) * sizeof(PyObject *))
            self.slots, self.nslots = grown, n
        slot.target, slot.fault = target, fault
        # a slot left for this number belongs to a socket closed since (closing an fd
        # takes it out of every epoll set): the new one replaces it
        self._forget(fd)
        self._watch(fd, slot)
        Py_INCREF(slot)
        self.slots[fd] = <PyObject *>slot
        return 0

    def remove(self, int fd, target) -> None:
        """Stop reading ``fd`` for ``target`` (a no-op if it was not, or is someone else's:
        the number may already be a newer socket's)."""
        cdef _Slot slot = self._slot(fd, target)
        if slot is not None:
            if slot.watched:
                epoll_ctl(self.epfd, EPOLL_CTL_DEL, fd, NULL)  # (EBADF if closed: fine)
            self._forget(fd)

    def pause(self, int fd, ReadTarget target) -> None:
        """Leave ``fd`` unread (its bytes wait in the kernel) until ``resume``."""
        cdef _Slot slot = self._slot(fd, target)
        if slot is not None and slot.watched:
            epoll_ctl(self.epfd, EPOLL_CTL_DEL, fd, NULL)
            slot.watched = False

    def resume(self, int fd, ReadTarget target) -> None:
        cdef _Slot slot = self._slot(fd, target)
        if slot is not None and not slot.watched:
            self._watch(fd, slot)

    def registered(self) -> int:
        """How many sockets are read here (for tests)."""
        cdef int fd, count = 0
        for fd in range(self.nslots):
            count += self.slots[fd] != NULL
        return count

    cdef _Slot _slot(self, int fd, object target):
        if 0 <= fd < self.nslots and self.slots[fd] != NULL:
            if (<_Slot>self.slots[fd]).target is target:
                return <_Slot>self.slots[fd]
        return None

    cdef int _watch(self, int fd, _Slot slot) except -1:
        cdef epoll_event ev
        ev.events = EPOLLIN
        ev.data.fd = fd
        if epoll_ctl(self.epfd, EPOLL_CTL_ADD, fd, &ev) < 0 and errno != EEXIST:
            raise OSError(errno, "epoll_ctl")
        slot.watched = True
        return 0

    cdef void _forget(self, int fd) noexcept:
        cdef PyObject *old = self.slots[fd]
        if old != NULL:
            self.slots[fd] = NULL
            Py_DECREF(<object>old)

    def _ready(self):
        """The loop's callback: serve every ready socket once (level-triggered: a socket
        with more to read, or one past MAX_EVENTS, is ready again at the next one)."""
        cdef int n, i, fd
        cdef ssize_t got
        cdef _Slot slot
        if self.epfd < 0:
            return
        n = epoll_wait(self.epfd, self.events, MAX_EVENTS, 0)
        for i in range(n):
            fd = self.events[i].data.fd
            # (a socket served before this one may have closed this one: no slot then)
            if fd >= self.nslots or self.slots[fd] == NULL:
                continue
            slot = <_Slot>self.slots[fd]  # (a reference: the slot outlives a remove)
            if slot.reader is None:
                try:
                    slot.watcher.fd_ready(fd)
                except Exception as exc:
                    self.remove(fd, slot.target)
                    slot.fault(exc)
                continue
            got = recv(fd, self.buf, READ_SIZE, MSG_DONTWAIT)
            if got > 0:
                try:
                    slot.reader.read_ready(self.buf, got)
                except Exception as exc:
                    self.remove(fd, slot.target)
                    slot.fault(exc)
            elif got == 0 or (errno != EAGAIN and errno != EINTR):
                self.remove(fd, slot.target)
                slot.release()


_muxes: dict = {}


def read_mux(loop):
    """The ReadMux of ``loop`` (made at the first call), or None where there is none to be
    had (a loop without add_reader, or no epoll)."""
    mux = _muxes.get(loop)
    if mux is None:
        for old in [lp for lp in _muxes if lp.is_closed()]:  # (servers of ended loops)
            (<ReadMux>_muxes.pop(old))._free()
        try:
            mux = ReadMux(loop)
        except (OSError, NotImplementedError, AttributeError):
            return None
        _muxes[loop] = mux
    return mux
