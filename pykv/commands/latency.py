"""LATENCY: the latency monitor's samples per event, the per-command latency histograms
as LATENCY HISTOGRAM and INFO latencystats report them, and the commands that report them.

When ``latency-monitor-threshold`` is set (ms), anything slower records a sample under an
event name ("command", "fast-command", "expire-cycle", …). As in Redis each event keeps
its last 160 samples, one per second at most (a second's samples merge to their maximum),
plus its all-time maximum. The reply shapes are Redis's; the DOCTOR and GRAPH texts are
pykv's own wording and drawing.

While ``latency-tracking`` is on, the dispatcher counts every call's duration in its
command's histogram (C counters on ``CommandCore``, Redis's HDR histogram resolution, see
``pykv.server._core``); this module turns those counters into Redis's two reports.
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from pykv.commands.client_cmd import help_reply
from pykv.commands.introspection import lookup_full
from pykv.commands.registry import Command, command
from pykv.config.values import format_percentile
from pykv.protocol import ErrorReply, RawReply, Verbatim, encode_reply
from pykv.server.latency_monitor import EventSeries, LatencyMonitor

HELP = [
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    A readable analysis of the latency samples collected so far.",
    "GRAPH <event>",
    "    An ASCII chart of the samples of the <event> class.",
    "HISTORY <event>",
    "    The (time, latency) samples kept for the <event> class.",
    "LATEST",
    "    The newest sample of every event class.",
    "RESET [<event> ...]",
    "    Forget the samples of the named event classes",
    "    (all of them when no name is given).",
    "HISTOGRAM [COMMAND ...]",
    "    Per-command call counts by duration, cumulative over power-of-two microsecond",
    "    buckets, for the named commands (every command with samples if none is named).",
    "HELP",
    "    Print this help.",
]


def _monitor(c) -> LatencyMonitor:
    return c.server.latency


def _text(c, text: str):
    data = text.encode()
    return Verbatim(data) if c.resp == 3 else data


@command("latency|help")
def latency_help(c, argv):
    return help_reply(HELP)


@command("latency|latest")
def latency_latest(c, argv):
    return [[name.encode(), s.samples[-1][0], s.samples[-1][1], s.max]
            for name, s in _monitor(c).events.items() if s.samples]


@command("latency|history")
def latency_history(c, argv):
    series = _monitor(c).events.get(argv[2].decode("utf-8", "surrogateescape"))
    if series is None:
        return []
    return [[when, ms] for when, ms in series.samples]


@command("latency|reset")
def latency_reset(c, argv):
    names = [a.decode("utf-8", "surrogateescape") for a in argv[2:]] if len(argv) > 2 else None
    return _monitor(c).reset(names)


@command("latency|graph")
def latency_graph(c, argv):
    name = argv[2].decode("utf-8", "surrogateescape")
    series = _monitor(c).events.get(name)
    if series is None or not series.samples:
        return ErrorReply(b"ERR No samples available for event '" + argv[2] + b"'")
    return _text(c, draw_graph(name, series))


def draw_graph(name: str, series: EventSeries) -> str:
    """A header (Redis's wording: it is parsed by tools), then one column per sample."""
    values = [ms for _, ms in series.samples]
    high, low = max(values), min(values)
    lines = [f"{name} - high {high} ms, low {low} ms (all time high {series.max} ms)", "-" * 80]
    rows = 4
    span = max(high - low, 1)
    heights = [1 + (v - low) * (rows - 1) // span for v in values]
    for row in range(rows, 0, -1):
        lines.append("".join("#" if h >= row else " " for h in heights).rstrip() or " ")
    now = int(time.time())
    ages = [_age_label(now - when) for when, _ in series.samples]
    width = max(len(a) for a in ages)
    for i in range(width):
        lines.append("".join(a[i] if i < len(a) else " " for a in ages))
    return "\n".join(lines) + "\n"


def _age_label(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


@command("latency|doctor")
def latency_doctor(c, argv):
    return _text(c, doctor_report(c.server))


def doctor_report(server) -> str:
    events = {n: s for n, s in server.latency.events.items() if s.samples}
    threshold = server.config.latency_monitor_threshold
    if not events:
        if not threshold:
            return ("The latency monitor is off (latency-monitor-threshold is 0). Set it, "
                    "for example with CONFIG SET latency-monitor-threshold 100, and ask "
                    "again once some traffic has run.\n")
        return "No event has been slower than the threshold since the server started.\n"
    out = [f"Latency report: events slower than {threshold} ms were recorded.\n"]
    for i, (name, s) in enumerate(sorted(events.items()), 1):
        values = [ms for _, ms in s.samples]
        avg = sum(values) / len(values)
        dev = sum(abs(v - avg) for v in values) / len(values)
        first, last = s.samples[0][0], s.samples[-1][0]
        period = (last - first) / (len(values) - 1) if len(values) > 1 else 0
        out.append(f"{i}. {name}: {len(values)} samples, average {int(avg)} ms, mean "
                   f"deviation {int(dev)} ms, one every {period:.2f} s; worst ever "
                   f"{s.max} ms.")
    out.append("")
    out.append("Where to look:")
    if any(n in events for n in ("command", "fast-command")):
        out.append("- SLOWLOG GET lists the slowest commands with their arguments.")
        out.append("- Commands over big keys (KEYS, SORT, SUNION, LRANGE of a long list...) "
                   "run in O(N); split the values or use SCAN-style iteration.")
    if "expire-cycle" in events:
        out.append("- Many keys expiring at the same time make the expire cycle slow; "
                   "spread the TTLs.")
    out.append("- Big deletions block too: UNLINK and FLUSHALL ASYNC free memory lazily.")
    return "\n".join(out) + "\n"


# -- per-command latency histograms ----------------------------------------------------------
# Counters come from ``Command.latency_counts()``: (lowest ns, highest ns, count) per HDR
# counter, lowest first. Redis reports them by walking the histogram with reporting levels
# 1024 ns, 2048 ns, 4096 ns, ...: a level's cumulative count takes in every counter up to and
# including the one that holds the level's value, and is labelled with that counter's highest
# value in whole microseconds (1024 + 8 - 1 ns -> 1, ..., 32768 + 256 - 1 ns -> 33); levels at
# which the count did not grow are left out. Redis's counters end at 2^30 ns, so the walk for
# the 2^30 level runs off their end: samples past the 2^29 level's counter are reported under
# the last counter's highest value, 1073741 µs.
FIRST_LEVEL_NS = 1024
LEVELS = 20  # 2^10 .. 2^29 ns; level 20 collects the rest
SUB_BUCKET_BITS = 7  # HDR: 128 counters per power of two above 256 ns
OVERFLOW_LABEL_US = ((1 << 30) - 1) // 1000


def level_label(level: int) -> int:
    """The microseconds a reporting level is labelled with (1, 2, 4, 8, 16, 33, 66, ...)."""
    if level >= LEVELS:
        return OVERFLOW_LABEL_US
    value = FIRST_LEVEL_NS << level
    return (value + (value >> SUB_BUCKET_BITS) - 1) // 1000


def histogram_usec(counts: Iterable[tuple[int, int, int]]) -> dict[int, int]:
    """LATENCY HISTOGRAM's ``histogram_usec``: level label -> cumulative count."""
    per_level: dict[int, int] = {}
    for lowest, _highest, n in counts:
        # a counter is reported at the first level whose value it does not exceed
        level = 0 if lowest <= FIRST_LEVEL_NS else min((lowest - 1).bit_length() - 10, LEVELS)
        per_level[level] = per_level.get(level, 0) + n
    out: dict[int, int] = {}
    total = 0
    for level in sorted(per_level):
        total += per_level[level]
        out[level_label(level)] = total
    return out


def value_at_percentile(counts: list[tuple[int, int, int]], total: int,
                        percentile: float) -> int:
    """HDR's value at a percentile, in ns: the counter holding the rank-th smallest sample
    (rank rounded half up, at least 1), its highest value (its lowest for percentile 0)."""
    rank = max(int(min(percentile, 100.0) / 100 * total + 0.5), 1)
    seen = 0
    for lowest, highest, n in counts:
        seen += n
        if seen >= rank:
            return lowest if percentile == 0.0 else highest
    return 0


def tracked_commands(commands: Iterable[Command]) -> list[Command]:
    """Commands and subcommands that have latency samples, in command-table order."""
    return [cmd for top in commands for cmd in top.all_commands() if cmd.lat_samples]


def latencystats_fields(server: Any) -> list[tuple[str, str]]:
    """INFO latencystats: ``latency_percentiles_usec_<command>`` with the configured
    percentiles (``p<percentile>=<usec with 3 decimals>``), empty while tracking is off."""
    if not server.latency_tracking:
        return []
    percentiles = server.config.latency_tracking_info_percentiles
    out = []
    for cmd in tracked_commands(server.commands):
        counts = cmd.latency_counts()
        values = ",".join(
            f"p{format_percentile(p)}="
            f"{value_at_percentile(counts, cmd.lat_samples, p) / 1000:.3f}"
            for p in percentiles)
        out.append((f"latency_percentiles_usec_{cmd.fullname}", values))
    return out


def _histogram_entry(cmd: Command) -> dict[bytes, Any]:
    return {b"calls": cmd.lat_samples, b"histogram_usec": histogram_usec(cmd.latency_counts())}


@command("latency|histogram")
def latency_histogram(c, argv):
    table = c.server.commands
    if len(argv) == 2:
        chosen = tracked_commands(table)
    else:
        # as Redis: unknown names are skipped, a container brings its subcommands, and a
        # name given twice is reported twice (so the map may repeat a key)
        chosen = []
        for name in argv[2:]:
            cmd = lookup_full(table, name)
            if cmd is not None:
                chosen.extend(sub for sub in cmd.all_commands() if sub.lat_samples)
    resp = c.resp
    head = b"%%%d\r\n" % len(chosen) if resp == 3 else b"*%d\r\n" % (2 * len(chosen))
    return RawReply(head + b"".join(
        encode_reply(cmd.fullname.encode(), resp) + encode_reply(_histogram_entry(cmd), resp)
        for cmd in chosen))
