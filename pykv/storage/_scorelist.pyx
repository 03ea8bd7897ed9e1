# cython: boundscheck=False, wraparound=False, cdivision=True
"""The ordered (score, member) index of a skiplist-encoded zset: ``ScoreList``.

Pairs are 16-byte C structs (a double and a reference to the member's bytes object,
shared with the zset's dict) kept in sorted blocks of at most ``MAX_BLOCK`` entries, like
``SortedList``'s list of lists but without a tuple, a float and a list slot per member.
The order is Redis's skiplist order: score, then the member's bytes (memcmp, shorter
first), which is also the order of Python's ``(float, bytes)`` tuples. A Fenwick tree
over the block sizes answers positions: insert, remove, rank, bisect and index are
O(log n) plus one memmove inside a block.

The methods read like the ``SortedList`` subset the zset commands used (``add``,
``remove``, ``bisect_left``/``bisect_right`` on ``(score,)`` or ``(score, member)``
keys, ``islice``, indexing and slicing, ``del`` of a slice) plus direct forms that take
the score and member without a tuple (``insert``, ``discard``, ``rank``, ``bisect_score``,
``items``).
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_GET_SIZE
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove

DEF MAX_BLOCK = 1024  # a block splits in two past this many entries
DEF LOAD = 512  # entries per block when built from sorted pairs, and after a split
DEF MERGE_BELOW = 64  # a block this small joins a neighbour when both fit one block


ctypedef struct Entry:
    double score
    PyObject *member  # a bytes object; NULL in a search key stands below every member


ctypedef struct Block:
    Py_ssize_t n
    Py_ssize_t cap
    Entry *e


cdef inline int _cmp(double s1, PyObject *m1, double s2, PyObject *m2) noexcept:
    """Redis's order of (score, member): -1, 0 or 1."""
    cdef Py_ssize_t l1, l2
    cdef int c
    if s1 < s2:
        return -1
    if s1 > s2:
        return 1
    if m1 == m2:
        return 0
    if m1 == NULL:
        return -1
    if m2 == NULL:
        return 1
    l1 = PyBytes_GET_SIZE(<object>m1)
    l2 = PyBytes_GET_SIZE(<object>m2)
    c = memcmp(PyBytes_AS_STRING(<object>m1), PyBytes_AS_STRING(<object>m2),
               l1 if l1 < l2 else l2)
    if c:
        return -1 if c < 0 else 1
    return (l1 > l2) - (l1 < l2)


cdef inline tuple _pair(Entry *e):
    return (e.score, <object>e.member)


@cython.final
@cython.no_gc  # holds bytes objects only: no cycle runs through it
cdef class ScoreList:
    """Sorted (score, member) pairs; see the module docstring."""
    cdef Block *blocks
    cdef Py_ssize_t nblocks, bcap, size
    cdef Py_ssize_t *tree  # Fenwick tree over block sizes, 1-based; valid unless dirty
    cdef bint dirty
    cdef Py_ssize_t version  # bumped by every change, so iterators re-find their place

    def __cinit__(self):
        self.blocks = NULL
        self.tree = NULL
        self.nblocks = self.bcap = self.size = 0
        self.dirty = True

    def __init__(self, pairs=None):
        if pairs is not None:
            self.update(pairs)

    def __dealloc__(self):
        cdef Py_ssize_t b, i
        for b in range(self.nblocks):
            for i in range(self.blocks[b].n):
                Py_DECREF(<object>self.blocks[b].e[i].member)
            free(self.blocks[b].e)
        free(self.blocks)
        free(self.tree)

    # -- blocks and positions ------------------------------------------------------------
    cdef int _reserve_blocks(self, Py_ssize_t want) except -1:
        cdef Py_ssize_t cap
        cdef Block *nb
        if want <= self.bcap:
            return 0
        cap = want + want // 4 + 4
        nb = <Block *>realloc(self.blocks, cap * sizeof(Block))
        if nb == NULL:
            raise MemoryError()
        self.blocks = nb
        self.bcap = cap
        return 0

    cdef int _block_fit(self, Block *blk, Py_ssize_t want) except -1:
        """Room for ``want`` entries in ``blk`` (grown by an eighth, so few reallocs)."""
        cdef Py_ssize_t cap
        cdef Entry *e
        if want <= blk.cap:
            return 0
        cap = want + want // 8 + 4
        if cap > MAX_BLOCK + 1:
            cap = MAX_BLOCK + 1 if want <= MAX_BLOCK + 1 else want
        e = <Entry *>realloc(blk.e, cap * sizeof(Entry))
        if e == NULL:
            raise MemoryError()
        blk.e = e
        blk.cap = cap
        return 0

    cdef int _insert_block(self, Py_ssize_t at, Py_ssize_t n) except -1:
        """A new empty block (room for ``n``) at block index ``at``."""
        cdef Entry *e = <Entry *>malloc((n if n > 0 else 1) * sizeof(Entry))
        if e == NULL:
            raise MemoryError()
        try:
            self._reserve_blocks(self.nblocks + 1)
        except MemoryError:
            free(e)
            raise
        memmove(&self.blocks[at + 1], &self.blocks[at], (self.nblocks - at) * sizeof(Block))
        self.blocks[at].n = 0
        self.blocks[at].cap = n if n > 0 else 1
        self.blocks[at].e = e
        self.nblocks += 1
        self.dirty = True
        return 0

    cdef void _drop_block(self, Py_ssize_t at) noexcept:
        """Frees block ``at`` (its entries already gone or moved)."""
        free(self.blocks[at].e)
        memmove(&self.blocks[at], &self.blocks[at + 1],
                (self.nblocks - at - 1) * sizeof(Block))
        self.nblocks -= 1
        self.dirty = True

    cdef int _build_index(self) except -1:
        cdef Py_ssize_t i, j, n = self.nblocks
        cdef Py_ssize_t *t = <Py_ssize_t *>realloc(self.tree, (n + 1) * sizeof(Py_ssize_t))
        if t == NULL:
            raise MemoryError()
        self.tree = t
        t[0] = 0
        for i in range(n):
            t[i + 1] = self.blocks[i].n
        for i in range(1, n + 1):
            j = i + (i & -i)
            if j <= n:
                t[j] += t[i]
        self.dirty = False
        return 0

    cdef inline void _grew(self, Py_ssize_t b, Py_ssize_t delta) noexcept:
        """Block ``b`` changed size by ``delta``: the index follows (when it is built)."""
        cdef Py_ssize_t i = b + 1
        self.size += delta
        self.version += 1
        if self.dirty:
            return
        while i <= self.nblocks:
            self.tree[i] += delta
            i += i & -i

    cdef Py_ssize_t _prefix(self, Py_ssize_t b) except -1:
        """How many entries the blocks before ``b`` hold."""
        cdef Py_ssize_t total = 0
        if b == 0:
            return 0
        if self.dirty:
            self._build_index()
        while b > 0:
            total += self.tree[b]
            b -= b & -b
        return total

    cdef Py_ssize_t _locate(self, Py_ssize_t pos, Py_ssize_t *off) except -1:
        """The block holding position ``pos`` (0 <= pos < size), its offset in ``off``."""
        cdef Py_ssize_t b = 0, step = 1, nxt
        if self.nblocks == 1:
            off[0] = pos
            return 0
        if self.dirty:
            self._build_index()
        while step * 2 <= self.nblocks:
            step *= 2
        while step:
            nxt = b + step
            if nxt <= self.nblocks and self.tree[nxt] <= pos:
                b = nxt
                pos -= self.tree[nxt]
            step //= 2
        off[0] = pos
        return b

    # -- searching -----------------------------------------------------------------------
    cdef Py_ssize_t _find_block(self, double score, PyObject *member, bint right) noexcept:
        """The first block whose last entry is >= key (> key when ``right``), or the last."""
        cdef Py_ssize_t lo = 0, hi = self.nblocks - 1, mid
        cdef Block *blk
        while lo < hi:
            mid = (lo + hi) // 2
            blk = &self.blocks[mid]
            if _cmp(blk.e[blk.n - 1].score, blk.e[blk.n - 1].member, score, member) \
                    < (1 if right else 0):
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef Py_ssize_t _block_bisect(self, Block *blk, double score, PyObject *member,
                                  bint right) noexcept:
        cdef Py_ssize_t lo = 0, hi = blk.n, mid
        cdef int limit = 1 if right else 0
        while lo < hi:
            mid = (lo + hi) // 2
            if _cmp(blk.e[mid].score, blk.e[mid].member, score, member) < limit:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef Py_ssize_t _bisect(self, double score, PyObject *member, bint right) except -1:
        cdef Py_ssize_t b
        if self.size == 0:
            return 0
        b = self._find_block(score, member, right)
        return self._prefix(b) + self._block_bisect(&self.blocks[b], score, member, right)

    # -- changes -------------------------------------------------------------------------
    cdef int _add(self, double score, bytes member) except -1:
        cdef Py_ssize_t b, i
        cdef Block *blk
        cdef PyObject *m = <PyObject *>member
        if self.nblocks == 0:
            self._insert_block(0, 4)
            b = 0
        else:
            b = self._find_block(score, m, True)
        blk = &self.blocks[b]
        i = self._block_bisect(blk, score, m, True)
        self._block_fit(blk, blk.n + 1)
        memmove(&blk.e[i + 1], &blk.e[i], (blk.n - i) * sizeof(Entry))
        Py_INCREF(member)
        blk.e[i].score = score
        blk.e[i].member = m
        blk.n += 1
        self._grew(b, 1)
        if blk.n > MAX_BLOCK:
            self._split(b)
        return 0

    cdef int _split(self, Py_ssize_t b) except -1:
        cdef Py_ssize_t keep, move
        cdef Block *blk
        keep = self.blocks[b].n // 2
        move = self.blocks[b].n - keep
        self._insert_block(b + 1, move + move // 8 + 4)
        blk = &self.blocks[b]
        memcpy(self.blocks[b + 1].e, &blk.e[keep], move * sizeof(Entry))
        self.blocks[b + 1].n = move
        blk.n = keep
        return 0

    cdef void _maybe_merge(self, Py_ssize_t b) noexcept:
        """After removals from block ``b``: drop it if empty, join a neighbour if small."""
        cdef Block *blk = &self.blocks[b]
        cdef Block *other
        if blk.n == 0:
            if self.nblocks > 1:
                self._drop_block(b)
            return
        if blk.n >= MERGE_BELOW or self.nblocks == 1:
            return
        if b + 1 < self.nblocks and blk.n + self.blocks[b + 1].n <= MAX_BLOCK:
            other = &self.blocks[b + 1]
        elif b > 0 and blk.n + self.blocks[b - 1].n <= MAX_BLOCK:
            b -= 1
            blk = &self.blocks[b]
            other = &self.blocks[b + 1]
        else:
            return
        # append ``other`` (block b + 1) to ``blk`` (block b)
        try:
            self._block_fit(blk, blk.n + other.n)
        except MemoryError:
            return  # stays unmerged: still correct
        memcpy(&blk.e[blk.n], other.e, other.n * sizeof(Entry))
        blk.n += other.n
        self._drop_block(b + 1)

    cdef bint _discard(self, double score, PyObject *member) except -1:
        cdef Py_ssize_t b, i
        cdef Block *blk
        if self.size == 0:
            return False
        b = self._find_block(score, member, False)
        blk = &self.blocks[b]
        i = self._block_bisect(blk, score, member, False)
        if i >= blk.n or _cmp(blk.e[i].score, blk.e[i].member, score, member) != 0:
            return False
        Py_DECREF(<object>blk.e[i].member)
        memmove(&blk.e[i], &blk.e[i + 1], (blk.n - i - 1) * sizeof(Entry))
        blk.n -= 1
        self._grew(b, -1)
        self._maybe_merge(b)
        return True

    # -- the Python surface --------------------------------------------------------------
    def __len__(self):
        return self.size

    def insert(self, double score, bytes member not None):
        """Add one pair (duplicates are the caller's to avoid, as in a zset)."""
        self._add(score, member)

    def discard(self, double score, bytes member not None):
        """Remove the pair if present; True when it was."""
        return self._discard(score, <PyObject *>member)

    def add(self, tuple pair not None):
        """``SortedList.add`` of a (score, member) tuple."""
        self._add(pair[0], pair[1])

    def remove(self, tuple pair not None):
        """``SortedList.remove``: ValueError when the pair is absent."""
        cdef bytes member = pair[1]
        if not self._discard(pair[0], <PyObject *>member):
            raise ValueError(f"{pair!r} not in list")

    def update(self, pairs):
        """Add every (score, member) pair; into an empty list sorted pairs load in blocks."""
        cdef list ordered = sorted(pairs)
        cdef Py_ssize_t n = len(ordered), i = 0, k, j
        cdef Block *blk
        cdef tuple pair
        cdef bytes member
        if self.size:
            for pair in ordered:
                self._add(pair[0], pair[1])
            return
        while self.nblocks:
            self._drop_block(self.nblocks - 1)
        while i < n:
            k = n - i if n - i <= LOAD else LOAD
            self._insert_block(self.nblocks, k)
            blk = &self.blocks[self.nblocks - 1]
            for j in range(k):
                pair = ordered[i + j]
                member = pair[1]
                if member is None:
                    raise TypeError("zset members are bytes")
                blk.e[j].score = pair[0]
                Py_INCREF(member)
                blk.e[j].member = <PyObject *>member
                blk.n = j + 1
                self.size += 1
            i += k
        self.version += 1
        self.dirty = True

    def copy(self):
        """A new ScoreList with the same pairs (members shared)."""
        cdef ScoreList out = ScoreList.__new__(ScoreList)
        cdef Py_ssize_t b, i
        cdef Block *src
        cdef Block *dst
        out._reserve_blocks(self.nblocks)
        for b in range(self.nblocks):
            src = &self.blocks[b]
            out._insert_block(b, src.n)
            dst = &out.blocks[b]
            memcpy(dst.e, src.e, src.n * sizeof(Entry))
            dst.n = src.n
            for i in range(src.n):
                Py_INCREF(<object>src.e[i].member)
        out.size = self.size
        return out

    def rank(self, double score, bytes member not None):
        """Position of (score, member), which must be present (``bisect_left``)."""
        return self._bisect(score, <PyObject *>member, False)

    def bisect_score(self, double score):
        """First position whose score is >= ``score``."""
        return self._bisect(score, NULL, False)

    cdef Py_ssize_t _bisect_key(self, tuple key, bint right) except -1:
        cdef bytes member
        if PyTuple_GET_SIZE(key) == 1:
            return self._bisect(key[0], NULL, right)
        member = key[1]
        return self._bisect(key[0], <PyObject *>member, right)

    def bisect_left(self, tuple key not None):
        """``SortedList.bisect_left`` of a ``(score,)`` or ``(score, member)`` key."""
        return self._bisect_key(key, False)

    def bisect_right(self, tuple key not None):
        return self._bisect_key(key, True)

    cdef Py_ssize_t _clamp(self, object index, Py_ssize_t default) except? -1:
        cdef Py_ssize_t i
        if index is None:
            return default
        i = index
        if i < 0:
            i += self.size
            if i < 0:
                i = 0
        elif i > self.size:
            i = self.size
        return i

    cpdef list items(self, Py_ssize_t lo, Py_ssize_t hi):
        """The (score, member) pairs at positions [lo, hi) (clamped to the list)."""
        cdef list out = []
        cdef Py_ssize_t b, off, k
        cdef Block *blk
        if lo < 0:
            lo = 0
        if hi > self.size:
            hi = self.size
        if lo >= hi:
            return out
        b = self._locate(lo, &off)
        k = hi - lo
        while k > 0:
            blk = &self.blocks[b]
            while off < blk.n and k > 0:
                out.append(_pair(&blk.e[off]))
                off += 1
                k -= 1
            b += 1
            off = 0
        return out

    def __getitem__(self, index):
        cdef Py_ssize_t i, off, b
        cdef list out
        if isinstance(index, slice):
            start, stop, step = index.indices(self.size)
            if step == 1:
                return self.items(start, stop)
            out = self.items(0, self.size)
            return out[index]
        i = index
        if i < 0:
            i += self.size
        if not 0 <= i < self.size:
            raise IndexError("ScoreList index out of range")
        b = self._locate(i, &off)
        return _pair(&self.blocks[b].e[off])

    def __delitem__(self, index):
        """``del sl[lo:hi]`` (contiguous slices only)."""
        cdef Py_ssize_t lo, hi, b, off, k, take, i, w, first
        cdef Block *blk
        if not isinstance(index, slice):
            lo = index
            if lo < 0:
                lo += self.size
            if not 0 <= lo < self.size:
                raise IndexError("ScoreList index out of range")
            index = slice(lo, lo + 1)
        start, stop, step = index.indices(self.size)
        if step != 1:
            raise ValueError("ScoreList deletes contiguous slices only")
        lo, hi = start, stop
        if lo >= hi:
            return
        b = self._locate(lo, &off)
        first = b
        k = hi - lo
        while k > 0:
            blk = &self.blocks[b]
            take = blk.n - off if blk.n - off < k else k
            for i in range(off, off + take):
                Py_DECREF(<object>blk.e[i].member)
            memmove(&blk.e[off], &blk.e[off + take], (blk.n - off - take) * sizeof(Entry))
            blk.n -= take
            k -= take
            b += 1
            off = 0
        # drop the emptied blocks in one pass
        w = first
        for i in range(first, b):
            if self.blocks[i].n == 0 and self.nblocks - (i - w) > 1:
                free(self.blocks[i].e)
            else:
                self.blocks[w] = self.blocks[i]
                w += 1
        memmove(&self.blocks[w], &self.blocks[b], (self.nblocks - b) * sizeof(Block))
        self.nblocks -= b - w
        self.size -= hi - lo
        self.version += 1
        self.dirty = True
        # at most two part-emptied blocks are left, at ``first`` and ``first + 1``
        if first + 1 < self.nblocks:
            self._maybe_merge(first + 1)
        if first < self.nblocks:
            self._maybe_merge(first)

    def islice(self, start=None, stop=None, bint reverse=False):
        """An iterator over positions [start, stop), backwards when ``reverse``."""
        cdef Py_ssize_t lo = self._clamp(start, 0), hi = self._clamp(stop, self.size)
        if hi < lo:
            hi = lo
        return _Iter._make(self, lo, hi, reverse)

    def __iter__(self):
        return _Iter._make(self, 0, self.size, False)

    def __reversed__(self):
        return _Iter._make(self, 0, self.size, True)

    def __eq__(self, other):
        try:
            return self.items(0, self.size) == list(other)
        except TypeError:
            return NotImplemented

    def __repr__(self):
        return f"ScoreList({self.items(0, self.size)!r})"

    def block_sizes(self):
        """The entries per block (for tests of the splitting and merging)."""
        return [self.blocks[b].n for b in range(self.nblocks)]

    def check(self):
        """Asserts the invariants (order, sizes, index); for tests."""
        cdef Py_ssize_t b, i, total = 0, off
        cdef Entry *prev = NULL
        for b in range(self.nblocks):
            assert self.blocks[b].n > 0 or self.nblocks == 1, "empty block"
            assert self.blocks[b].n <= self.blocks[b].cap
            for i in range(self.blocks[b].n):
                if prev != NULL:
                    assert _cmp(prev.score, prev.member, self.blocks[b].e[i].score,
                                self.blocks[b].e[i].member) < 0, "out of order"
                prev = &self.blocks[b].e[i]
            assert self._prefix(b) == total, "index"
            total += self.blocks[b].n
        assert total == self.size, "size"
        for i in range(self.size):
            b = self._locate(i, &off)
            assert self._prefix(b) + off == i, "locate"


@cython.final
@cython.no_gc
cdef class _Iter:
    """Walks a ScoreList's positions; after a change to the list it finds its place again
    by position."""
    cdef ScoreList sl
    cdef Py_ssize_t pos, end, b, off, version  # next position (forwards) / one past it
    cdef bint reverse

    @staticmethod
    cdef _Iter _make(ScoreList sl, Py_ssize_t lo, Py_ssize_t hi, bint reverse):
        cdef _Iter it = _Iter.__new__(_Iter)
        it.sl = sl
        it.reverse = reverse
        it.pos = hi if reverse else lo  # reverse: ``pos`` is one past the next
        it.end = lo if reverse else hi
        it.version = sl.version - 1  # find the place on the first step
        return it

    def __iter__(self):
        return self

    def __next__(self):
        cdef ScoreList sl = self.sl
        cdef Entry *e
        cdef Py_ssize_t p
        if self.reverse:
            if self.pos <= self.end or self.pos > sl.size:
                raise StopIteration
            p = self.pos - 1
            if self.version != sl.version or self.off == 0:
                self.b = sl._locate(p, &self.off)
                self.version = sl.version
            else:
                self.off -= 1
            self.pos = p
        else:
            if self.pos >= self.end or self.pos >= sl.size:
                raise StopIteration
            if self.version != sl.version or self.off >= sl.blocks[self.b].n:
                self.b = sl._locate(self.pos, &self.off)
                self.version = sl.version
            self.pos += 1
        e = &sl.blocks[self.b].e[self.off]
        if not self.reverse:
            self.off += 1
        return _pair(e)
