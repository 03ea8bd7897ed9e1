# Types for the compiled pubsub.py's delivery loop: the server and each subscriber are
# C-level types (pykv/server/_core.pxd), so their fields are struct reads, the output-limit fast
# test (obuf_may_be_over) inline C and the reply writer a C call.
cimport cython

from pykv.server._core cimport ClientCore, ServerCore, obuf_may_be_over
from pykv.protocol._writer cimport append_encoded, write_reply


@cython.locals(client=ClientCore, resp=int, encoded=list)
cdef _fan_out(ServerCore server, dict clients, message)

cdef _deliver(ServerCore server, ClientCore client, bytearray data)

cdef bytearray _encode(message, int resp)
