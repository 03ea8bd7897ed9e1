# Types for the compiled zsets.py's hottest paths (ZADD key score member, ZPOPMIN/ZPOPMAX):
# the client, its server and its database are C-level types (pykv/server/_core.pxd,
# pykv/storage/keyspace.pxd), as in strings.pxd; a ZADD score of plain digits is read in a
# C loop.
cimport cython

from pykv.protocol._writer cimport write_integer_reply
from pykv.server._core cimport ClientCore, ServerCore
from pykv.storage.keyspace cimport Database


@cython.locals(n=Py_ssize_t, v=cython.longlong, ch=cython.uchar)
cpdef object parse_score(bytes data)

@cython.locals(db=Database, server=ServerCore, added=cython.int)
cdef _zadd_one(ClientCore c, list argv)

@cython.locals(db=Database, n=Py_ssize_t, count=Py_ssize_t)
cdef _zpop(ClientCore c, list argv, bint pop_max)

@cython.locals(db=Database, server=ServerCore, n=Py_ssize_t, size=Py_ssize_t)
cdef list pop_items(ClientCore c, key, z, Py_ssize_t count, bint pop_max)
