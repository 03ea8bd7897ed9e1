# cython: language_level=3
"""A stream macro node's entries packed in one buffer: Redis 7.0's stream listpack, byte
for byte.

The buffer is a listpack (the element codec is _listpack.pxd's) holding the master entry
(live count, deleted count, the master field count, the master field names, a 0) and then,
per entry, its flags, the ms and seq deltas from the node's master ID, either the values
alone (SAMEFIELDS: the master's field names) or the field count and field/value pairs, and
the entry's element count (lp-count). So the node's listpack size is the buffer's length,
RDB writes the buffer as it is, and a loaded node keeps the loaded buffer. Entries are
decoded on demand into ``((ms, seq), flat)`` pairs, ``flat`` a tuple of field/value bytes.
Deleted entries stay, flagged, until the node empties (XDEL marks them in place).
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.ref cimport Py_INCREF
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memmove

from pykv.protocol._parser cimport parse_ll
from pykv.storage._listpack cimport (_encode, _encode_int, _entry_bytes, _entry_size,
                                     _int_value, _is_int_entry, _prev_offset, _str_data)

DEF HEADER = 6
cdef enum:
    FLAG_DELETED = 1
    FLAG_SAMEFIELDS = 2


cdef inline Py_ssize_t _total(const unsigned char *lp) noexcept:
    return lp[0] | (lp[1] << 8) | (lp[2] << 16) | (<Py_ssize_t>lp[3] << 24)


cdef inline void _set_total(unsigned char *lp, Py_ssize_t total) noexcept:
    lp[0] = total & 0xFF
    lp[1] = (total >> 8) & 0xFF
    lp[2] = (total >> 16) & 0xFF
    lp[3] = (total >> 24) & 0xFF


cdef inline void _add_count(unsigned char *lp, Py_ssize_t n) noexcept:
    """``n`` elements appended: the header's element count, saturating at 65535."""
    cdef Py_ssize_t c = lp[4] | (lp[5] << 8)
    if c < 65535:
        c += n
        if c > 65535:
            c = 65535
        lp[4] = c & 0xFF
        lp[5] = (c >> 8) & 0xFF


cdef inline int _get_int(const unsigned char *p, long long *v) except -1:
    """The integer element at ``p`` (a string that parses as one counts, as Redis's
    ``lpGetIntegerIfValid``)."""
    cdef Py_ssize_t n
    cdef const unsigned char *data
    if _is_int_entry(p):
        v[0] = _int_value(p)
        return 0
    data = _str_data(p, &n)
    if not parse_ll(<const char *>data, n, v):
        raise ValueError("stream listpack element is not an integer")
    return 0


cdef inline int _next_int(const unsigned char *lp, Py_ssize_t *off, long long *v) except -1:
    """The integer element at ``*off``, stepping ``*off`` past it (7-bit ones, the usual
    flags, small deltas and lp-counts, without the general decoding)."""
    cdef unsigned char b = lp[off[0]]
    if b < 0x80:
        v[0] = b
        off[0] += 2
        return 0
    _get_int(lp + off[0], v)
    off[0] += _entry_size(lp + off[0])
    return 0


cdef inline bint _below(uint64_t ms, uint64_t seq, uint64_t ms2, uint64_t seq2) noexcept:
    return ms < ms2 or (ms == ms2 and seq < seq2)


cdef class StreamNode:
    """One macro node: its master ID and field names, and the listpack of its entries."""

    def __cinit__(self):
        self.lp = NULL
        self.cap = 0
        self.hint = 0

    def __dealloc__(self):
        PyMem_Free(self.lp)

    def __init__(self, tuple master, tuple fields, Py_ssize_t prealloc=0):
        """An empty node (counts 0) whose master entry names ``fields``."""
        cdef Py_ssize_t need = HEADER + 1 + 40, off
        cdef bytes f
        for f in fields:
            need += PyBytes_GET_SIZE(f) + 11
        self.master = master
        self.mms = master[0]
        self.mseq = master[1]
        self.fields = fields
        self.cap = max(need, prealloc)
        self.lp = <unsigned char *>PyMem_Malloc(self.cap)
        if self.lp == NULL:
            raise MemoryError()
        off = HEADER
        off += _encode_int(self.lp + off, 0)
        off += _encode_int(self.lp + off, 0)
        off += _encode_int(self.lp + off, len(fields))
        for f in fields:
            off += _encode(self.lp + off, PyBytes_AS_STRING(f), PyBytes_GET_SIZE(f))
        off += _encode_int(self.lp + off, 0)
        self.first = off
        self.lp[off] = 0xFF
        _set_total(self.lp, off + 1)
        self.lp[4] = 0
        self.lp[5] = 0
        _add_count(self.lp, len(fields) + 4)

    @staticmethod
    def from_blob(tuple master, tuple fields, bytes blob, Py_ssize_t live, Py_ssize_t dead):
        """A node over a copy of ``blob``, a checked stream listpack with ``fields`` as its
        master fields and ``live``/``dead`` as its counts (RDB load)."""
        cdef Py_ssize_t n = PyBytes_GET_SIZE(blob)
        cdef const unsigned char *src = <const unsigned char *>PyBytes_AS_STRING(blob)
        if n < HEADER + 1 or _total(src) != n:
            raise ValueError("not a listpack")
        return _node_over(master, fields, src, live, dead)

    # -- the buffer ------------------------------------------------------------------------
    cpdef Py_ssize_t lp_bytes(self):
        """The listpack's size in bytes (what Redis's node takes, XINFO and RDB report)."""
        return _total(self.lp)

    def blob(self):
        """The node's listpack as ``bytes`` (what RDB writes)."""
        return PyBytes_FromStringAndSize(<const char *>self.lp, _total(self.lp))

    cdef int _reserve(self, Py_ssize_t extra) except -1:
        """Room for ``extra`` more bytes, growing by half again at least (the last node is
        the one growing; ``shrink`` gives the slack back once it is full)."""
        cdef Py_ssize_t need = _total(self.lp) + extra, cap
        cdef unsigned char *p
        if need <= self.cap:
            return 0
        cap = self.cap + (self.cap >> 1)
        if cap < need:
            cap = need
        p = <unsigned char *>PyMem_Realloc(self.lp, cap)
        if p == NULL:
            raise MemoryError()
        self.lp = p
        self.cap = cap
        return 0

    cpdef shrink(self):
        """Drop the spare room (the node will not grow again: a newer one took over)."""
        cdef Py_ssize_t total = _total(self.lp)
        cdef unsigned char *p
        if self.cap > total:
            p = <unsigned char *>PyMem_Realloc(self.lp, total)
            if p != NULL:
                self.lp = p
                self.cap = total

    cdef int _replace_int(self, Py_ssize_t off, long long value) except -1:
        """The integer element at ``off`` (before the entries) replaced by ``value``."""
        cdef unsigned char buf[12]
        cdef Py_ssize_t n = _encode_int(buf, value)
        cdef Py_ssize_t old = _entry_size(self.lp + off), total
        if n != old:
            total = _total(self.lp)
            if n > old:
                self._reserve(n - old)
            memmove(self.lp + off + n, self.lp + off + old, total - off - old)
            _set_total(self.lp, total + n - old)
            self.first += n - old
        memcpy(self.lp + off, buf, n)
        return 0

    cdef int _set_counts(self, Py_ssize_t live, Py_ssize_t dead) except -1:
        if live != self.live:
            self._replace_int(HEADER, live)
            self.live = live
        if dead != self.dead:
            self._replace_int(HEADER + _entry_size(self.lp + HEADER), dead)
            self.dead = dead
        return 0

    # -- adding ----------------------------------------------------------------------------
    @cython.boundscheck(False)
    @cython.wraparound(False)
    cpdef append(self, tuple sid, tuple flat, int flags=-1):
        """Append an entry; ``flags`` -1: SAMEFIELDS when its field names are the master's."""
        cdef Py_ssize_t nflat = len(flat), nfields = nflat // 2, i, need, off, count
        cdef tuple fields = self.fields
        cdef uint64_t ms = sid[0], seq = sid[1]
        cdef bint same
        cdef object item, f
        cdef unsigned char *lp
        if flags < 0:
            same = len(fields) == nfields
            if same:
                for i in range(nfields):
                    item = flat[2 * i]
                    f = fields[i]
                    if item is not f and <bytes>item != <bytes>f:
                        same = False
                        break
            flags = FLAG_SAMEFIELDS if same else 0
        need = 60
        for item in flat:
            need += PyBytes_GET_SIZE(<bytes>item) + 11
        self._reserve(need)
        lp = self.lp
        off = _total(lp) - 1
        off += _encode_int(lp + off, flags)
        off += _encode_int(lp + off, <int64_t>(ms - self.mms))
        off += _encode_int(lp + off, <int64_t>(seq - self.mseq))
        if flags & FLAG_SAMEFIELDS:
            for i in range(1, nflat, 2):
                item = flat[i]
                off += _encode(lp + off, PyBytes_AS_STRING(<bytes>item),
                               PyBytes_GET_SIZE(<bytes>item))
            count = nfields + 3
        else:
            off += _encode_int(lp + off, nfields)
            for i in range(nflat):
                item = flat[i]
                off += _encode(lp + off, PyBytes_AS_STRING(<bytes>item),
                               PyBytes_GET_SIZE(<bytes>item))
            count = nflat + 4
        off += _encode_int(lp + off, count)
        lp[off] = 0xFF
        _set_total(lp, off + 1)
        _add_count(lp, count + 1)
        if flags & FLAG_DELETED:
            self._set_counts(self.live, self.dead + 1)
        else:
            self._set_counts(self.live + 1, self.dead)

    # -- reading ---------------------------------------------------------------------------
    cdef int _scan(self, Py_ssize_t off, Entry *e) except -1:
        """The entry at ``off``: its flags, ID, field count and where its fields and the
        next entry start."""
        cdef const unsigned char *lp = self.lp
        cdef long long v
        cdef Py_ssize_t n, i
        e.off = off
        _next_int(lp, &off, &e.flags)
        _next_int(lp, &off, &v)
        e.ms = self.mms + <uint64_t>v
        _next_int(lp, &off, &v)
        e.seq = self.mseq + <uint64_t>v
        if e.flags & FLAG_SAMEFIELDS:
            e.nfields = len(self.fields)
            n = e.nfields
        else:
            _next_int(lp, &off, &v)
            e.nfields = v
            n = 2 * v
        e.body = off
        for i in range(n):
            off += _entry_size(lp + off)
        e.next = off + _entry_size(lp + off)  # past the lp-count
        return 0

    cdef Py_ssize_t _before(self, Py_ssize_t off) except -1:
        """The offset of the entry ending where ``off`` starts (walking back over the
        back-lengths: its lp-count, then as many elements as that says)."""
        cdef long long count
        cdef Py_ssize_t i
        off = _prev_offset(self.lp, off)
        _get_int(self.lp + off, &count)
        for i in range(count):
            off = _prev_offset(self.lp, off)
        return off

    cdef object _values(self, Entry *e, bint as_list):
        """The entry's field/value tuple or list (the master's field-name objects for
        SAMEFIELDS)."""
        cdef Py_ssize_t n = e.nfields, i, off = e.body
        cdef object seq = PyList_New(2 * n) if as_list else PyTuple_New(2 * n)
        cdef object item
        for i in range(2 * n):
            if e.flags & FLAG_SAMEFIELDS and not i & 1:
                item = self.fields[i >> 1]
            else:
                item = _entry_bytes(self.lp + off)
                off += _entry_size(self.lp + off)
            Py_INCREF(item)
            if as_list:
                PyList_SET_ITEM(<list>seq, i, item)
            else:
                PyTuple_SET_ITEM(<tuple>seq, i, item)
        return seq

    cdef tuple _flat(self, Entry *e):
        return <tuple>self._values(e, False)

    cdef list _reply(self, Entry *e):
        """The entry as XRANGE replies it: ``[b"ms-seq", [field, value, ...]]``."""
        return [pykv_format_id(e.ms, e.seq), self._values(e, True)]

    cdef object _item(self, Entry *e, int form):
        """What a range walk hands out for an entry: ``(id, flat)`` (form 0), its reply
        (1), or ``(id, reply)`` (2: XREADGROUP, which updates the PEL by ID)."""
        if form == 1:
            return self._reply(e)
        if form == 2:
            return (e.ms, e.seq), self._reply(e)
        return (e.ms, e.seq), self._flat(e)

    cdef int forward(self, uint64_t sms, uint64_t sseq, bint bounded, uint64_t ems,
                     uint64_t eseq, Py_ssize_t count, list out, int form=0) except -1:
        """Live entries from ``(sms, sseq)`` on appended to ``out`` in the ``form`` of
        ``_item``; 1 once an entry is past ``(ems, eseq)`` (when ``bounded``) or ``out``
        holds ``count``.

        A linear walk, as Redis's, but from where the last one stopped when ``start`` is
        above that point's ID (XREADGROUP's next batch), rather than from the first entry."""
        cdef Py_ssize_t off = self.first, end = _total(self.lp) - 1
        cdef bint walked = False
        cdef Entry e
        if self.hint and _below(self.hint_ms, self.hint_seq, sms, sseq):
            off += self.hint
        while off < end:
            walked = True
            self._scan(off, &e)
            off = e.next
            if _below(e.ms, e.seq, sms, sseq):
                continue
            if bounded and _below(ems, eseq, e.ms, e.seq):
                return 1
            if not e.flags & FLAG_DELETED:
                out.append(self._item(&e, form))
                if count and len(out) >= count:
                    self.hint = off - self.first
                    self.hint_ms = e.ms
                    self.hint_seq = e.seq
                    return 1
        if walked:  # e: the last entry
            self.hint = off - self.first
            self.hint_ms = e.ms
            self.hint_seq = e.seq
        return 0

    def range_into(self, tuple start, tuple end, Py_ssize_t count, list out, bint rev=False,
                   int form=0):
        """Live entries with ``start <= id <= end`` appended to ``out`` (descending when
        ``rev``, in the ``form`` of ``_item``); True once the walk is done (past the bound,
        or ``count`` reached)."""
        cdef uint64_t sms = start[0], sseq = start[1], ems = end[0], eseq = end[1]
        cdef Py_ssize_t off = _total(self.lp) - 1
        cdef Entry e
        if not rev:
            return self.forward(sms, sseq, True, ems, eseq, count, out, form) == 1
        while off > self.first:
            off = self._before(off)
            self._scan(off, &e)
            if _below(ems, eseq, e.ms, e.seq):
                continue
            if _below(e.ms, e.seq, sms, sseq):
                return True
            if not e.flags & FLAG_DELETED:
                out.append(self._item(&e, form))
                if count and len(out) >= count:
                    return True
        return False

    def find(self, tuple sid):
        """The offset of the entry (live or deleted) with ID ``sid``, or -1: a linear scan,
        as Redis's."""
        cdef uint64_t ms = sid[0], seq = sid[1]
        cdef Py_ssize_t off = self.first, end = _total(self.lp) - 1
        cdef Entry e
        while off < end:
            self._scan(off, &e)
            if e.ms == ms and e.seq == seq:
                return off
            if _below(ms, seq, e.ms, e.seq):
                return -1
            off = e.next
        return -1

    def entry_at(self, Py_ssize_t off):
        """``(id, flat, flags)`` of the entry at ``off``."""
        cdef Entry e
        self._scan(off, &e)
        return (e.ms, e.seq), self._flat(&e), e.flags

    def entries(self):
        """Every entry, deleted ones too, as ``(id, flat, flags)``."""
        cdef Py_ssize_t off = self.first, end = _total(self.lp) - 1
        cdef list out = []
        cdef Entry e
        while off < end:
            self._scan(off, &e)
            out.append(((e.ms, e.seq), self._flat(&e), e.flags))
            off = e.next
        return out

    @property
    def ids(self):
        """Every entry's ID, deleted ones too."""
        return [entry[0] for entry in self.entries()]

    def edge_id(self, bint last, bint live_only=True):
        """The first (or ``last``) entry's ID, of live entries only unless ``live_only`` is
        false; None when there is none."""
        cdef Py_ssize_t off, end = _total(self.lp) - 1
        cdef Entry e
        if last:
            off = end
            while off > self.first:
                off = self._before(off)
                self._scan(off, &e)
                if not (live_only and e.flags & FLAG_DELETED):
                    return (e.ms, e.seq)
            return None
        off = self.first
        while off < end:
            self._scan(off, &e)
            if not (live_only and e.flags & FLAG_DELETED):
                return (e.ms, e.seq)
            off = e.next
        return None

    # -- deleting --------------------------------------------------------------------------
    def mark_deleted(self, Py_ssize_t off):
        """Flag the entry at ``off`` deleted in place (its flags stay a one-byte integer) and
        update the master counts; False when it already was."""
        cdef Entry e
        self._scan(off, &e)
        if e.flags & FLAG_DELETED:
            return False
        self._replace_entry_flags(&e, e.flags | FLAG_DELETED)
        self._set_counts(self.live - 1, self.dead + 1)
        return True

    cdef Py_ssize_t _replace_entry_flags(self, Entry *e, long long flags) except -1:
        """The entry's flags element rewritten; returns by how much the entry grew."""
        cdef unsigned char buf[12]
        cdef Py_ssize_t n = _encode_int(buf, flags)
        cdef Py_ssize_t old = _entry_size(self.lp + e.off), total
        if n != old:  # not for Redis's flags (0-3: one byte), only for odd loaded ones
            self.hint = 0  # the entries after it move
            total = _total(self.lp)
            if n > old:
                self._reserve(n - old)
            memmove(self.lp + e.off + n, self.lp + e.off + old, total - e.off - old)
            _set_total(self.lp, total + n - old)
        memcpy(self.lp + e.off, buf, n)
        return n - old

    def trim_front(self, Py_ssize_t limit, minid):
        """Exact trimming inside the node: flag live entries deleted from the front, at most
        ``limit`` of them (-1: no limit), stopping at the first entry (live or not) at or
        above ``minid`` when it is given. Returns how many were flagged."""
        cdef Py_ssize_t off = self.first, end, done = 0, shift
        cdef uint64_t ms = 0, seq = 0
        cdef bint bounded = minid is not None
        cdef Entry e
        if bounded:
            ms = minid[0]
            seq = minid[1]
        while True:
            end = _total(self.lp) - 1
            if off >= end or (limit >= 0 and done >= limit):
                break
            self._scan(off, &e)
            if bounded and not _below(e.ms, e.seq, ms, seq):
                break
            if not e.flags & FLAG_DELETED:
                e.next += self._replace_entry_flags(&e, e.flags | FLAG_DELETED)
                shift = self.first
                self._set_counts(self.live - 1, self.dead + 1)
                e.next += self.first - shift
                done += 1
                off = e.next
                continue
            off = e.next
        return done

    # -- copies ----------------------------------------------------------------------------
    def copy(self):
        return _node_over(self.master, self.fields, self.lp, self.live, self.dead)

    def __sizeof__(self):
        return object.__sizeof__(self) + self.cap


cdef StreamNode _node_over(tuple master, tuple fields, const unsigned char *src,
                           Py_ssize_t live, Py_ssize_t dead):
    """A node over a copy of the stream listpack at ``src``."""
    cdef StreamNode node = StreamNode.__new__(StreamNode)
    cdef Py_ssize_t total = _total(src), off = HEADER, i
    node.lp = <unsigned char *>PyMem_Malloc(total)
    if node.lp == NULL:
        raise MemoryError()
    memcpy(node.lp, src, total)
    node.cap = total
    node.master = master
    node.mms = master[0]
    node.mseq = master[1]
    node.fields = fields
    node.live = live
    node.dead = dead
    for i in range(len(fields) + 4):  # past the master entry
        off += _entry_size(node.lp + off)
    node.first = off
    return node
