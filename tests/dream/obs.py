"""A plain observation value for the pure dream modules (any object with these fields fits)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Obs:
    id: str
    type: str
    content: str
    timestamp: datetime
    tags: tuple[str, ...] = ()


def obs(i: int, content: str, tags: tuple[str, ...] = (), type: str = "fact") -> Obs:
    return Obs(f"obs_{i}", type, content, T0 + timedelta(minutes=i), tags)
