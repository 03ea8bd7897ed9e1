# cython: language_level=3
"""The append-only file's command buffer, fed by the dispatcher for every write.

``pykv.storage.aof.AppendOnlyFile`` adds the files around it. It is compiled on its own
(not in the dispatcher's module) so the storage layer owns it: the dispatcher only calls
``feed`` on whatever the server's ``aof`` is.
"""
from pykv.protocol._writer cimport write_reply


cdef class AofFeedCore:
    """The append-only file's command buffer (``pykv.storage.aof.AppendOnlyFile`` adds the
    files): ``feed`` runs for every write command while the AOF is on."""

    cdef public bytearray buf
    cdef public int current_db
    cdef public long long fed  # commands fed so far (EXEC wrapping counts its own)

    cpdef feed(self, int db_id, list argv):
        """Append ``argv`` as a RESP command, after a SELECT when the database changes
        (a list of bulk strings is exactly a RESP command)."""
        if db_id != self.current_db:
            write_reply(self.buf, [b"SELECT", b"%d" % db_id], 2)
            self.current_db = db_id
        write_reply(self.buf, argv, 2)
        self.fed += 1
