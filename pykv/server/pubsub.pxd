# Types for the compiled pubsub.py's delivery loop: the server and each subscriber are
# C-level types (pykv/server/_core.pxd), so their fields are struct reads and
# ``defer_flush`` a C call.
cimport cython

from pykv.server._core cimport ClientCore, ServerCore


@cython.locals(client=ClientCore, resp=int, encoded=list)
cdef _fan_out(ServerCore server, dict clients, message)

cdef _deliver(ServerCore server, ClientCore client, message, data)
