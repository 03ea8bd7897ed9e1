# Types for the compiled connection.py's PING (the ping_inline/ping_mbulk benchmarks): the
# client is a C-level ClientCore (pykv/server/_core.pxd), so its protocol version and
# subscription sets are C struct reads instead of attribute lookups on an object with a
# __dict__ (~600 instructions a PING).
from pykv.server._core cimport ClientCore


cdef _ping(ClientCore c, list argv)
