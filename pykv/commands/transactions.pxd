# Types for the compiled transactions.py: MULTI and EXEC read and write the client's
# transaction state (pykv/server/_core.pxd) as C fields and call its C methods.
from pykv.server._core cimport ClientCore


cdef _multi(ClientCore c)

cdef _exec(ClientCore c)

cdef _watches(ClientCore c)
