# Types for the compiled hashes.py's hottest path (HSET/HMSET): the client, its server and
# its database are C-level types (pykv/server/_core.pxd, pykv/storage/keyspace.pxd), as in
# strings.pxd.
cimport cython

from pykv.server._core cimport ClientCore, ServerCore
from pykv.storage.keyspace cimport Database


@cython.locals(db=Database, server=ServerCore, n=Py_ssize_t)
cdef _hset(ClientCore c, list argv, name)
