from __future__ import annotations

from datetime import date, timedelta

from markus_memory.search.keyword import keyword_search
from markus_memory.search.lookup import (
    has_daily_report,
    latest,
    newest_first,
)

from .fakes import T0, Obs


def marker(day: date) -> Obs:
    return Obs(
        f"daily_report_{day.isoformat()}",
        f"daily-report:{day.isoformat()} created",
        "note",
        ("daily-report",),
        T0,
    )


def test_item28_daily_report_detection_is_exact_per_day() -> None:
    yesterday, today = date(2026, 3, 1), date(2026, 3, 2)
    observations = [
        marker(yesterday),
        Obs("obs_1", f"planning notes for {today.isoformat()}"),
    ]
    # the original's OR search sees yesterday's marker as a hit for today's query
    assert keyword_search(f"daily-report:{today.isoformat()}", observations)
    assert not has_daily_report(observations, today)
    assert has_daily_report(observations, yesterday)
    assert has_daily_report([*observations, marker(today)], today)


def test_item28_daily_report_marker_by_tag_and_content_without_id() -> None:
    day = date(2026, 3, 2)
    tagged = Obs("obs_9", f"daily-report:{day} created", "note", ("daily-report",))
    untagged = Obs("obs_8", f"daily-report:{day} created")
    assert has_daily_report([tagged], day)
    assert not has_daily_report([untagged], day)


def test_item28_last_heartbeat_summary_is_newest_not_least_relevant() -> None:
    observations = [
        Obs("obs_3", "heartbeat summary: all quiet", tags=("heartbeat",), timestamp=T0),
        Obs(
            "obs_1",
            "heartbeat summary: deploy failed",
            tags=("heartbeat",),
            timestamp=T0 + timedelta(hours=2),
        ),
        Obs("obs_2", "heartbeat noise", timestamp=T0 + timedelta(hours=3)),
    ]
    ranked = keyword_search("heartbeat summary", observations)
    assert ranked[-1].id != "obs_1"  # what the original picked was not the newest
    newest = latest(observations, tag="heartbeat")
    assert newest is not None and newest.id == "obs_1"


def test_newest_first_filters_and_breaks_ties_by_file_order() -> None:
    observations = [
        Obs("a", "x", type="fact"),
        Obs("b", "y", type="note"),
        Obs("c", "z", type="fact"),
    ]
    assert [o.id for o in newest_first(observations)] == ["c", "b", "a"]
    assert [o.id for o in newest_first(observations, type="fact", limit=1)] == ["c"]
    assert latest([], tag="x") is None
