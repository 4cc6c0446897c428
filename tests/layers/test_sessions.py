"""SessionStore behaviour: the original's session cases and the API contract."""

from __future__ import annotations

import gc
import json
import re
import shutil
import threading
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.config import Limits
from markus_memory.errors import CorruptFileError, InvalidIdError, InvalidInputError, NotFoundError
from markus_memory.layers.sessions import AppendedMessage, message_text

from .sessions_support import AGENT, StepClock, assistant, make_store, user

GOLDEN = Path(__file__).parent.parent / "golden" / "sessions"


@pytest.fixture
def store(tmp_path: Path):
    s = make_store(tmp_path)
    yield s
    s.close()


# --- the original's memory-store.test.ts › sessions ---------------------------------------------


def test_create_session_returns_a_valid_session(store) -> None:
    session = store.create()
    assert re.fullmatch(r"sess_\d{13}_[0-9a-z]{6}", session.id)
    assert session.agent_id == AGENT
    assert session.messages == ()


def test_get_session_retrieves_created_session(store) -> None:
    created = store.create()
    assert store.get(created.id) == created


def test_get_session_returns_none_for_unknown_id(store) -> None:
    assert store.get("sess_1_nothere") is None


def test_append_message_adds_to_session_in_order(store) -> None:
    sid = store.create().id
    store.append(sid, user("first"))
    store.append(sid, assistant("second"))
    assert [m["content"] for m in store.get(sid).messages] == ["first", "second"]


def test_append_message_raises_for_unknown_session(store) -> None:
    with pytest.raises(NotFoundError, match="Session not found: sess_1_nothere"):
        store.append("sess_1_nothere", user("x"))


def test_recent_returns_last_n(store) -> None:
    sid = store.create().id
    for i in range(20):
        store.append(sid, user(f"msg {i}"))
    assert [m["content"] for m in store.recent(sid, 5)] == [f"msg {i}" for i in range(15, 20)]
    assert store.recent("sess_1_nothere", 5) == []
    assert store.recent(sid, 0) == []


def test_list_sessions_sees_every_session_on_disk(tmp_path: Path) -> None:
    store = make_store(tmp_path, limits=Limits(max_sessions_in_memory=2))
    ids = {store.create().id for _ in range(5)}
    assert {info.id for info in store.list()} == ids
    store.close()
    assert {info.id for info in make_store(tmp_path).list()} == ids


def test_latest_session_is_the_most_recent_by_last_activity(store) -> None:
    a, b = store.create().id, store.create().id
    store.append(b, user("b"))
    store.append(a, user("a"))
    assert store.latest().id == a
    store.append(b, user("b again"))
    assert store.latest().id == b


def test_get_or_create_returns_existing_or_creates_new(store) -> None:
    first = store.get_or_create("chat_agent1_123")
    assert first.id == "chat_agent1_123"
    store.append(first.id, user("hello"))
    again = store.get_or_create("chat_agent1_123")
    assert again.id == first.id and len(again.messages) == 1


def test_compact_session_keeps_last_n_and_adds_summary(store) -> None:
    sid = store.create().id
    for i in range(30):
        store.append(sid, user(f"question {i}") if i % 2 == 0 else assistant(f"answer {i}"))
    result = store.compact(sid, keep_last=10)
    assert result.flushed_count == 20
    assert result.summary
    messages = store.get(sid).messages
    assert len(messages) == 11
    assert "summary" in messages[0]["content"].lower()
    assert messages[0]["content"].startswith(
        "[Conversation history summary — 20 earlier messages were compacted]\n"
    )
    assert [m["content"] for m in messages[1:]] == [
        f"question {i}" if i % 2 == 0 else f"answer {i}" for i in range(20, 30)
    ]


def test_compact_session_is_noop_below_threshold(store) -> None:
    sid = store.create().id
    store.append(sid, user("only"))
    result = store.compact(sid)
    assert (result.summary, result.flushed_count) == ("", 0)
    assert store.compact("sess_1_nothere").flushed_count == 0


def test_sessions_persist_to_disk_and_reload(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    sid = store.create().id
    store.append(sid, user("remember me"))
    # No close and no flush: the journal alone must carry the message.
    reopened = make_store(tmp_path)
    assert [m["content"] for m in reopened.get(sid).messages] == ["remember me"]
    store.close()
    reopened.close()


def test_check_and_compact_does_not_drop_turns_at_moderate_counts(store) -> None:
    sid = store.create().id
    for i in range(62):
        store.append(sid, user(f"turn {i}"))
    messages = store.get(sid).messages
    assert len(messages) == 62
    assert not messages[0]["content"].startswith("[Conversation history summary")


# --- message validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "garbage",
    [
        "just a string",
        ["role", "user"],
        {"content": "no role"},
        {"role": "wizard", "content": "x"},
        {"role": "user"},
        {"role": "user", "content": 42},
        {"role": "user", "content": [{"type": "text"}]},
        {"role": "user", "content": [{"type": "audio", "data": "x"}]},
        {"role": "user", "content": [{"type": "image_url", "image_url": "http://x"}]},
        {"role": "tool", "content": "x", "toolCallId": 7},
        {"role": "assistant", "content": "", "toolCalls": [{"id": "c", "name": "n"}]},
        {"role": "assistant", "content": "", "toolCalls": {"id": "c"}},
        {"role": "user", "content": "x", "cacheBreakpoint": "yes"},
        {"role": "user", "content": "x", "metadata": "not a dict"},
        {"role": "user", "content": "x", "extra": float("nan")},
        {"role": "user", "content": "x", "extra": object()},
    ],
)
def test_append_rejects_garbage_and_writes_nothing(store, garbage) -> None:
    sid = store.create().id
    before = sorted(p.name for p in store.directory.iterdir())
    with pytest.raises(InvalidInputError):
        store.append(sid, garbage)
    assert store.get(sid).messages == ()
    assert sorted(p.name for p in store.directory.iterdir()) == before


def test_append_keeps_the_llm_message_shape(store) -> None:
    sid = store.create().id
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "toolCalls": [{"id": "c1", "name": "file_read", "arguments": {"path": "/x"}}],
        "reasoningContent": "thinking",
        "cacheBreakpoint": True,
        "toolCallId": None,
    }
    store.append(sid, message)
    stored = store.get(sid).messages[0]
    assert "toolCallId" not in stored
    assert stored == {k: v for k, v in message.items() if v is not None}
    assert message_text(stored) == "ab"


@pytest.mark.parametrize(
    "bad", ["", "a/b", "..", ".hidden", "a\\b", "x\x00y", "a\nb", "x" * 129, 7, None, ["l"]]
)
def test_session_ids_are_validated(store, bad) -> None:
    for call in (store.get_or_create, store.get, store.compact):
        with pytest.raises(InvalidIdError):
            call(bad)
    with pytest.raises(InvalidIdError):
        store.append(bad, user("x"))
    with pytest.raises(InvalidIdError):
        store.recent(bad, 1)
    assert not store.directory.exists()


def test_create_accepts_scenario_prefixes(store) -> None:
    for prefix in ("hb", "a2a", "comment", "sys", "task", "channel"):
        assert store.create(prefix).id.startswith(prefix + "_")
    with pytest.raises(InvalidInputError):
        store.create("bad/prefix")


# --- file format ----------------------------------------------------------------------------------


def test_checkpoint_is_the_markus_json_layout(store) -> None:
    sid = store.create().id
    store.append(sid, user("héllo — 日本"))
    store.flush()
    text = (store.directory / f"{sid}.json").read_text(encoding="utf-8")
    data = json.loads(text)
    # The Markus layout, then one key Markus readers ignore: the seq of the next message.
    assert list(data) == ["id", "agentId", "messages", "startedAt", "lastActivityAt", "nextSeq"]
    assert data["nextSeq"] == 1
    assert data["messages"] == [{"role": "user", "content": "héllo — 日本"}]
    assert text == json.dumps(data, indent=2, ensure_ascii=False)
    assert "日本" in text and not text.endswith("\n")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", data["lastActivityAt"])
    assert not (store.directory / f"{sid}.jsonl").exists()


def test_golden_file_written_by_markus_loads_and_round_trips(store) -> None:
    store.directory.mkdir(parents=True)
    original = (GOLDEN / "main-session.json").read_text(encoding="utf-8")
    (store.directory / "sess_1718000000000_k3j9qz.json").write_text(original, encoding="utf-8")
    session = store.get("sess_1718000000000_k3j9qz")
    assert session.agent_id == AGENT
    assert [m["role"] for m in session.messages] == ["system", "user", "assistant"]
    assert message_text(session.messages[1]) == "What is in this picture? Answer in 日本語."
    assert session.last_activity_at.isoformat() == "2024-06-10T06:14:01.337000+00:00"
    store.append(session.id, assistant("もう一枚どうぞ"))
    store.close()
    rewritten = (store.directory / "sess_1718000000000_k3j9qz.json").read_text(encoding="utf-8")
    expected = json.loads(original)
    expected["messages"].append({"role": "assistant", "content": "もう一枚どうぞ"})
    expected["lastActivityAt"] = json.loads(rewritten)["lastActivityAt"]
    expected["nextSeq"] = 4
    assert rewritten == json.dumps(expected, indent=2, ensure_ascii=False)


def test_item_24_channel_ids_map_to_windows_safe_file_names(store) -> None:
    sid = "channel_dm:a2a:agt_a:agt_b_agt_c"
    store.get_or_create(sid)
    store.append(sid, user("hi"))
    store.flush()
    names = [p.name for p in store.directory.iterdir()]
    assert names == ["channel_dm%3Aa2a%3Aagt_a%3Aagt_b_agt_c.json"]
    assert not any(ch in name for name in names for ch in '<>:"|?*')
    assert [info.id for info in store.list()] == [sid]
    assert store.get(sid).messages[0]["content"] == "hi"


def test_item_24_raw_named_markus_file_still_loads_and_is_renamed(store) -> None:
    sid = "channel_group:team1_agt_0123456789abcdef01234567"
    store.directory.mkdir(parents=True)
    shutil.copy(GOLDEN / "channel-session.json", store.directory / f"{sid}.json")
    assert [info.id for info in store.list()] == [sid]
    session = store.get(sid)
    assert len(session.messages) == 4
    assert session.messages[1]["toolCalls"][0]["arguments"] == {"command": "kubectl get pods"}
    store.append(sid, user("thanks"))
    store.close()
    assert [p.name for p in store.directory.iterdir()] == [
        "channel_group%3Ateam1_agt_0123456789abcdef01234567.json"
    ]
    assert len(make_store(store.paths.root.parent).get(sid).messages) == 5


def test_corrupt_session_json_is_reported_and_kept_aside(store) -> None:
    store.directory.mkdir(parents=True)
    broken = store.directory / "sess_1_broken0.json"
    broken.write_text('{"id": "sess_1_broken0", "messages": [', encoding="utf-8")
    with pytest.raises(CorruptFileError, match="moved to sess_1_broken0.json.corrupt-"):
        store.get("sess_1_broken0")
    assert not broken.exists()
    (aside,) = store.directory.glob("sess_1_broken0.json.corrupt-*")
    assert aside.read_text(encoding="utf-8") == '{"id": "sess_1_broken0", "messages": ['
    # A new session of that id starts empty; the damaged bytes stay where they were put.
    assert store.get_or_create("sess_1_broken0").messages == ()
    assert aside.exists()


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe not utf-8",
        b"[]",
        b'{"id": "sess_1_broken0", "agentId": "a", "messages": "no"}',
        b'{"id": "sess_1_broken0", "agentId": "a", "messages": [], "startedAt": 1}',
    ],
)
def test_wrong_shapes_are_corrupt(store, content: bytes) -> None:
    store.directory.mkdir(parents=True)
    (store.directory / "sess_1_broken0.json").write_bytes(content)
    with pytest.raises(CorruptFileError):
        store.get("sess_1_broken0")


def test_file_holding_another_id_is_refused_not_overwritten(store) -> None:
    store.directory.mkdir(parents=True)
    text = (GOLDEN / "main-session.json").read_text(encoding="utf-8")
    target = store.directory / "sess_1_other00.json"
    target.write_text(text, encoding="utf-8")
    with pytest.raises(CorruptFileError, match="holds session"):
        store.get_or_create("sess_1_other00")
    assert target.read_text(encoding="utf-8") == text


def test_latest_skips_corrupt_files(store) -> None:
    good = store.create().id
    store.append(good, user("x"))
    (store.directory / "sess_9_zzzzzz.json").write_text("{", encoding="utf-8")
    assert store.latest().id == good


# --- on_append ------------------------------------------------------------------------------------


def test_on_append_receives_a_record_of_each_durable_append(tmp_path: Path) -> None:
    seen: list[AppendedMessage] = []
    store = make_store(tmp_path, on_append=seen.append)
    sid = store.create().id
    store.append(sid, user("plain"))
    store.append(
        sid,
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "par"}, {"type": "text", "text": "ts"}],
            "metadata": {"channel": "web"},
        },
    )
    assert [(r.session_id, r.index, r.role, r.text) for r in seen] == [
        (sid, 0, "user", "plain"),
        (sid, 1, "assistant", "parts"),
    ]
    assert seen[0].agent_id == AGENT and seen[0].metadata is None
    assert seen[1].metadata == {"channel": "web"}
    assert seen[1].timestamp > seen[0].timestamp
    store.close()


def test_on_append_failure_never_loses_the_append(tmp_path: Path, caplog) -> None:
    def explode(record: AppendedMessage) -> None:
        raise RuntimeError("index down")

    store = make_store(tmp_path, on_append=explode)
    sid = store.create().id
    record = store.append(sid, user("kept"))
    assert record.index == 0
    assert "on_append callback failed" in caplog.text
    assert make_store(tmp_path).get(sid).messages[0]["content"] == "kept"
    store.close()


# --- facade ---------------------------------------------------------------------------------------


def test_agent_memory_exposes_sessions_and_flushes_on_close(isolated_home: Path) -> None:
    with open_agent(AGENT) as mem:
        sid = mem.sessions.create().id
        mem.sessions.append(sid, user("via facade"))
    path = isolated_home / "agents" / AGENT / "sessions" / f"{sid}.json"
    assert json.loads(path.read_text(encoding="utf-8"))["messages"][0]["content"] == "via facade"
    assert not path.with_suffix(".jsonl").exists()


def test_clock_drives_timestamps(tmp_path: Path) -> None:
    clock = StepClock()
    store = make_store(tmp_path, clock=clock)
    sid = store.create().id
    record = store.append(sid, user("x"))
    assert store.get(sid).last_activity_at == record.timestamp == clock.now
    assert store.list()[0].last_activity_at == clock.now
    store.close()


def test_threads_sharing_a_store_never_lose_appends(store) -> None:
    sid = store.create().id

    def writer(tag: str) -> None:
        for i in range(100):
            store.append(sid, user(f"{tag}-{i}"))

    threads = [threading.Thread(target=writer, args=(t,)) for t in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    contents = [m["content"] for m in make_store(store.paths.root.parent).get(sid).messages]
    assert len(contents) == 300
    for tag in "abc":
        assert [c for c in contents if c[0] == tag] == [f"{tag}-{i}" for i in range(100)]


def test_store_is_usable_after_close(store) -> None:
    sid = store.create().id
    store.close()
    store.append(sid, user("after close"))
    store.close()
    assert [m["content"] for m in make_store(store.paths.root.parent).get(sid).messages] == [
        "after close"
    ]


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_a_dropped_store_releases_its_journal_descriptors(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    with store.lock:  # the lock file stays open while idle: count it in the baseline
        pass
    before = len(list(Path("/proc/self/fd").iterdir()))
    for _ in range(5):
        store.append(store.create().id, user("x"))
    assert len(list(Path("/proc/self/fd").iterdir())) == before + 5
    del store
    gc.collect()
    assert len(list(Path("/proc/self/fd").iterdir())) == before
