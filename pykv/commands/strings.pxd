# Types for the compiled strings.py's hottest paths (GET, SET key value, INCR/DECR): the
# database is a C-level Database, so its lookups and writes are C calls, not method calls.
cimport cython

from pykv.protocol._parser cimport ll2bytes, string2ll
from pykv.storage.keyspace cimport Database


@cython.locals(db=Database)
cdef _get(c, key)

@cython.locals(db=Database)
cdef _set_plain(c, key, value)

@cython.locals(db=Database)
cdef _incr_command(c, key, delta)
