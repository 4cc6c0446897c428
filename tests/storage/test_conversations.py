"""The conversations the store holds, and daily logs in the database: both backends."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from markus_memory.errors import InvalidInputError
from markus_memory.storage.episodic import EpisodicStore
from markus_memory.storage.repos.conversations import NewEntry
from markus_memory.storage.repos.transcripts import TranscriptMessage

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


def entry(n: int, text: str | None = None) -> NewEntry:
    said = text if text is not None else f"turn {n} about the lighthouse"
    body = json.dumps({"role": "user", "content": said, "n": n})
    return NewEntry("user", said, body, T0 + timedelta(seconds=n))


def test_an_append_numbers_stores_and_indexes_in_order(store: EpisodicStore) -> None:
    assert store.conversations.conversation("a1", "h1") is None
    assert (
        store.conversations.append_conversation(
            "a1", "h1", "history", [entry(0), entry(1)], T0
        ).next_seq
        == 0
    )
    assert (
        store.conversations.append_conversation("a1", "h1", "history", [entry(2)], T0).next_seq == 2
    )
    head = store.conversations.conversation("a1", "h1")
    assert head is not None
    assert (head.kind, head.first_seq, head.next_seq, head.count) == ("history", 0, 3, 3)
    got = store.conversations.conversation_entries("a1", "h1")
    assert [e.seq for e in got] == [0, 1, 2]
    assert [json.loads(e.body or "")["n"] for e in got] == [0, 1, 2]
    assert [
        e.seq for e in store.conversations.conversation_entries("a1", "h1", start=1, limit=1)
    ] == [1]
    assert [
        e.seq for e in store.conversations.conversation_entries("a1", "h1", start=1, stop=3)
    ] == [1, 2]
    hits = store.transcripts.search_transcript("a1", "lighthouse")
    assert {h.seq for h in hits if h.session_id == "h1"} == {0, 1, 2}
    assert store.conversations.conversation("a2", "h1") is None  # another agent's id sees nothing


def test_the_kinds_are_told_apart(store: EpisodicStore) -> None:
    store.conversations.append_conversation("a1", "s1", "markus", [entry(0)], T0)
    with pytest.raises(InvalidInputError, match="markus conversation"):
        store.conversations.append_conversation("a1", "s1", "history", [entry(1)], T0)
    assert [h.session_id for h in store.conversations.conversations("a1", "history")] == []
    assert [h.session_id for h in store.conversations.conversations("a1")] == ["s1"]


def test_small_and_large_appends_index_alike_and_a_refused_one_leaves_nothing(
    store: EpisodicStore,
) -> None:
    """On PostgreSQL a few messages are appended pipelined (their statements sent together)
    and a large batch is not (its postings go by COPY): both index every message, and an
    append refused inside the pipeline writes nothing and leaves the store usable."""
    store.conversations.append_conversation("a1", "s1", "markus", [entry(0)], T0)
    with pytest.raises(InvalidInputError):
        store.conversations.append_conversation("a1", "s1", "history", [entry(1)], T0)
    big = [entry(n, f"turn {n} about the harbour") for n in range(1, 201)]
    store.conversations.append_conversation("a1", "h1", "history", big, T0)
    store.conversations.append_conversation(
        "a1", "h1", "history", [entry(201, "the harbour at dusk")], T0
    )
    assert [e.seq for e in store.conversations.conversation_entries("a1", "s1")] == [0]
    hits = store.transcripts.search_transcript("a1", "harbour", limit=500)
    assert {h.seq for h in hits if h.session_id == "h1"} == set(range(201))


def test_a_conversation_numbers_on_past_messages_recorded_from_files(
    store: EpisodicStore,
) -> None:
    store.transcripts.import_transcript(
        "a1",
        "old",
        [TranscriptMessage("a1", "old", n, "user", f"filed {n}", T0) for n in range(3)],
        synced_at=T0,
    )
    assert (
        store.conversations.append_conversation("a1", "old", "history", [entry(9)], T0).next_seq
        == 3
    )
    bodies = [e.body for e in store.conversations.conversation_entries("a1", "old")]
    assert bodies[:3] == [None, None, None] and bodies[3] is not None


def test_drop_last_takes_the_text_out_of_recall(store: EpisodicStore) -> None:
    store.conversations.append_conversation(
        "a1", "h1", "history", [entry(0), entry(1, "my SSN is 123")], T0
    )
    dropped = store.conversations.drop_last_entry("a1", "h1")
    assert dropped is not None and dropped.seq == 1 and dropped.text == "my SSN is 123"
    assert store.transcripts.search_transcript("a1", "SSN") == []
    assert (
        store.conversations.append_conversation("a1", "h1", "history", [entry(5)], T0).next_seq == 1
    )
    assert store.conversations.drop_last_entry("a1", "nothing") is None


def test_forgetting_a_conversation_drops_its_head_and_text(store: EpisodicStore) -> None:
    store.conversations.append_conversation("a1", "h1", "history", [entry(0, "secret plan")], T0)
    assert store.transcripts.forget_session("a1", "h1") == 1
    assert store.conversations.conversation("a1", "h1") is None
    assert store.transcripts.search_transcript("a1", "secret") == []


def test_compaction_moves_only_a_markus_view_forward(store: EpisodicStore) -> None:
    store.conversations.append_conversation("a1", "s1", "markus", [entry(n) for n in range(5)], T0)
    assert store.conversations.compact_conversation("a1", "s1", 3, '{"role":"system"}')
    assert not store.conversations.compact_conversation("a1", "s1", 2, "older")
    head = store.conversations.conversation("a1", "s1")
    assert head is not None and (head.view_from, head.summary) == (3, '{"role":"system"}')
    store.conversations.append_conversation("a1", "h1", "history", [entry(0)], T0)
    assert not store.conversations.compact_conversation("a1", "h1", 1, "never")


def test_adopting_a_recorded_session_is_idempotent(store: EpisodicStore) -> None:
    store.transcripts.import_transcript(
        "a1",
        "s1",
        [TranscriptMessage("a1", "s1", n, "user", f"filed {n}", T0) for n in range(4)],
        synced_at=T0,
    )
    kwargs = {
        "started_at": T0,
        "last_activity_at": T0,
        "first_seq": 0,
        "next_seq": 4,
        "view_from": 2,
        "summary": "sum",
        "bodies": [(2, '{"a":2}'), (3, '{"a":3}')],
    }
    assert store.conversations.adopt_entries("a1", "s1", "markus", **kwargs)  # type: ignore[arg-type]
    assert not store.conversations.adopt_entries("a1", "s1", "markus", **kwargs)  # type: ignore[arg-type]
    assert [e.body for e in store.conversations.conversation_entries("a1", "s1")] == [
        None,
        None,
        '{"a":2}',
        '{"a":3}',
    ]
    assert (
        store.conversations.append_conversation("a1", "s1", "markus", [entry(7)], T0).next_seq == 4
    )


def test_details_are_kept(store: EpisodicStore) -> None:
    assert not store.conversations.set_conversation_details("a1", "h1", title="t", details=None)
    store.conversations.start_conversation("a1", "h1", "history", T0)
    assert store.conversations.set_conversation_details(
        "a1", "h1", title="Trip", details={"k": [1, "x"]}
    )
    head = store.conversations.conversation("a1", "h1")
    assert head is not None and (head.title, head.details) == ("Trip", {"k": [1, "x"]})


def test_daily_logs_keep_the_imported_file_first_and_import_once(store: EpisodicStore) -> None:
    store.daily_logs.append_daily_log("a1", "2026-12-01", "\n## [10:00:00] Agent: a1\n\nlater\n")
    assert store.daily_logs.import_daily_log("a1", "2026-12-01", "# filed\n")
    assert not store.daily_logs.import_daily_log("a1", "2026-12-01", "# filed\n")
    assert store.daily_logs.daily_log_text("a1", "2026-12-01") == (
        "# filed\n\n## [10:00:00] Agent: a1\n\nlater\n"
    )
    assert store.daily_logs.daily_log_text("a1", "2026-12-02") is None
    assert store.daily_logs.daily_log_days("a1") == ["2026-12-01"]
    assert store.daily_logs.daily_log_days("a2") == []


def test_a_day_can_be_replaced_whole(store: EpisodicStore) -> None:
    store.daily_logs.append_daily_log("a1", "2026-12-01", "one\n")
    store.daily_logs.replace_daily_log("a1", "2026-12-01", "two\n")
    assert store.daily_logs.daily_log_text("a1", "2026-12-01") == "two\n"
    store.daily_logs.append_daily_log("a1", "2026-12-01", "three\n")
    assert store.daily_logs.daily_log_text("a1", "2026-12-01") == "two\nthree\n"
    store.daily_logs.replace_daily_log("a1", "2026-12-01", None)
    assert store.daily_logs.daily_log_text("a1", "2026-12-01") is None
