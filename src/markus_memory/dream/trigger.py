"""When a dream runs (the original's schedule, with its defects fixed: it consumed
the day's slot before the work, kept it only in memory, and its heavy mode was unreachable).

At least ``dream_min_observations`` observations, and at most one dream per UTC day. When the
buffer is near its cap (``dream_heavy_min_observations``, reachable, unlike the original's
"more than 500") up to ``dream_heavy_runs_per_day`` dreams, one per equal slice of the day.
Only *successful* runs consume a slot, and they are read from the audit log, so the record
survives restarts and a failed run can be retried.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..config import Limits


@dataclass(frozen=True)
class TriggerDecision:
    """Whether to dream now, in which mode, and why (for logs and the CLI)."""

    run: bool
    mode: str  # "normal" or "heavy"
    reason: str


def _day_start(moment: datetime) -> datetime:
    utc = moment.astimezone(timezone.utc)
    return utc.replace(hour=0, minute=0, second=0, microsecond=0)


def decide(
    observation_count: int,
    successful_runs: Iterable[datetime],
    now: datetime,
    limits: Limits,
) -> TriggerDecision:
    """The trigger policy as a pure function of the buffer size and past successful runs."""
    heavy = observation_count >= limits.dream_heavy_min_observations
    mode = "heavy" if heavy else "normal"
    if observation_count < limits.dream_min_observations:
        return TriggerDecision(
            False,
            mode,
            f"{observation_count} observations, fewer than {limits.dream_min_observations}",
        )
    day = _day_start(now)
    today = [
        r for r in successful_runs if day <= r.astimezone(timezone.utc) < day + timedelta(days=1)
    ]
    if not heavy:
        if today:
            return TriggerDecision(False, mode, "already dreamed today")
        return TriggerDecision(True, mode, "no dream yet today")
    slots = max(1, limits.dream_heavy_runs_per_day)
    if len(today) >= slots:
        return TriggerDecision(False, mode, f"already dreamed {len(today)} times today")
    width = timedelta(days=1) / slots
    slot_start = day + width * int((now.astimezone(timezone.utc) - day) / width)
    if any(r.astimezone(timezone.utc) >= slot_start for r in today):
        return TriggerDecision(False, mode, "already dreamed in this part of the day")
    return TriggerDecision(True, mode, "buffer near its cap and this part of the day is free")
