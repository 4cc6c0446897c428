"""Backend conformance: every EpisodicStore implementation must pass this suite."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from markus_memory.errors import InvalidInputError
from markus_memory.storage.base import search_terms
from markus_memory.storage.episodic import EpisodicStore
from markus_memory.storage.repos.activities import Activity, ActivityEnd
from markus_memory.storage.repos.side import ChatMessage, ChatSession, Decision, MailboxItem
from markus_memory.storage.repos.transcripts import TranscriptMark, TranscriptMessage

from .conftest import StoreFactory

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def act(
    n: int,
    agent: str = "a1",
    *,
    type: str = "task",
    label: str = "Work",
    task_id: str | None = None,
    mailbox_item_id: str | None = None,
    summary: str = "",
) -> Activity:
    return Activity(
        id=f"act-{agent}-{n}",
        agent_id=agent,
        type=type,
        label=label,
        started_at=T0 + timedelta(minutes=n),
        task_id=task_id,
        mailbox_item_id=mailbox_item_id,
        summary=summary,
    )


def end(summary: str = "", keywords: tuple[str, ...] = (), success: bool = True) -> ActivityEnd:
    return ActivityEnd(
        ended_at=T0 + timedelta(hours=1),
        total_tokens=120,
        total_tools=2,
        success=success,
        summary=summary,
        keywords=keywords,
    )


# -- activities ------------------------------------------------------------------------------


def test_insert_get_and_end_round_trip(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1, task_id="t1", mailbox_item_id="mb1"))
    got = store.activities.get_activity("a1", "act-a1-1")
    assert got == act(1, task_id="t1", mailbox_item_id="mb1")
    assert store.activities.end_activity(
        "a1", "act-a1-1", end("Built it", ("shell", "x.py"), False)
    )
    done = store.activities.get_activity("a1", "act-a1-1")
    assert done is not None
    assert (done.summary, done.keywords, done.success) == ("Built it", ("shell", "x.py"), False)
    assert (done.total_tokens, done.total_tools) == (120, 2)
    assert done.ended_at == T0 + timedelta(hours=1)


def test_updating_a_missing_or_foreign_activity_does_not_throw(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1, agent="a2"))
    assert store.activities.end_activity("a1", "act-missing", end()) is False
    assert store.activities.end_activity("a1", "act-a2-1", end("stolen")) is False
    other = store.activities.get_activity("a2", "act-a2-1")
    assert other is not None and other.summary == ""


def test_logs_get_sequential_seq_and_come_back_in_order(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1))
    seqs = [
        store.activities.append_log(
            "a1", "act-a1-1", "text", f"line {i}", {"i": i, "nested": [1, 2]}, T0
        )
        for i in range(5)
    ]
    assert seqs == [1, 2, 3, 4, 5]
    logs = store.activities.activity_logs("a1", "act-a1-1")
    assert [log.seq for log in logs] == [1, 2, 3, 4, 5]
    assert [log.content for log in logs] == [f"line {i}" for i in range(5)]
    assert logs[2].metadata == {"i": 2, "nested": [1, 2]}
    assert logs[0].created_at == T0


def test_another_agent_can_neither_read_nor_append_logs(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1, agent="a2"))
    store.activities.append_log("a2", "act-a2-1", "text", "secret", {}, T0)
    assert store.activities.get_activity("a1", "act-a2-1") is None
    assert store.activities.activity_logs("a1", "act-a2-1") == []
    assert store.activities.append_log("a1", "act-a2-1", "text", "x", {}, T0) is None
    assert len(store.activities.activity_logs("a2", "act-a2-1")) == 1


def test_query_filters_by_type_task_and_before_newest_first(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1, type="task", task_id="t1"))
    store.activities.insert_activity(act(2, type="chat"))
    store.activities.insert_activity(act(3, type="heartbeat"))
    store.activities.insert_activity(act(4, type="task", task_id="t2"))
    store.activities.insert_activity(act(5, agent="a2", type="task"))
    ids = [a.id for a in store.activities.query_activities("a1")]
    assert ids == ["act-a1-4", "act-a1-3", "act-a1-2", "act-a1-1"]
    by_types = store.activities.query_activities("a1", types=["task", "chat"])
    assert [a.id for a in by_types] == ["act-a1-4", "act-a1-2", "act-a1-1"]
    by_task = store.activities.query_activities("a1", types=["task"], task_id="t1")
    assert [a.id for a in by_task] == ["act-a1-1"]
    before = store.activities.query_activities("a1", before=T0 + timedelta(minutes=3))
    assert [a.id for a in before] == ["act-a1-2", "act-a1-1"]
    assert [a.id for a in store.activities.query_activities("a1", limit=2)] == [
        "act-a1-4",
        "act-a1-3",
    ]
    assert store.activities.query_activities("nobody") == []


def test_lookup_by_mailbox_item_single_batch_and_empty(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1, mailbox_item_id="mb1"))
    store.activities.insert_activity(act(2, mailbox_item_id="mb2"))
    store.activities.insert_activity(act(3, agent="a2", mailbox_item_id="mb3"))
    one = store.activities.activity_for_mailbox_item("a1", "mb1")
    assert one is not None and one.id == "act-a1-1"
    assert store.activities.activity_for_mailbox_item("a1", "mb3") is None
    batch = store.activities.activities_for_mailbox_items("a1", ["mb1", "mb2", "mb3", "nope"])
    assert {k: v.id for k, v in batch.items()} == {"mb1": "act-a1-1", "mb2": "act-a1-2"}
    assert store.activities.activities_for_mailbox_items("a1", []) == {}


def test_a_mailbox_item_maps_to_its_latest_activity(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1, mailbox_item_id="mb1"))
    store.activities.insert_activity(act(3, mailbox_item_id="mb1"))
    store.activities.insert_activity(act(2, mailbox_item_id="mb1"))
    latest = store.activities.activity_for_mailbox_item("a1", "mb1")
    assert latest is not None and latest.id == "act-a1-3"
    batch = store.activities.activities_for_mailbox_items("a1", ["mb1", "mb1"])
    assert {k: v.id for k, v in batch.items()} == {"mb1": "act-a1-3"}


# -- search ----------------------------------------------------------------------------------


def test_search_requires_every_term_across_label_summary_keywords(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1, label="Build feature X"))
    store.activities.insert_activity(act(2, label="Review docs"))
    store.activities.end_activity("a1", "act-a1-2", end("wrote a build script"))
    hits = store.activities.search_activities("a1", "build feature")
    # The one all-terms match comes first; the partial match only fills the remaining slots.
    assert [h.activity.id for h in hits] == ["act-a1-1", "act-a1-2"]
    assert [
        h.activity.id for h in store.activities.search_activities("a1", "build feature", limit=1)
    ] == ["act-a1-1"]
    assert store.activities.search_activities("a1", "a") == []
    assert store.activities.search_activities("a1", "   ") == []


def test_search_fills_with_any_term_when_all_terms_match_too_few(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1, label="deploy the gateway"))
    store.activities.insert_activity(act(2, label="gateway timeout investigation"))
    store.activities.insert_activity(act(3, label="unrelated cleanup"))
    hits = store.activities.search_activities("a1", "gateway timeout", limit=5)
    assert [h.activity.id for h in hits] == ["act-a1-2", "act-a1-1"]
    assert hits[0].score >= hits[1].score


def test_search_finds_log_content_after_end_and_never_other_agents(
    store: EpisodicStore,
) -> None:
    for agent in ("a1", "a2"):
        store.activities.insert_activity(act(1, agent=agent, label="Routine"))
        store.activities.append_log(
            agent, f"act-{agent}-1", "tool_end", "ENOENT reading config.yaml", {}, T0
        )
        store.activities.end_activity(agent, f"act-{agent}-1", end())
    hits = store.activities.search_activities("a1", "enoent")
    assert [h.activity.id for h in hits] == ["act-a1-1"]


def test_search_ranks_label_hits_above_log_hits(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1, label="Routine"))
    store.activities.append_log(
        "a1", "act-a1-1", "text", "mentioned kubernetes once " + "x " * 50, {}, T0
    )
    store.activities.end_activity("a1", "act-a1-1", end())
    store.activities.insert_activity(act(2, label="Kubernetes upgrade"))
    hits = store.activities.search_activities("a1", "kubernetes")
    assert [h.activity.id for h in hits] == ["act-a1-2", "act-a1-1"]


@pytest.mark.parametrize(
    "query",
    [
        "NOT",
        "OR",
        "AND",
        '"',
        '"unbalanced',
        "%",
        "_",
        "*",
        "a:b",
        "(",
        ")",
        "NEAR(x y)",
        "^x",
        "label:secret",
        "-x",
        "x*",
        "%_%",
        "\\",
        "'",
        "\x00",
        "ε",
    ],
)
def test_search_treats_fts_syntax_as_literal_text(store: EpisodicStore, query: str) -> None:
    store.activities.insert_activity(act(1, label="plain label with NOT and OR words"))
    hits = store.activities.search_activities("a1", query)
    assert isinstance(hits, list)


def test_search_percent_and_underscore_are_not_wildcards(store: EpisodicStore) -> None:
    store.activities.insert_activity(act(1, label="abc"))
    assert store.activities.search_activities("a1", "%%") == []
    assert store.activities.search_activities("a1", "__") == []
    store.activities.insert_activity(act(2, label="use NOT operator"))
    assert [h.activity.id for h in store.activities.search_activities("a1", "not operator")] == [
        "act-a1-2"
    ]


def test_a_match_set_over_the_candidate_bound_is_ordered_by_recency(
    store_factory: StoreFactory,
) -> None:
    store = store_factory(search_candidates=3)
    labels = ["routine deploy", "Deploy api", "routine", "deploy notes", "deploy deploy", "x"]
    for i, label in enumerate(labels):
        store.activities.insert_activity(
            Activity(
                id=f"a{i}",
                agent_id="a1",
                type="task",
                label=label,
                started_at=T0 + timedelta(minutes=i),
                summary="deploy" if i == 2 else "",
            )
        )
    store.activities.insert_activity(
        Activity(id="other", agent_id="a2", type="task", label="deploy", started_at=T0)
    )
    # 5 of a1's activities match "deploy" (> 3 candidates): label/keyword hits newest first,
    # then the summary-only hit; never the other agent's.
    hits = store.activities.search_activities("a1", "deploy", limit=10)
    assert [h.activity.id for h in hits] == ["a4", "a3", "a1", "a0", "a2"]
    assert all(h.score == 0.0 for h in hits)
    # Under the bound the ranking is by relevance: the summary-only hit last.
    ranked = store_factory(search_candidates=100).activities.search_activities(
        "a1", "deploy", limit=10
    )
    assert {h.activity.id for h in ranked} == {"a0", "a1", "a2", "a3", "a4"}
    assert ranked[-1].activity.id == "a2"
    assert all(h.score > 0 for h in ranked)


def test_transcript_search_ranks_only_the_newest_postings_of_a_term_over_the_bound(
    store_factory: StoreFactory,
) -> None:
    store = store_factory(search_candidates=2)
    for seq in range(4):
        store.transcripts.index_message("a1", "s1", seq, "user", f"status update {seq}", T0)
    store.transcripts.index_message("a2", "s1", 0, "user", "status update", T0)
    hits = store.transcripts.search_transcript("a1", "status", limit=3)
    assert sorted(h.seq for h in hits) == [2, 3] and all(h.score > 0 for h in hits)
    session_hits = store.transcripts.search_transcript("a1", "status", session_id="s1", limit=3)
    assert sorted(h.seq for h in session_hits) == [2, 3]
    # Re-indexing keeps the message's place; other agents stay invisible.
    store.transcripts.index_message("a1", "s1", 0, "user", "rare words now", T0)
    assert [h.seq for h in store.transcripts.search_transcript("a1", "rare")] == [0]
    assert all(h.agent_id == "a1" for h in store.transcripts.search_transcript("a1", "update"))


def test_search_terms_are_the_analysers_distinct_query_terms() -> None:
    assert search_terms("Build  a BUILD features x") == ["build", "featur"]
    assert search_terms("what is the") == [] and search_terms("") == []
    assert len(search_terms(" ".join(f"t{i}" for i in range(100)))) == 16


# -- mailbox and decisions ------------------------------------------------------------------


def test_mailbox_items_insert_or_replace_and_list(store: EpisodicStore) -> None:
    item = MailboxItem(
        id="mb1", agent_id="a1", source_type="chat", queued_at=T0, payload={"text": "hi"}
    )
    store.mailbox.save_mailbox_item(item)
    store.mailbox.save_mailbox_item(
        MailboxItem(id="mb2", agent_id="a1", source_type="task", queued_at=T0, priority=0)
    )
    store.mailbox.save_mailbox_item(
        MailboxItem(id="mb3", agent_id="a2", source_type="x", queued_at=T0)
    )
    assert store.mailbox.get_mailbox_item("a1", "mb1") == item
    assert store.mailbox.get_mailbox_item("a1", "mb3") is None
    assert [m.id for m in store.mailbox.mailbox_items("a1")] == ["mb2", "mb1"]
    store.mailbox.save_mailbox_item(
        MailboxItem(
            id="mb1",
            agent_id="a1",
            source_type="chat",
            queued_at=T0,
            status="completed",
            retry_count=2,
            completed_at=T0 + timedelta(seconds=5),
        )
    )
    done = store.mailbox.mailbox_items("a1", status="completed")
    assert [(m.id, m.retry_count) for m in done] == [("mb1", 2)]


def test_decisions_are_recorded_in_order(store: EpisodicStore) -> None:
    for i, kind in enumerate(["pick", "defer", "complete"]):
        store.mailbox.record_decision(
            Decision(
                id=f"d{i}",
                agent_id="a1",
                decision_type=kind,
                mailbox_item_id="mb1",
                created_at=T0 + timedelta(seconds=i),
                context={"i": i},
                reasoning="because",
            )
        )
    got = store.mailbox.decisions("a1", mailbox_item_id="mb1")
    assert [d.decision_type for d in got] == ["pick", "defer", "complete"]
    assert got[0].context == {"i": 0}
    assert store.mailbox.decisions("a2") == []


# -- chat history ----------------------------------------------------------------------------


def test_chat_messages_come_back_in_order_and_bump_the_session(store: EpisodicStore) -> None:
    session = ChatSession(id="cs_0123456789abcdef", agent_id="a1", created_at=T0, user_id="u1")
    store.chats.create_chat_session(session)
    for i in range(6):
        store.chats.append_chat_message(
            ChatMessage(
                id=f"cm_{i:016x}",
                session_id=session.id,
                agent_id="a1",
                role="user" if i % 2 == 0 else "assistant",
                content=f"message {i}",
                created_at=T0 + timedelta(seconds=i // 2),  # pairs share a timestamp
            )
        )
    messages = store.chats.chat_messages("a1", session.id)
    assert [m.content for m in messages] == [f"message {i}" for i in range(6)]
    assert [m.content for m in store.chats.chat_messages("a1", session.id, limit=2)] == [
        "message 4",
        "message 5",
    ]
    bumped = store.chats.get_chat_session("a1", session.id)
    assert bumped is not None and bumped.last_message_at == T0 + timedelta(seconds=2)
    assert store.chats.chat_messages("a2", session.id) == []
    assert store.chats.get_chat_session("a2", session.id) is None


def test_chat_sessions_most_recent_first(store: EpisodicStore) -> None:
    for i in range(3):
        store.chats.create_chat_session(
            ChatSession(
                id=f"cs_{i:016x}",
                agent_id="a1",
                created_at=T0 + timedelta(minutes=i),
                is_main=i == 0,
                metadata={"kind": "evolution"} if i == 1 else None,
            )
        )
    store.chats.append_chat_message(
        ChatMessage(
            id="cm_x",
            session_id=f"cs_{0:016x}",
            agent_id="a1",
            role="user",
            content="late",
            created_at=T0 + timedelta(hours=1),
        )
    )
    sessions = store.chats.chat_sessions("a1")
    assert [s.id for s in sessions] == [f"cs_{i:016x}" for i in (0, 2, 1)]
    assert sessions[0].is_main and sessions[2].metadata == {"kind": "evolution"}


# -- transcript index ------------------------------------------------------------------------


def test_transcript_search_with_filters(store: EpisodicStore) -> None:
    rows = [
        ("s1", 0, "user", "how do I rotate the api key", 0),
        ("s1", 1, "assistant", "rotate it in the vault settings", 1),
        ("s2", 0, "user", "lunch plans", 2),
        ("s2", 1, "assistant", "the api key is in the vault", 3),
    ]
    for session, seq, role, content, minute in rows:
        store.transcripts.index_message(
            "a1", session, seq, role, content, T0 + timedelta(minutes=minute)
        )
    store.transcripts.index_message("a2", "s9", 0, "user", "api key of someone else", T0)
    hits = store.transcripts.search_transcript("a1", "api key")
    assert {(h.session_id, h.seq) for h in hits} == {("s1", 0), ("s2", 1)}
    assert all(h.agent_id == "a1" for h in hits)
    assert [h.seq for h in store.transcripts.search_transcript("a1", "vault", session_id="s1")] == [
        1
    ]
    assert [
        h.session_id for h in store.transcripts.search_transcript("a1", "vault", role="assistant")
    ]
    assert [
        (h.session_id, h.seq)
        for h in store.transcripts.search_transcript("a1", "vault", since=T0 + timedelta(minutes=2))
    ] == [("s2", 1)]
    assert [
        (h.session_id, h.seq)
        for h in store.transcripts.search_transcript("a1", "vault", until=T0 + timedelta(minutes=2))
    ] == [("s1", 1)]
    assert store.transcripts.search_transcript("a1", 'NOT " (') == []


def test_transcript_reindex_replaces_and_forget_removes(store: EpisodicStore) -> None:
    store.transcripts.index_message("a1", "s1", 0, "user", "first words", T0)
    store.transcripts.index_message("a1", "s1", 0, "user", "second words", T0)
    assert store.transcripts.search_transcript("a1", "first") == []
    assert [h.content for h in store.transcripts.search_transcript("a1", "second")] == [
        "second words"
    ]
    assert store.transcripts.forget_session("a1", "s1") == 1
    assert store.transcripts.search_transcript("a1", "second") == []


def test_transcript_records_speaker_and_metadata_and_reads_back_in_order(
    store: EpisodicStore,
) -> None:
    store.transcripts.index_message(
        "a1", "s2", 0, "user", "hi", T0, speaker="Caroline", metadata={"speaker": "Caroline"}
    )
    store.transcripts.index_message("a1", "s1", 1, "assistant", "", T0 + timedelta(minutes=1))
    store.transcripts.index_message("a1", "s1", 0, "user", "hello", T0)
    store.transcripts.index_message("a2", "s1", 0, "user", "someone else", T0)
    got = store.transcripts.transcript_messages("a1")
    assert [(m.session_id, m.seq) for m in got] == [("s1", 0), ("s1", 1), ("s2", 0)]
    assert got[2] == TranscriptMessage(
        "a1", "s2", 0, "user", "hi", T0, "Caroline", {"speaker": "Caroline"}
    )
    assert got[1].speaker is None and got[1].metadata is None and got[1].content == ""
    assert [m.seq for m in store.transcripts.transcript_messages("a1", session_id="s2")] == [0]
    assert store.transcripts.transcript_messages("nobody") == []


def test_transcript_sessions_read_back_in_byte_order_of_their_ids(store: EpisodicStore) -> None:
    # SQLite compares text by its bytes; PostgreSQL's default collation would not.
    for session in ("b", "B", "a-2", "a_1", "é"):
        store.transcripts.index_message("a1", session, 0, "user", f"in {session}", T0)
    got = [m.session_id for m in store.transcripts.transcript_messages("a1")]
    assert got == sorted(got, key=lambda s: s.encode()) == ["B", "a-2", "a_1", "b", "é"]


def test_re_recording_a_message_rewrites_it_in_place(store: EpisodicStore) -> None:
    store.transcripts.index_message("a1", "s1", 0, "user", "draft text", T0, speaker="Ann")
    store.transcripts.index_message(
        "a1", "s1", 0, "assistant", "final text", T0 + timedelta(minutes=1), metadata={"k": 1}
    )
    assert store.transcripts.transcript_messages("a1") == [
        TranscriptMessage(
            "a1", "s1", 0, "assistant", "final text", T0 + timedelta(minutes=1), None, {"k": 1}
        )
    ]
    assert [h.content for h in store.transcripts.search_transcript("a1", "text")] == ["final text"]
    assert store.transcripts.recall_stats("a1", [], ["assistant", "bob"]).speakers == {"assistant"}


def test_transcript_mark_advances_only_without_gaps(store: EpisodicStore) -> None:
    late = T0 + timedelta(hours=1)
    store.transcripts.index_message(
        "a1", "s1", 0, "user", "m0", T0 - timedelta(days=9), appended_at=T0
    )
    store.transcripts.index_message("a1", "s1", 1, "user", "m1", T0 + timedelta(minutes=1))
    assert store.transcripts.transcript_marks("a1") == {
        "s1": TranscriptMark(2, T0 + timedelta(minutes=1))
    }
    store.transcripts.index_message(
        "a1", "s1", 3, "user", "m3", late
    )  # seq 2 is missing: no advance
    store.transcripts.index_message("a1", "s2", 5, "user", "x", late)  # no mark and not message 0
    assert store.transcripts.transcript_marks("a1") == {
        "s1": TranscriptMark(2, T0 + timedelta(minutes=1))
    }
    store.transcripts.index_message(
        "a1", "s1", 0, "user", "m0 again", T0
    )  # re-record: time never drops
    assert store.transcripts.transcript_marks("a1")["s1"] == TranscriptMark(
        2, T0 + timedelta(minutes=1)
    )
    assert store.transcripts.transcript_marks("a2") == {}


def test_transcript_import_adds_only_missing_seqs_and_sets_the_mark(store: EpisodicStore) -> None:
    store.transcripts.index_message("a1", "s1", 1, "user", "exact", T0 + timedelta(minutes=5))
    file_copy = [
        TranscriptMessage("a1", "s1", seq, "user", f"from file {seq}", T0, None, None)
        for seq in range(3)
    ]
    synced = T0 + timedelta(hours=2)
    assert store.transcripts.import_transcript("a1", "s1", file_copy, synced_at=synced) == 2
    got = store.transcripts.transcript_messages("a1")
    assert [m.content for m in got] == ["from file 0", "exact", "from file 2"]
    assert got[1].created_at == T0 + timedelta(minutes=5)
    assert store.transcripts.transcript_marks("a1") == {"s1": TranscriptMark(3, synced)}
    assert store.transcripts.import_transcript("a1", "s1", file_copy, synced_at=T0) == 0
    assert store.transcripts.transcript_marks("a1")["s1"] == TranscriptMark(3, synced)
    assert store.transcripts.import_transcript("a1", "empty", [], synced_at=T0) == 0
    assert store.transcripts.transcript_marks("a1")["empty"] == TranscriptMark(0, T0)
    assert [h.seq for h in store.transcripts.search_transcript("a1", "file")] != []
    assert store.transcripts.forget_session("a1", "s1") == 3
    assert "s1" not in store.transcripts.transcript_marks("a1")
    foreign = [TranscriptMessage("a2", "s1", 0, "user", "not mine", T0)]
    with pytest.raises(InvalidInputError):
        store.transcripts.import_transcript("a1", "s1", foreign, synced_at=T0)
    assert store.transcripts.transcript_messages("a2") == []


def test_regression_14_3_item_23_activities_can_be_pruned(store: EpisodicStore) -> None:
    for n in range(1, 5):
        store.activities.insert_activity(act(n, label="nightly backup"))
        store.activities.append_log("a1", f"act-a1-{n}", "text", "copied files", {}, T0)
    store.activities.insert_activity(act(1, agent="a2", label="nightly backup"))
    removed = store.activities.prune_activities("a1", before=T0 + timedelta(minutes=3))
    assert removed == 2
    assert [a.id for a in store.activities.query_activities("a1")] == ["act-a1-4", "act-a1-3"]
    assert store.activities.activity_logs("a1", "act-a1-1") == []
    assert {h.activity.id for h in store.activities.search_activities("a1", "nightly backup")} == {
        "act-a1-3",
        "act-a1-4",
    }
    assert [a.id for a in store.activities.query_activities("a2")] == ["act-a2-1"]
    # New activities still get fresh search documents after a prune.
    store.activities.insert_activity(act(9, label="nightly backup"))
    assert len(store.activities.search_activities("a1", "nightly")) == 3


def test_decisions_at_one_instant_keep_insertion_order(store: EpisodicStore) -> None:
    for i, kind in enumerate(["zeta", "alpha", "mid"]):
        store.mailbox.record_decision(
            Decision(
                id=f"t{i}",
                agent_id="a1",
                decision_type=kind,
                mailbox_item_id="mb9",
                created_at=T0,
            )
        )
    got = store.mailbox.decisions("a1", limit=2)
    assert [d.decision_type for d in got] == ["zeta", "alpha"]
    assert got[0].outcome is None and got[0].reasoning == ""


def test_saving_a_mailbox_item_again_replaces_every_field(store: EpisodicStore) -> None:
    first = MailboxItem(
        id="mb1",
        agent_id="a1",
        source_type="chat",
        queued_at=T0,
        payload={"text": "数据"},
        metadata={"k": 1},
        started_at=T0 + timedelta(seconds=1),
        deferred_until=T0 + timedelta(hours=1),
        merged_into="mb0",
    )
    store.mailbox.save_mailbox_item(first)
    second = MailboxItem(id="mb1", agent_id="a1", source_type="task", queued_at=T0, priority=1)
    store.mailbox.save_mailbox_item(second)
    assert store.mailbox.get_mailbox_item("a1", "mb1") == second
    assert [m.id for m in store.mailbox.mailbox_items("a1")] == ["mb1"]


def test_an_older_chat_message_does_not_move_the_session_back(store: EpisodicStore) -> None:
    session = ChatSession(id="cs_late", agent_id="a1", created_at=T0, title="数据 title")
    store.chats.create_chat_session(session)
    for i, at in enumerate([T0 + timedelta(minutes=5), T0 + timedelta(minutes=1)]):
        store.chats.append_chat_message(
            ChatMessage(
                id=f"cm_late{i}",
                session_id=session.id,
                agent_id="a1",
                role="user",
                content="x",
                created_at=at,
                metadata={"n": i},
            )
        )
    got = store.chats.get_chat_session("a1", session.id)
    assert got is not None and got.title == "数据 title" and not got.is_main
    assert got.last_message_at == T0 + timedelta(minutes=5)
    assert [m.metadata for m in store.chats.chat_messages("a1", session.id)] == [{"n": 1}, {"n": 0}]
