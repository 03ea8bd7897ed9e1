# The reply writer's C interface, for the dispatcher (pykv/server/_core.pyx).
cpdef void write_reply(bytearray out, object v, int resp) except *
cdef void append_encoded(bytearray out, bytearray data) except *
