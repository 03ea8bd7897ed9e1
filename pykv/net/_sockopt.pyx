# cython: language_level=3
"""Socket options set in C on a connection's descriptor, at every accepted connection.

Through a Python socket (uvloop's PseudoSocket makes a new ``socket.socket`` for each
``setsockopt``; a ``dup``-ed one costs a descriptor as well) the options of one connection
cost more than a thousand requests' worth of parsing; here they are plain system calls.
"""
cdef extern from "<sys/socket.h>" nogil:
    ctypedef unsigned int socklen_t
    int setsockopt(int fd, int level, int name, const void *value, socklen_t size)
    enum:
        SOL_SOCKET
        SO_KEEPALIVE

cdef extern from "<netinet/in.h>" nogil:
    enum:
        IPPROTO_TCP

cdef extern from "<netinet/tcp.h>" nogil:
    enum:
        TCP_NODELAY
        TCP_KEEPIDLE
        TCP_KEEPINTVL
        TCP_KEEPCNT


cdef inline bint _set(int fd, int level, int name, int value) noexcept:
    return setsockopt(fd, level, name, &value, sizeof(value)) == 0


def set_nodelay(int fd) -> bool:
    """TCP_NODELAY on ``fd``; False if the option could not be set (not TCP, closed)."""
    return fd >= 0 and _set(fd, IPPROTO_TCP, TCP_NODELAY, 1)


def set_keepalive(int fd, int interval) -> bool:
    """Redis's ``anetKeepAlive``: probes after ``interval`` s idle, then every interval/3
    s, 3 of them before the connection is dropped. False if an option could not be set."""
    if fd < 0:
        return False
    return (_set(fd, SOL_SOCKET, SO_KEEPALIVE, 1)
            and _set(fd, IPPROTO_TCP, TCP_KEEPIDLE, interval)
            and _set(fd, IPPROTO_TCP, TCP_KEEPINTVL, max(1, interval // 3))
            and _set(fd, IPPROTO_TCP, TCP_KEEPCNT, 3))
