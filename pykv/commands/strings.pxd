# Types for the compiled strings.py's hottest paths (GET, SET key value, INCR/DECR, MSET):
# the client, its server and its database are C-level types (pykv/server/_core.pxd,
# pykv/storage/keyspace.pxd), so reading ``c.db``/``c.server``, counting ``dirty`` and the
# keyspace hits, and the lookups and writes are C struct accesses and C calls; INCR's
# arithmetic (_counter.pyx) and its in-place integer reply (the reply writer) are C calls.
cimport cython

from pykv.commands._counter cimport counter_add
from pykv.protocol._parser cimport string2ll
from pykv.protocol._writer cimport write_integer_text
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
