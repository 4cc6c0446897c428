"""Time signals in ranking: dates named in questions, times mentioned in turns."""

from __future__ import annotations

from datetime import date, datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from markus_memory.search.conversation import ConversationIndex, RankingOptions, Turn
from markus_memory.search.temporal import (
    Interval,
    mentioned_times,
    named_times,
    question_times,
    temporal_boost,
)


def at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, 12, 0, tzinfo=timezone.utc)


def day(year: int, month: int, number: int) -> Interval:
    return Interval(date(year, month, number), date(year, month, number))


def test_named_times_reads_full_dates_months_and_years() -> None:
    assert named_times("Who did Maria have dinner with on May 3, 2023?") == [day(2023, 5, 3)]
    assert named_times("What did Gina find on 1 February, 2023?") == [day(2023, 2, 1)]
    assert named_times("Where did Joanna travel to in July 2022?") == [
        Interval(date(2022, 7, 1), date(2022, 7, 31))
    ]
    assert named_times("What happened in 2021?") == [Interval(date(2021, 1, 1), date(2021, 12, 31))]
    assert named_times("What may Nate want to do?") == []


def test_named_times_reads_iso_dates_and_months() -> None:
    # The form the tools take and the agent writes its own notes in.
    assert named_times("What did we decide on 2026-05-01?") == [day(2026, 5, 1)]
    assert named_times("deploy notes from 2026-02") == [
        Interval(date(2026, 2, 1), date(2026, 2, 28))
    ]
    assert named_times("at 2026-05-01T09:30:00Z the job failed") == [day(2026, 5, 1)]
    assert named_times("between 2026-05-01 and 2026-05-03") == [day(2026, 5, 1), day(2026, 5, 3)]
    assert named_times("build 2026-13-45 failed") == []  # no such day, and no year either
    # Inside an identifier or a version number it is no day or month.
    assert day(2026, 5, 1) not in named_times("ticket ABC-2026-05-01")
    assert Interval(date(2026, 5, 1), date(2026, 5, 31)) not in named_times("version 1.2026-05")


@settings(deadline=None)
@given(st.dates(min_value=date(1950, 1, 1), max_value=date(2099, 12, 31)))
def test_an_iso_date_parses_back_to_that_day(when: date) -> None:
    assert named_times(f"What happened on {when.isoformat()}?") == [Interval(when, when)]


@settings(deadline=None)
@given(st.dates(min_value=date(1950, 1, 1), max_value=date(2099, 12, 31)), st.booleans())
def test_a_rendered_date_parses_back_to_that_day(when: date, day_first: bool) -> None:
    text = (
        f"on {when.day} {when:%B}, {when.year}"
        if day_first
        else f"on {when:%B} {when.day}, {when.year}"
    )
    assert named_times(f"What happened {text}?") == [Interval(when, when)]


def test_mentioned_times_resolve_against_when_the_turn_was_said() -> None:
    said = at(2023, 5, 4)  # a Thursday
    assert day(2023, 5, 3) in mentioned_times("We made dinner last night!", said)
    assert day(2023, 4, 28) in mentioned_times("Here is a pic from last Friday", said)
    assert day(2023, 5, 4) in mentioned_times("I finished it today", said)
    ago = mentioned_times("I started two weeks ago", said)
    assert any(t.start <= date(2023, 4, 20) <= t.end for t in ago)
    assert mentioned_times("in December we moved", at(2023, 1, 10)) == [
        Interval(date(2022, 12, 1), date(2022, 12, 31))
    ]
    assert mentioned_times("You may like it", said) == []
    assert mentioned_times("We went there last week", None) == []


def test_temporal_boost_lifts_turns_that_speak_of_the_named_time() -> None:
    turns = {
        "mention": ("We made dinner together last night!", at(2023, 5, 4)),
        "same-day": ("Just checking in.", at(2023, 5, 3)),
        "other": ("We made dinner together.", at(2023, 6, 20)),
    }
    scores = {"mention": 0.0, "same-day": 0.0, "other": 2.0}
    boosted = temporal_boost(
        question_times("Who did Maria have dinner with on May 3, 2023?"),
        scores,
        turns.__getitem__,
        date_boost=1.0,
    )
    assert boosted == {"mention": 2.0, "same-day": 2.0, "other": 2.0}
    off = temporal_boost(
        question_times("dinner on May 3, 2023"), scores, turns.__getitem__, date_boost=0.0
    )
    assert off == scores
    undated = temporal_boost(question_times("dinner"), scores, turns.__getitem__, date_boost=1.0)
    assert undated == scores


def test_said_on_the_named_day_counts_as_a_mention_said_in_a_named_month_half() -> None:
    turns = {
        "said-that-day": ("Look what I made!", at(2023, 5, 3)),
        "said-that-month": ("Look what I made!", at(2023, 5, 20)),
        "mentions-the-month": ("I made it back in May 2023.", at(2023, 6, 2)),
    }
    scores = dict.fromkeys(turns, 1.0)
    on_the_day = temporal_boost(
        question_times("What did she make on 3 May, 2023?"),
        scores,
        turns.__getitem__,
        date_boost=1.0,
    )
    # the month mentioned holds the day named: it overlaps it
    assert on_the_day == {"said-that-day": 2.0, "said-that-month": 1.0, "mentions-the-month": 2.0}
    in_the_month = temporal_boost(
        question_times("What did she make in May 2023?"), scores, turns.__getitem__, date_boost=1.0
    )
    assert in_the_month == {"said-that-day": 1.5, "said-that-month": 1.5, "mentions-the-month": 2.0}


def test_a_date_question_lifts_the_turn_that_speaks_of_that_day(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from markus_memory.storage._sqlite.store import SqliteStore

    said = at(2023, 5, 22)
    dialogue = [
        ("s1", "Ben", "Camping, camping: we went camping at the lake.", at(2023, 3, 2)),
        ("s2", "Ben", "We went camping in the mountains last weekend.", said),
    ]
    turns = [
        Turn(session, n, "user", text, stamp, speaker, {"n": n})
        for n, (session, speaker, text, stamp) in enumerate(dialogue)
    ]
    question = "Where did Ben go camping on 20 May, 2023?"
    store = SqliteStore(tmp_path / "data.db")
    for boost, first in ((0.5, 1), (0.0, 0)):
        idx = ConversationIndex(
            store.transcripts, f"a{first}", options=RankingOptions(date_boost=boost)
        )
        idx.add(turns)
        assert [hit.turn.metadata["n"] for hit in idx.search(question, limit=1)] == [first]
    store.close()


def test_a_time_far_beyond_the_calendar_is_no_time_and_never_breaks_a_recall(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from markus_memory.storage._sqlite.store import SqliteStore

    said = at(2023, 5, 4)
    assert mentioned_times("The pyramids rose 4500 years ago.", said) == []
    assert mentioned_times("dinosaurs lived 100000000 days ago", said) == []
    store = SqliteStore(tmp_path / "data.db")
    idx = ConversationIndex(store.transcripts, "a", options=RankingOptions())
    idx.add([Turn("s1", 0, "user", "The pyramids rose 4500 years ago, a guide said.", said)])
    assert len(idx.search("What did the guide say in May 2023 about pyramids?", limit=1)) == 1
    store.close()


def test_a_span_back_from_when_it_was_said() -> None:
    said = at(2023, 5, 30)
    assert Interval(date(2023, 3, 1), date(2023, 5, 30)) in mentioned_times(
        "How many plants did I buy in the past three months?", said
    )
    assert Interval(date(2023, 5, 16), date(2023, 5, 30)) in mentioned_times(
        "over the last 2 weeks I ran daily", said
    )


def test_a_question_asked_at_a_time_reads_its_relative_times_against_it(tmp_path) -> None:  # type: ignore[no-untyped-def]

    from markus_memory.storage._sqlite.store import SqliteStore

    asked = at(2023, 6, 22)
    assert question_times("What did I do a week ago?") == []
    assert any(
        t.start <= date(2023, 6, 15) <= t.end
        for t in question_times("What did I do a week ago?", asked)
    )
    turns = [
        Turn("s1", 0, "user", "I went to a wedding, my cousin's.", at(2023, 1, 10), None, {"n": 0}),
        Turn("s2", 0, "user", "I went to a wedding, a friend's.", at(2023, 6, 15), None, {"n": 1}),
    ]
    store = SqliteStore(tmp_path / "data.db")
    idx = ConversationIndex(store.transcripts, "a", options=RankingOptions())
    idx.add(turns)
    question = "Whose wedding did I go to a week ago?"
    assert [h.turn.metadata["n"] for h in idx.search(question, limit=1)] == [0]
    assert [h.turn.metadata["n"] for h in idx.search(question, limit=1, now=asked)] == [1]
    store.close()
