# The reply writer's C interface, for the dispatcher (pykv/server/_core.pyx).
cpdef void write_reply(bytearray out, object v, int resp) except *
# integer replies written in place by compiled commands (INCR, LPUSH/RPUSH: no int object)
cpdef int write_integer_reply(bytearray out, long long value) except -1
cpdef int write_integer_text(bytearray out, bytes digits) except -1
# replies already encoded: a fixed reply (EXEC's QUEUED, headers), and a message encoded
# once, appended to each subscriber (PUBLISH)
cdef void append_raw(bytearray out, bytes data) except *
cdef void append_encoded(bytearray out, bytearray data) except *
