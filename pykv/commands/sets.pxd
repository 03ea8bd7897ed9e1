# Types for the compiled sets.py's hottest paths (SADD, the plain SPOP): the client, its
# server and its database are C-level types (pykv/server/_core.pxd,
# pykv/storage/keyspace.pxd), as in strings.pxd; SADD's count is written into the output
# buffer by a C call (the reply writer's).
cimport cython

from pykv.protocol._writer cimport write_integer_reply
from pykv.server._core cimport ClientCore, ServerCore
from pykv.storage.keyspace cimport Database


@cython.locals(db=Database, server=ServerCore, added=Py_ssize_t)
cdef _sadd(ClientCore c, list argv)

@cython.locals(db=Database, server=ServerCore)
cdef _spop_one(ClientCore c, key)
