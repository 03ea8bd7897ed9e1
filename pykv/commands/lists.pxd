# Types for the compiled lists.py's hottest paths (LPUSH/RPUSH and the plain LPOP/RPOP):
# the client, its server and its database are C-level types (pykv/server/_core.pxd,
# pykv/storage/keyspace.pxd), so ``c.db``/``c.server``, ``dirty`` and the keyspace lookup
# and write signals are struct reads and C calls, as in strings.pxd; a push's new length is
# written into the output buffer by a C call (the reply writer's).
cimport cython

from pykv.protocol._writer cimport write_integer_reply
from pykv.server._core cimport ClientCore, ServerCore
from pykv.storage.keyspace cimport Database


@cython.locals(db=Database, server=ServerCore)
cdef _removed(ClientCore c, key, value, bint left, Py_ssize_t count)

@cython.locals(db=Database, server=ServerCore, length=Py_ssize_t)
cdef _push(ClientCore c, list argv, bint left, bint only_existing)

cdef _add(items, list argv, bint left)

@cython.locals(db=Database)
cdef _pop(ClientCore c, list argv, bint left)
