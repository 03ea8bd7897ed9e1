"""Each client's reply buffer size and peak, resized from the cron as Redis 7.0 does.

Redis gives every client a fixed reply buffer (16 KiB to start) and remembers the most it
held between two writes (``buf_peak``). Its clients cron shrinks the buffer when the peak
stayed under half of it (down to 1 KiB, or just above the peak) and doubles it (up to 16 KiB)
when the peak filled it, then resets the peak every ``reply-buffer peak reset time`` (5 s;
``DEBUG REPLYBUFFER PEAK-RESET-TIME``). ``DEBUG REPLYBUFFER RESIZING 0`` stops it. CLIENT
LIST shows the two as ``rbs`` and ``rbp``; INFO stats counts ``reply_buffer_shrinks`` and
``reply_buffer_expands``.

pykv writes replies from one growing buffer per read batch, so the peak is what the batch's
replies would have put in Redis's fixed buffer: their size, capped at the buffer's. Sizes
are rounded up to the jemalloc size class, as the ``zmalloc_usable`` Redis uses reports them.
"""
from __future__ import annotations

import time
from itertools import islice
from typing import Any

REPLY_CHUNK_BYTES = 16 * 1024  # PROTO_REPLY_CHUNK_BYTES: the initial and largest size
REPLY_MIN_BYTES = 1024  # PROTO_REPLY_MIN_BYTES
DEFAULT_PEAK_RESET_MS = 5000  # REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME
CLIENTS_CRON_MIN_ITERATIONS = 5  # the fewest clients a tick visits (when there are more)


def usable_size(n: int) -> int:
    """jemalloc's size class for an ``n``-byte allocation (four classes per doubling)."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) & ~15
    step = 1 << ((n - 1).bit_length() - 3)
    return (n + step - 1) & ~(step - 1)


def resize_reply_buffer(server: Any, c: Any, now_ms: int) -> None:
    """Redis's clientsCronResizeOutputBuffer for one client."""
    if not server.reply_buffer_resizing_enabled:
        return
    size = c.buf_size
    new_size = 0
    if size // 2 >= REPLY_MIN_BYTES and c.buf_peak < size // 2:
        new_size = max(REPLY_MIN_BYTES, c.buf_peak + 1)
        server.stat_reply_buffer_shrinks += 1
    elif size * 2 < REPLY_CHUNK_BYTES * 2 and c.buf_peak == size:
        new_size = min(REPLY_CHUNK_BYTES, size * 2)
        server.stat_reply_buffer_expands += 1
    reset = server.reply_buffer_peak_reset_time
    if reset >= 0 and now_ms - c.buf_peak_reset_ms >= reset:
        c.buf_peak = 0  # Redis resets it to what the buffer holds now: nothing, between batches
        c.buf_peak_reset_ms = now_ms
    if new_size:
        c.buf_size = usable_size(new_size)


def clients_cron(server: Any) -> None:
    """Run the resize for this tick's share of the clients, as Redis's clientsCron: the
    number of clients over ``hz``, at least 5 (all of them when fewer), taken in turn from
    where the last tick stopped, so each client is visited about once a second however
    many are connected (visiting all of them every tick cost ~0.35 ms at 1000 clients)."""
    clients = server.clients
    total = len(clients)
    if not total:
        return
    count = total // max(1, server.config.hz)
    if count < CLIENTS_CRON_MIN_ITERATIONS:
        count = min(total, CLIENTS_CRON_MIN_ITERATIONS)
    start = server.clients_cron_cursor % total
    batch = list(islice(clients.values(), start, start + count))
    if len(batch) < count:  # wrapped around
        batch += islice(clients.values(), 0, count - len(batch))
    server.clients_cron_cursor = start + count
    now_ms = int(time.time() * 1000)
    for c in batch:
        if not c.closed:
            resize_reply_buffer(server, c, now_ms)
