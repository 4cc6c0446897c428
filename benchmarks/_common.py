"""Timing helpers shared by the benchmark scripts: plain medians of repeated calls."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def seconds_per_round(action: Callable[[int], object], rounds: int) -> list[float]:
    """Wall time (s) of ``action(i)`` for each round ``i`` in ``range(rounds)``."""
    samples = []
    for i in range(rounds):
        start = time.perf_counter()
        action(i)
        samples.append(time.perf_counter() - start)
    return samples


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time (ms) of ``fn()`` over ``repeats`` calls."""
    return statistics.median(seconds_per_round(lambda _: fn(), repeats)) * 1000


def median_ms_per_round(action: Callable[[int], object], rounds: int) -> float:
    """Median wall time (ms) of ``action(i)``, the round number passed so each call can differ."""
    return statistics.median(seconds_per_round(action, rounds)) * 1000


def median_us_per_round(action: Callable[[int], object], rounds: int) -> float:
    """:func:`median_ms_per_round` in microseconds."""
    return statistics.median(seconds_per_round(action, rounds)) * 1e6
