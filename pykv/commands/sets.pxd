# Types for the compiled sets.py's hottest paths (SADD, the plain SPOP): the client, its
# server and its database are C-level types (pykv/server/_core.pxd,
# pykv/storage/keyspace.pxd), as in strings.pxd; SADD's count is written into the output
# buffer by a C call (the reply writer's).
cimport cython

from pykv.protocol._writer cimport write_integer_reply
from pykv.server._core cimport ClientCore, ServerCore
from pykv.storage.keyspace cimport Database


# (a C call of the database's cpdef get: SPOP/SMEMBERS/SISMEMBER... on every call)
cpdef get_set(Database db, key)

@cython.locals(db=Database, server=ServerCore, added=Py_ssize_t)
cdef _sadd(ClientCore c, list argv)

@cython.locals(db=Database, server=ServerCore)
cdef _spop_one(ClientCore c, key)
