"""Shared by the benchmark scripts: statistics, the results table, the machine note.

Nothing here is timed. The scripts compare variants measured in the same run,
interleaved, and report medians of ratios; absolute times are printed only as
context (they depend on the machine and on whatever else it is doing).
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, linearly interpolated."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass(frozen=True)
class Row:
    """One line of a results table: a ratio (ours / reference) and its target."""

    case: str
    ratio: float  # median of the per-round ratios
    low: float  # 25th percentile of the per-round ratios
    high: float  # 75th percentile of the per-round ratios
    target: float | None  # the ratio must be <= target; None: no target, context only
    context: str = ""  # e.g. the median absolute times, for the reader

    @property
    def verdict(self) -> str:
        if self.target is None:
            return "-"
        return "meets" if self.ratio <= self.target else "MISSES"


def ratio_row(case: str, ratios: Sequence[float], target: float | None, context: str = "") -> Row:
    return Row(
        case=case,
        ratio=median(ratios),
        low=quantile(ratios, 0.25),
        high=quantile(ratios, 0.75),
        target=target,
        context=context,
    )


def print_table(title: str, rows: Sequence[Row], context_header: str) -> None:
    """Print ``rows`` as an aligned text table (Markdown-compatible)."""
    header = ("case", "ratio (median)", "p25-p75", "target", "verdict", context_header)
    lines = [
        (
            row.case,
            f"{row.ratio:.3f}x",
            f"{row.low:.2f}-{row.high:.2f}",
            "" if row.target is None else f"<= {row.target:g}x",
            row.verdict,
            row.context,
        )
        for row in rows
    ]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *lines, strict=True)]
    print(f"\n{title}\n")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for line in lines:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |")


def machine_note() -> str:
    """Date, Python, platform and load: enough to tell two runs' conditions apart."""
    try:
        load = "load avg {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        load = "load avg n/a"
    return (
        f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; "
        f"Python {platform.python_version()} ({sys.implementation.name}); "
        f"{platform.system()} {platform.machine()}; {os.cpu_count()} CPUs; {load}"
    )


def format_ns(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.1f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.0f} ns"
