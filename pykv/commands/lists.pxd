# Types for the compiled lists.py's hottest paths (LPUSH/RPUSH and the plain LPOP/RPOP):
# the client, its server and its database are C-level types (pykv/server/_core.pxd,
# pykv/storage/keyspace.pxd), so ``c.db``/``c.server``, ``dirty`` and the keyspace lookup
# and write signals are struct reads and C calls, as in strings.pxd.
cimport cython

from pykv.server._core cimport ClientCore, ServerCore
from pykv.storage.keyspace cimport Database


@cython.locals(db=Database, server=ServerCore)
cdef _removed(ClientCore c, key, value, bint left, Py_ssize_t count)

@cython.locals(db=Database, server=ServerCore)
cdef _push(ClientCore c, key, list elements, bint left, bint only_existing)

@cython.locals(db=Database)
cdef _pop(ClientCore c, list argv, bint left)
