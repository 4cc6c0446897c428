from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory.errors import InvalidInputError, NotFoundError
from markus_memory.layers.activities import TRUNCATION_MARK, ActivityLog, summarize
from markus_memory.storage._sqlite.store import SqliteStore


class StepClock:
    """A deterministic clock: each call advances one second."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    backend = SqliteStore(tmp_path / "data.db")
    yield backend
    backend.close()


@pytest.fixture
def log(store: SqliteStore) -> ActivityLog:
    return ActivityLog(store.activities, "agent-1", StepClock())


def test_start_returns_a_markus_id_and_logs_started(log: ActivityLog) -> None:
    activity_id = log.start("task", "Fix the login page", task_id="T-1", mailbox_item_id="mb-1")
    assert re.fullmatch(r"act-agent-1-\d{13}-[0-9a-z]{4}", activity_id)
    detail = log.get(activity_id)
    assert detail.activity.task_id == "T-1" and detail.activity.mailbox_item_id == "mb-1"
    assert [(e.seq, e.type, e.content) for e in detail.logs] == [
        (1, "status", "Started: Fix the login page")
    ]


def test_log_returns_consecutive_seqs(log: ActivityLog) -> None:
    activity_id = log.start("chat", "Chat with Ann")
    assert [log.log(activity_id, "text", f"t{i}") for i in range(3)] == [2, 3, 4]


def test_end_computes_totals_from_every_stored_log(log: ActivityLog) -> None:
    activity_id = log.start("task", "Long task")
    for _ in range(150):  # more than the original's 200-entry buffer
        log.log(activity_id, "llm_request", "", {"tokensUsed": 10, "durationMs": 5})
        log.log(activity_id, "tool_start", "file_read", {"arguments": {"path": "a.txt"}})
    for _ in range(150):
        log.log(activity_id, "tool_end", "file_read", {"success": True})
    ended = log.end(activity_id)
    assert ended.total_tokens == 1500
    assert ended.total_tools == 150
    assert ended.ended_at is not None and ended.success is True
    assert log.get(activity_id).logs[-1].content == "Completed"


def test_regression_14_4_item_34_summary_and_keywords_come_from_stored_logs(
    log: ActivityLog,
) -> None:
    activity_id = log.start("task", "Repair auth")
    log.log(activity_id, "tool_start", "shell_execute", {"arguments": {"cmd": "pytest -x"}})
    log.log(activity_id, "tool_end", "shell_execute", {"success": False})
    log.log(
        activity_id,
        "error",
        "Tool file_read failed: FileNotFoundError: src/auth/login.py does not exist",
    )
    log.log(activity_id, "tool_start", "file_write", {"arguments": {"path": "src/auth/oauth.ts"}})
    log.log(activity_id, "text", "thinking about it", {"isThinking": True})
    log.log(activity_id, "text", "I fixed the OAuth callback.\nTests pass now.")
    ended = log.end(activity_id, success=False)
    assert ended.success is False
    assert ended.summary.startswith("Used shell_execute, file_write on ")
    assert "src/auth/login.py" in ended.summary and "src/auth/oauth.ts" in ended.summary
    assert "1 error: Tool file_read failed: FileNotFoundError" in ended.summary
    assert ended.summary.endswith("I fixed the OAuth callback. Tests pass now.")
    assert ended.keywords == (
        "shell_execute",
        "file_write",
        "FileNotFoundError",
        "src/auth/login.py",
        "src/auth/oauth.ts",
    )
    assert "thinking" not in ended.summary
    # The computed keywords make the episode findable.
    assert [h.activity.id for h in log.search("FileNotFoundError")] == [activity_id]


def test_summarize_of_an_empty_episode_is_empty() -> None:
    assert summarize([]) == ("", (), 0, 0)


def test_get_truncates_long_content_to_500_plus_marker(log: ActivityLog) -> None:
    activity_id = log.start("task", "Big output")
    log.log(activity_id, "tool_end", "x" * 1000)
    log.log(activity_id, "text", "y" * 500)
    logs = log.get(activity_id).logs
    assert logs[1].content == "x" * 500 + TRUNCATION_MARK
    assert logs[2].content == "y" * 500
    assert log.get(activity_id, max_content_chars=0).logs[1].content == "x" * 1000


def test_regression_14_4_item_33_no_agent_reads_another_agents_activity(
    store: SqliteStore,
) -> None:
    mine = ActivityLog(store.activities, "agent-1", StepClock())
    theirs = ActivityLog(store.activities, "agent-2", StepClock())
    secret = theirs.start("task", "Secret payroll run")
    theirs.log(secret, "text", "salary table")
    theirs.end(secret)
    with pytest.raises(NotFoundError):
        mine.get(secret)
    with pytest.raises(NotFoundError):
        mine.log(secret, "text", "injected")
    with pytest.raises(NotFoundError):
        mine.end(secret)
    assert mine.search("payroll") == []
    assert mine.list() == []
    assert len(theirs.get(secret).logs) == 3


@pytest.mark.parametrize("bad_id", ["", "   ", "act-nope", "x" * 600])
def test_unknown_activity_ids_raise_not_found(log: ActivityLog, bad_id: str) -> None:
    with pytest.raises(NotFoundError):
        log.get(bad_id)


def test_non_string_arguments_are_invalid_input(log: ActivityLog) -> None:
    activity_id = log.start("task", "x")
    with pytest.raises(InvalidInputError):
        log.get(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        log.start("", "label")
    with pytest.raises(InvalidInputError):
        log.start("task", "   ")
    with pytest.raises(InvalidInputError):
        log.log(activity_id, "text", None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        log.log(activity_id, "text", "x", ["not", "a", "mapping"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        log.log(activity_id, "text", "x", {("tuple", "key"): 1})
    with pytest.raises(InvalidInputError):
        log.search(None)  # type: ignore[arg-type]


def test_list_filters(log: ActivityLog) -> None:
    a = log.start("task", "A", task_id="T1")
    b = log.start("chat", "B")
    c = log.start("heartbeat", "C")
    d = log.start("task", "D", task_id="T2")
    assert [x.id for x in log.list()] == [d, c, b, a]
    assert [x.id for x in log.list(type="task, chat")] == [d, b, a]
    assert [x.id for x in log.list(type=["heartbeat"])] == [c]
    assert [x.id for x in log.list(type="task", task_id="T1")] == [a]
    assert [x.id for x in log.list(limit=2)] == [d, c]
    started_c = log.get(c).activity.started_at
    assert [x.id for x in log.list(before=started_c)] == [b, a]
    assert [x.id for x in log.list(before=started_c.isoformat())] == [b, a]
    assert log.list(type=" , ") == [log.get(i).activity for i in (d, c, b, a)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"limit": 0},
        {"limit": -3},
        {"limit": "5"},
        {"limit": True},
        {"before": "yesterday-ish"},
        {"before": datetime(2026, 1, 1)},
        {"type": 5},
        {"type": [1, 2]},
        {"task_id": 7},
    ],
)
def test_malformed_list_filters_are_rejected_clearly(log: ActivityLog, kwargs: dict) -> None:
    with pytest.raises(InvalidInputError):
        log.list(**kwargs)


def test_search_ranks_and_respects_limit(log: ActivityLog) -> None:
    ids = []
    for i in range(5):
        ids.append(log.start("task", f"Deploy service {i}"))
        log.end(ids[-1])
    other = log.start("task", "Unrelated")
    log.end(other)
    hits = log.search("deploy", limit=3)
    assert len(hits) == 3
    assert {h.activity.id for h in hits} <= set(ids)
    assert log.search("nothing-like-this") == []
    assert log.search("x") == []


ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=200)


@given(ANY_TEXT)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_text_as_a_query_never_raises(log: ActivityLog, query: str) -> None:
    if not hasattr(log, "_seeded"):
        seeded = log.start("task", 'Label with NOT, OR, "quotes", 50% and snake_case*')
        log.log(seeded, "text", "content (with) parens: and a colon")
        log.end(seeded)
        log._seeded = True  # type: ignore[attr-defined]
    hits = log.search(query)
    assert isinstance(hits, list)


def test_prune_removes_old_activities_of_this_agent_only(store: SqliteStore) -> None:
    clock = StepClock()
    mine = ActivityLog(store.activities, "agent-1", clock)
    theirs = ActivityLog(store.activities, "agent-2", clock)
    old = mine.start("task", "old work")
    their_old = theirs.start("task", "their old work")
    cutoff = clock.now + timedelta(milliseconds=500)
    new = mine.start("task", "new work")
    assert mine.prune(cutoff) == 1
    assert [a.id for a in mine.list()] == [new]
    with pytest.raises(NotFoundError):
        mine.get(old)
    assert theirs.get(their_old).activity.label == "their old work"
    with pytest.raises(InvalidInputError):
        mine.prune("not a date")


@given(ANY_TEXT)
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_text_as_an_activity_id_is_a_clear_error(log: ActivityLog, activity_id: str) -> None:
    # Unknown ids are NotFound; text that cannot even be encoded (lone surrogates) is invalid.
    with pytest.raises((NotFoundError, InvalidInputError)):
        log.get(activity_id)


def test_lone_surrogates_are_invalid_input_not_a_crash(log: ActivityLog) -> None:
    with pytest.raises(InvalidInputError, match="UTF-8"):
        log.start("task", "label \ud800")
    assert log.search("\ud800 abc") == []
