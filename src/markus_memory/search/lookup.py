"""Exact lookups over observations for internal callers: tags, markers and newest-first.

The original found its own markers with the OR keyword search: the
daily-report check matched any earlier day's marker, and "the last heartbeat summary" was the
*least relevant* hit. Internal callers use these exact, time-ordered helpers instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from .keyword import ObservationLike

DAILY_REPORT_TAG = "daily-report"


def newest_first(
    observations: Sequence[ObservationLike],
    *,
    type: str | None = None,
    tag: str | None = None,
    limit: int | None = None,
) -> list[ObservationLike]:
    """Observations (of ``type``, carrying ``tag``) newest first by timestamp, then file order."""
    chosen = [
        (position, obs)
        for position, obs in enumerate(observations)
        if (type is None or obs.type == type) and (tag is None or tag in obs.tags)
    ]
    chosen.sort(key=lambda pair: (pair[1].timestamp, pair[0]), reverse=True)
    result = [obs for _, obs in chosen]
    return result if limit is None else result[: max(limit, 0)]


def latest(
    observations: Sequence[ObservationLike], *, type: str | None = None, tag: str | None = None
) -> ObservationLike | None:
    """The newest observation (of ``type``, carrying ``tag``), or None."""
    found = newest_first(observations, type=type, tag=tag, limit=1)
    return found[0] if found else None


def daily_report_id(day: date) -> str:
    return f"daily_report_{day.isoformat()}"


def daily_report_content(day: date) -> str:
    return f"daily-report:{day.isoformat()} created"


def has_daily_report(observations: Sequence[ObservationLike], day: date) -> bool:
    """Whether the manager's daily-report marker for ``day`` exists (and no other day's counts)."""
    marker_id, marker_content = daily_report_id(day), daily_report_content(day)
    return any(
        obs.id == marker_id
        or (DAILY_REPORT_TAG in obs.tags and obs.content.strip() == marker_content)
        for obs in observations
    )
