"""Time in ranking: a question that names a time prefers the turns that speak of it.

A question naming a time ("on 3 May 2023", "in June 2022") rarely shares words with the turn
that answers it ("Dyed my hair last week!"). The times a turn mentions are resolved against
when it was said ("last night" said on 4 May is 3 May; "in May" said in June 2023 is May
2023), so both the session date and the times people mention count. Works on a candidate set
(keys to scores, turn text and timestamp fetched by key).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import TypeVar

K = TypeVar("K")

DATE_BOOST = 0.5
"""How much a mention of the time a question names lifts a candidate, times the best score:
the weight of recall's time stage (``RankingOptions.date_boost``) and of ``memory_search``'s."""

_MONTH_NUMBERS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTH_NAMES = "|".join(_MONTH_NUMBERS)
# "may" alone is usually the verb: a bare month name counts only for the other eleven.
_BARE_MONTH_NAMES = "|".join(name for name in _MONTH_NUMBERS if name != "may")
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_UNITS = {"day": 1, "week": 7, "weekend": 7, "month": 30, "year": 365}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}

_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? ({_MONTH_NAMES}),? (\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH_NAMES}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({_MONTH_NAMES}),? (\d{{4}})\b", re.I)
_MONTH = re.compile(rf"\b({_BARE_MONTH_NAMES})\b", re.I)
_YEAR = re.compile(r"\b(19[5-9]\d|20\d\d)\b")
# ISO 8601 days and months ("2026-05-01", "2026-05-01T09:30Z", "2026-05"), the form the tools
# take and agents write their notes in; not inside an identifier or a version ("ABC-2026-05").
_ISO = re.compile(r"(?<![\w.-])(\d{4})-(\d{2})(?:-(\d{2}))?(?![\d-]|\.\d)")
_AGO = re.compile(
    r"\b(a|an|one|two|three|four|five|six|\d+|few|couple of) (day|week|month|year)s? ago\b"
)
_LAST = re.compile(
    r"\b(last|past|previous|this past) "
    r"(night|week|weekend|month|year|summer|winter|spring|fall)\b"
)
_LAST_WEEKDAY = re.compile(
    r"\b(last|this past|on) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
)
_LAST_SPAN = re.compile(
    r"\b(?:in the |over the |during the )?(last|past) (two|three|four|five|six|\d+|few|couple of) "
    r"(day|week|month|year)s\b"
)
_NEXT = re.compile(r"\b(next|this coming) (week|weekend|month|year|summer)\b")
_NOW = re.compile(
    r"\b(today|tonight|this morning|this afternoon|this evening|just now|earlier today)\b"
)
_YESTERDAY = re.compile(r"\b(yesterday|last night)\b")
_RECENT = re.compile(
    r"\b(recently|the other day|a few days ago|lately|last few days|this week|"
    r"this weekend|this month)\b"
)


@dataclass(frozen=True)
class Interval:
    start: date
    end: date

    def overlaps(self, other: Interval) -> bool:
        return self.start <= other.end and other.start <= self.end


def _month(year: int, month: int) -> Interval:
    return Interval(date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]))


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def named_times(text: str) -> list[Interval]:
    """Absolute times written in ``text``: full dates, month and year, or a year alone."""
    found, iso_months = _iso_times(text)
    lowered = _ISO.sub(" ", text).lower()
    for day, month, year in _DAY_MONTH_YEAR.findall(lowered):
        when = _safe_date(int(year), _month_number(month), int(day))
        if when is not None:
            found.append(Interval(when, when))
    for month, day, year in _MONTH_DAY_YEAR.findall(lowered):
        when = _safe_date(int(year), _month_number(month), int(day))
        if when is not None:
            found.append(Interval(when, when))
    if not found:
        for month, year in _MONTH_YEAR.findall(lowered):
            found.append(_month(int(year), _month_number(month)))
        found.extend(iso_months)
    if not found:
        for year in _YEAR.findall(lowered):
            found.append(Interval(date(int(year), 1, 1), date(int(year), 12, 31)))
    return found


def _iso_times(text: str) -> tuple[list[Interval], list[Interval]]:
    """The ISO days and the ISO months written in ``text`` (impossible ones left out)."""
    days: list[Interval] = []
    months: list[Interval] = []
    for year, month, day in _ISO.findall(text):
        if not 1 <= int(month) <= 12:
            continue
        if not day:
            months.append(_month(int(year), int(month)))
        elif (when := _safe_date(int(year), int(month), int(day))) is not None:
            days.append(Interval(when, when))
    return days, months


def _month_number(name: str) -> int:
    return _MONTH_NUMBERS[name.lower()]


def mentioned_times(text: str, said: datetime | None) -> list[Interval]:
    """The times a turn mentions, resolved against when it was said (``said``)."""
    found = list(named_times(text))
    if said is None:
        return found
    lowered = text.lower()
    day = said.date()
    found.extend(_relative(lowered, day))
    if not _DAY_MONTH_YEAR.search(lowered) and not _MONTH_YEAR.search(lowered):
        for name in _MONTH.findall(lowered):
            month = _month_number(name)
            year = day.year if month <= day.month else day.year - 1
            found.append(_month(year, month))
    return found


def _relative(lowered: str, day: date) -> Iterator[Interval]:
    if _NOW.search(lowered):
        yield Interval(day, day)
    if _YESTERDAY.search(lowered):
        yield Interval(day - timedelta(days=1), day - timedelta(days=1))
    if _RECENT.search(lowered):
        yield Interval(day - timedelta(days=10), day)
    for count, unit in _AGO.findall(lowered):
        n = int(count) if count.isdigit() else _NUMBERS.get(count, 2)
        slack = max(1, _UNITS[unit] // 2)
        centre = _days_before(day, n * _UNITS[unit])
        if centre is not None and (start := _days_before(centre, slack)) is not None:
            yield Interval(start, centre + timedelta(days=slack))
    for _, unit in _LAST.findall(lowered):
        if unit == "night":
            continue
        if unit == "year":
            yield Interval(date(day.year - 1, 1, 1), date(day.year - 1, 12, 31))
        elif unit in ("summer", "winter", "spring", "fall"):
            yield Interval(day - timedelta(days=365), day)
        else:
            span = _UNITS[unit]
            yield Interval(day - timedelta(days=2 * span), day - timedelta(days=1))
    for _, count, unit in _LAST_SPAN.findall(lowered):
        n = int(count) if count.isdigit() else _NUMBERS.get(count, 3)
        start = _days_before(day, n * _UNITS[unit])
        yield Interval(start or date.min, day)
    for _, name in _LAST_WEEKDAY.findall(lowered):
        back = (day.weekday() - _WEEKDAYS[name]) % 7 or 7
        when = day - timedelta(days=back)
        yield Interval(when, when)
    for _, unit in _NEXT.findall(lowered):
        span = _UNITS.get(unit, 90)
        yield Interval(day + timedelta(days=1), day + timedelta(days=2 * span))


def _days_before(day: date, days: int) -> date | None:
    """``day`` less ``days`` days; None before the calendar's first day ("4,500 years ago")."""
    try:
        return day - timedelta(days=days)
    except OverflowError:
        return None


@lru_cache(maxsize=65_536)
def _mentioned(text: str, said: datetime | None) -> tuple[Interval, ...]:
    return tuple(mentioned_times(text, said))


def question_times(query: str, now: datetime | None = None) -> list[Interval]:
    """The times a question names: written out, and with ``now`` (when it is asked) also the
    relative ones ("a week ago", "last Saturday", "in March") resolved against it."""
    return mentioned_times(query, now) if now is not None else named_times(query)


def temporal_boost(
    wanted: Sequence[Interval],
    scores: Mapping[K, float],
    said: Callable[[K], tuple[str, datetime | None]],
    *,
    date_boost: float,
) -> dict[K, float]:
    """Scores with the time signal applied; ``said(key)`` gives a turn's text and timestamp.

    ``wanted`` are the times the question names (:func:`question_times`, read once by the
    caller, which skips the stage when there are none). They add ``date_boost`` times the
    best score to the turns that mention one of them, and to the turns said on the very day
    one names ("what did Nate make on 9 November 2022?": what he said that day is as specific
    as a mention of it); a turn merely said within a wider time named (a month, a year: many
    turns are) gains half that. ``date_boost`` 0 switches it off.
    """
    out = dict(scores)
    if not out or not wanted or date_boost <= 0:
        return out
    top = max(out.values()) or 1.0
    for key, value in scores.items():
        text, stamp = said(key)
        if any(t.overlaps(w) for t in _mentioned(text, stamp) for w in wanted):
            out[key] = value + date_boost * top
        elif stamp is not None and (share := _said_share(stamp.date(), wanted)):
            out[key] = value + share * date_boost * top
    return out


def _said_share(day: date, wanted: Sequence[Interval]) -> float:
    """How much being said on ``day`` counts: fully on a named day, half within a named span."""
    within = [w for w in wanted if w.start <= day <= w.end]
    if not within:
        return 0.0
    return 1.0 if any(w.start == w.end for w in within) else 0.5
