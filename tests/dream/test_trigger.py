"""The trigger policy: the original's schedule, with its day-slot and heavy-mode defects fixed."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from markus_memory.config import Limits
from markus_memory.dream.trigger import decide

LIMITS = Limits()
NOON = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def test_needs_fifty_observations() -> None:
    assert not decide(49, [], NOON, LIMITS).run
    assert decide(50, [], NOON, LIMITS).run


def test_once_per_utc_day() -> None:
    assert not decide(100, [NOON - timedelta(hours=11)], NOON, LIMITS).run
    assert decide(100, [NOON - timedelta(hours=13)], NOON, LIMITS).run


def test_regression_14_1_10_heavy_mode_is_reachable_below_the_buffer_cap() -> None:
    assert LIMITS.dream_heavy_min_observations < LIMITS.max_observations
    decision = decide(
        LIMITS.dream_heavy_min_observations, [NOON - timedelta(hours=7)], NOON, LIMITS
    )
    assert decision.run and decision.mode == "heavy"


def test_heavy_mode_runs_once_per_quarter_day_at_most_four_times() -> None:
    assert not decide(480, [NOON], NOON + timedelta(hours=5), LIMITS).run
    assert decide(480, [NOON - timedelta(minutes=1)], NOON, LIMITS).run
    day = NOON.replace(hour=0)
    runs = [day + timedelta(hours=h) for h in (0, 6, 12, 18)]
    assert not decide(480, runs, day + timedelta(hours=23), LIMITS).run
    assert decide(480, runs[:3], day + timedelta(hours=23), LIMITS).run


def test_runs_from_other_days_do_not_count() -> None:
    yesterday = [NOON - timedelta(days=1, hours=h) for h in range(6)]
    assert decide(480, yesterday, NOON, LIMITS).run
    assert decide(60, yesterday, NOON, LIMITS).run
