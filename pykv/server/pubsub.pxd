# Types for the compiled pubsub.py's delivery loop: the server and each subscriber are
# C-level types (pykv/server/_core.pxd), so their fields are struct reads, ``output_limit_closed``
# and the reply writer C calls.
cimport cython

from pykv.server._core cimport ClientCore, ServerCore
from pykv.protocol._writer cimport write_reply


@cython.locals(client=ClientCore, resp=int, encoded=list)
cdef _fan_out(ServerCore server, dict clients, message)

cdef _deliver(ServerCore server, ClientCore client, message, data)

cdef bytearray _encode(message, int resp)
