# Types for the compiled strings.py's hottest paths (GET, SET key value, INCR/DECR, MSET):
# the client, its server and its database are C-level types (pykv/server/_core.pxd,
# pykv/storage/keyspace.pxd), so reading ``c.db``/``c.server``, counting ``dirty`` and the
# keyspace hits, and the lookups and writes are C struct accesses and C calls; INCR's
# arithmetic and integer reply are C calls into _counter.pyx.
cimport cython

from pykv.commands._counter cimport counter_add, write_integer
from pykv.protocol._parser cimport string2ll
from pykv.server._core cimport ClientCore, ServerCore
from pykv.storage.keyspace cimport Database


@cython.locals(db=Database, server=ServerCore)
cdef _get(ClientCore c, key)

@cython.locals(db=Database, server=ServerCore)
cdef _set_plain(ClientCore c, key, value)

@cython.locals(db=Database, server=ServerCore)
cdef _incr_command(ClientCore c, key, long long delta)

@cython.locals(db=Database, server=ServerCore, i=Py_ssize_t, n=Py_ssize_t)
cdef _mset(ClientCore c, list argv)
