"""Storage compaction, restore, LRU and the regression tests for the original's session bugs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markus_memory.config import Limits
from markus_memory.layers.sessions import heuristic_summary, trim_messages_for_restore

from .sessions_support import AGENT, assistant, make_store, user


def tool(text: str) -> dict[str, object]:
    return {"role": "tool", "content": text, "toolCallId": "call_1"}


# --- storage compaction --------------------------------------------------------------------------


def test_auto_compaction_fires_when_a_session_exceeds_2000_messages(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    sid = store.create().id
    for i in range(2000):
        store.append(sid, user(f"m{i}"))
    assert len(store.get(sid).messages) == 2000
    store.append(sid, user("m2000"))
    messages = store.get(sid).messages
    assert len(messages) == 1001
    assert messages[0]["role"] == "user"
    assert messages[0]["content"].startswith(
        "[Conversation history summary — 1001 earlier messages were compacted]\nUser: m0\n"
    )
    assert [m["content"] for m in messages[1:3]] == ["m1001", "m1002"]
    assert messages[-1]["content"] == "m2000"
    # Compaction checkpoints: the file alone holds the compacted session.
    on_disk = json.loads((store.directory / f"{sid}.json").read_text(encoding="utf-8"))
    assert len(on_disk["messages"]) == 1001
    store.close()


def test_seqs_never_restart_across_compactions_and_reopens(tmp_path: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    store = make_store(tmp_path, on_append=lambda r: seen.append((r.index, r.seq, r.text)))
    sid = store.create().id
    for i in range(6):
        store.append(sid, user(f"m{i}"))
    assert [(index, seq) for index, seq, _ in seen] == [(i, i) for i in range(6)]
    store.compact(sid, keep_last=2)  # m0..m3 leave the file
    session = store.get(sid)
    assert session.compacted == 4
    assert [session.seq(i) for i in range(3)] == [None, 4, 5]
    assert store.append(sid, user("m6")).seq == 6
    store.close()
    reopened = make_store(tmp_path, on_append=lambda r: seen.append((r.index, r.seq, r.text)))
    on_disk = json.loads((reopened.directory / f"{sid}.json").read_text(encoding="utf-8"))
    assert on_disk["compactedMessages"] == 4
    # A second compaction folds the first summary in: it has no seq, so it is not counted.
    reopened.compact(sid, keep_last=1)
    session = reopened.get(sid)
    assert session.compacted == 6
    assert session.seq(1) == 6 and session.messages[1]["content"] == "m6"
    assert reopened.append(sid, user("m7")).seq == 7
    assert seen[-1] == (2, 7, "m7")
    reopened.close()


def test_an_uncompacted_session_file_has_no_compacted_key(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    sid = store.create().id
    store.append(sid, user("hello"))
    store.close()
    on_disk = json.loads((store.directory / f"{sid}.json").read_text(encoding="utf-8"))
    assert "compactedMessages" not in on_disk


def test_old_tool_results_are_shrunk_with_the_exact_marker(tmp_path: Path) -> None:
    limits = Limits(session_compact_keep=3, session_tool_shrink_chars=100)
    store = make_store(tmp_path, limits=limits)
    sid = store.create().id
    big = "".join(chr(ord("a") + i % 26) for i in range(1000))
    store.append(sid, tool(big))
    store.append(sid, tool("x" * 101 + "y" * 100))
    store.append(sid, tool("z" * 100))
    assert store.get(sid).messages[0]["content"] == big  # still inside the recent window
    store.append(sid, user("1"))
    assert store.get(sid).messages[1]["content"] == "x" * 101 + "y" * 100
    store.append(sid, user("2"))
    store.append(sid, user("3"))
    messages = store.get(sid).messages
    assert messages[0] == {
        "role": "tool",
        "content": f"[Tool result compacted: 1000 chars → 400 char preview]\n{big[:300]}\n"
        f"[... 600 chars omitted ...]\n{big[-100:]}",
        "toolCallId": "call_1",
    }
    assert messages[1]["content"].startswith(
        "[Tool result compacted: 201 chars → 80 char preview]\n"
    )
    assert messages[2]["content"] == "z" * 100  # not longer than the threshold
    store.close()
    reread = make_store(tmp_path, limits=limits).get(sid).messages
    assert reread == messages


def test_shrink_of_image_parts_keeps_only_the_text(tmp_path: Path) -> None:
    store = make_store(
        tmp_path, limits=Limits(session_compact_keep=1, session_tool_shrink_chars=10)
    )
    sid = store.create().id
    parts = [
        {"type": "text", "text": "a" * 20},
        {"type": "image_url", "image_url": {"url": "data:"}},
        {"type": "text", "text": "b" * 20},
    ]
    store.append(sid, {"role": "tool", "content": parts, "toolCallId": "t"})
    store.append(sid, user("next"))
    content = store.get(sid).messages[0]["content"]
    assert content == (
        "[Tool result compacted: 40 chars → 16 char preview]\n" + "a" * 12 + "\n"
        "[... 24 chars omitted ...]\n" + "b" * 4
    )
    store.close()


def test_heuristic_summary_lines_and_clips() -> None:
    messages = [
        {"role": "system", "content": "secret system prompt"},
        user("u" * 250),
        assistant(""),
        assistant("a" * 250),
        tool("t" * 150),
    ]
    summary = heuristic_summary(messages)
    assert summary == f"User: {'u' * 200}\nAssistant: {'a' * 200}\nTool result: {'t' * 100}"
    assert "secret" not in summary
    assert len(heuristic_summary([user("x" * 200)] * 20)) == 2000


# --- restore -------------------------------------------------------------------------------------


def test_trim_for_restore_keeps_only_user_and_assistant_within_both_budgets() -> None:
    history = []
    for i in range(100):
        history.append(user(f"q{i}"))
        history.append(tool("ignored"))
        history.append(assistant(f"a{i}"))
    trimmed = trim_messages_for_restore(history)
    assert len(trimmed) == 81
    assert trimmed[0]["role"] == "user"
    assert trimmed[0]["content"].startswith("[120 older messages of this conversation were omitted")
    assert "memory_search" in trimmed[0]["content"]
    assert "recall_activity" in trimmed[0]["content"]
    assert [m["content"] for m in trimmed[1:3]] == ["q60", "a60"]
    assert trimmed[-1]["content"] == "a99"


def test_trim_for_restore_stops_before_the_message_over_the_token_budget() -> None:
    # 35 chars = 10 tokens each; a budget of 25 tokens keeps two.
    history = [user("x" * 35), assistant("y" * 35), user("z" * 35)]
    trimmed = trim_messages_for_restore(history, max_messages=80, max_tokens=25)
    assert [m["content"][0] for m in trimmed[1:]] == ["y", "z"]
    assert trimmed[0]["content"].startswith("[1 older messages")


def test_trim_for_restore_always_keeps_the_newest_message() -> None:
    trimmed = trim_messages_for_restore([user("short"), user("h" * 100_000)], max_tokens=10)
    assert [len(m["content"]) for m in trimmed[1:]] == [100_000]


def test_trim_for_restore_adds_no_note_when_nothing_is_dropped() -> None:
    assert trim_messages_for_restore([user("a"), assistant("b")]) == [user("a"), assistant("b")]


def test_restore_creates_a_new_main_session(tmp_path: Path) -> None:
    seen = []
    store = make_store(tmp_path, on_append=seen.append)
    history = [user("hi"), tool("drop me"), assistant("hello"), {"role": "system", "content": "s"}]
    session = store.restore(history)
    assert session.id.startswith("sess_")
    assert [m["content"] for m in session.messages] == ["hi", "hello"]
    assert [r.index for r in seen] == [0, 1]
    assert make_store(tmp_path).get(session.id) == session
    assert store.latest_main().id == session.id
    store.close()


# --- regressions of the original -----------------------------------------------------------------


def test_item_20_no_shared_debounce_every_session_survives_restart(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    a = store.create().id
    store.append(a, user("to A"))
    b = store.get_or_create("hb_agt_1").id
    store.append(b, user("to B"))
    # Simulated crash: the store is never flushed or closed.
    restarted = make_store(tmp_path)
    assert restarted.get(a).messages[0]["content"] == "to A"
    assert restarted.get(b).messages[0]["content"] == "to B"
    store.close()
    restarted.close()


def test_item_20_sessions_are_checkpointed_at_interpreter_exit(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent.parent.parent)!r})
        from pathlib import Path
        from tests.layers.sessions_support import make_store, user
        store = make_store(Path({str(tmp_path)!r}))
        store.get_or_create("sess_1_exit00")
        store.append("sess_1_exit00", user("written at exit"))
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    sessions = tmp_path / AGENT / "sessions"
    data = json.loads((sessions / "sess_1_exit00.json").read_text(encoding="utf-8"))
    assert data["messages"] == [user("written at exit")]
    assert not (sessions / "sess_1_exit00.jsonl").exists()


def test_item_21_lru_counts_appends_and_falls_back_to_disk(tmp_path: Path) -> None:
    store = make_store(tmp_path, limits=Limits(max_sessions_in_memory=2))
    a, b = store.create().id, store.create().id
    store.append(b, user("b1"))
    store.append(a, user("a1"))  # an append is a use: b is now the least recently used
    c = store.create().id  # evicts b, which is checkpointed
    journal = {sid: (store.directory / f"{sid}.jsonl").exists() for sid in (a, b)}
    assert journal == {a: True, b: False}
    saved_b = json.loads((store.directory / f"{b}.json").read_text(encoding="utf-8"))
    assert saved_b["messages"] == [user("b1")]
    # An evicted session is reloaded on access instead of "Session not found".
    store.append(b, user("b2"))
    assert [m["content"] for m in store.recent(b, 5)] == ["b1", "b2"]
    assert {info.id for info in store.list()} == {a, b, c}
    store.close()


def test_item_22_latest_main_skips_scenario_sessions(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    main = store.create().id
    store.append(main, user("the user's chat"))
    for sid in (
        "hb_agt_1_1",
        "sys_agt_1_2",
        "task_t1_r1",
        "a2a_agt_1_3",
        "channel_group:t1_agt_1",
    ):
        store.get_or_create(sid)
        store.append(sid, user("background"))
    assert store.latest().id == "channel_group:t1_agt_1"
    assert store.latest_main().id == main
    store.close()


def test_item_22_latest_main_is_none_without_a_main_session(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert store.latest_main() is None and store.latest() is None
    store.get_or_create("hb_agt_1_1")
    assert store.latest_main() is None
    store.close()


def test_item_25_append_cost_is_flat_in_session_length(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    short, long = store.create().id, store.create().id
    for i in range(1990):
        store.append(long, user(f"{i:04d}"))
    store.flush()
    growth = {}
    for sid in (short, long):
        json_before = os.stat(store.directory / f"{sid}.json")
        store.append(sid, user("same size"))
        size_1 = os.path.getsize(store.directory / f"{sid}.jsonl")
        store.append(sid, user("same size"))
        growth[sid] = os.path.getsize(store.directory / f"{sid}.jsonl") - size_1
        json_after = os.stat(store.directory / f"{sid}.json")
        assert (json_after.st_ino, json_after.st_size) == (json_before.st_ino, json_before.st_size)
    # Same bytes per append; only the index field is longer ("i":1 vs "i":1991).
    assert growth[long] - growth[short] == len("1991") - len("1")
    assert growth[short] < 100
    store.close()


def test_item_25_periodic_checkpoint_keeps_the_journal_bounded(tmp_path: Path) -> None:
    store = make_store(tmp_path, checkpoint_min_bytes=2000)
    sid = store.create().id
    for i in range(300):
        store.append(sid, user(f"message number {i}"))
        journal = store.directory / f"{sid}.jsonl"
        json_size = os.path.getsize(store.directory / f"{sid}.json")
        if journal.exists():
            assert os.path.getsize(journal) <= max(2000, json_size) + 200
    assert len(make_store(tmp_path).get(sid).messages) == 300
    store.close()


def test_item_26_compaction_writes_no_observation(tmp_path: Path) -> None:
    store = make_store(tmp_path, limits=Limits(session_compact_trigger=30, session_compact_keep=10))
    sid = store.create().id
    for i in range(31):
        store.append(sid, assistant(f"a long enough assistant answer number {i} " * 3))
    assert len(store.get(sid).messages) == 11
    store.compact(sid, keep_last=2)
    store.close()
    agent_dir = tmp_path / AGENT
    assert sorted(p.name for p in agent_dir.iterdir()) == [".lock", "sessions"]
    assert [p.name for p in (agent_dir / "sessions").iterdir()] == [f"{sid}.json"]


def test_item_27_checkpoints_replace_the_file_atomically(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    sid = store.create().id
    path = store.directory / f"{sid}.json"
    store.append(sid, user("one"))
    store.flush()
    before = path.read_bytes()
    with open(path, "rb") as reader:  # a reader holding the old version
        inode = os.fstat(reader.fileno()).st_ino
        store.append(sid, user("two"))
        store.flush()
        assert reader.read() == before
    assert os.stat(path).st_ino != inode
    assert [p.name for p in store.directory.iterdir()] == [path.name]
    store.close()


def test_item_27_checkpoint_crash_before_journal_removal_does_not_duplicate(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    sid = store.create().id
    store.append(sid, user("one"))
    journal = (store.directory / f"{sid}.jsonl").read_bytes()
    store.flush()
    # As if the process died after the new checkpoint but before the journal was unlinked.
    (store.directory / f"{sid}.jsonl").write_bytes(journal)
    reloaded = make_store(tmp_path).get(sid)
    assert [m["content"] for m in reloaded.messages] == ["one"]
    store.close()


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_torn_last_journal_line_is_ignored_and_cut(tmp_path: Path, cut: int) -> None:
    store = make_store(tmp_path)
    sid = store.create().id
    store.append(sid, user("kept"))
    store.append(sid, user("torn"))
    journal = store.directory / f"{sid}.jsonl"
    journal.write_bytes(journal.read_bytes()[:-cut])
    again = make_store(tmp_path)
    assert [m["content"] for m in again.get(sid).messages] == ["kept"]
    again.append(sid, user("after"))
    assert [m["content"] for m in make_store(tmp_path).get(sid).messages] == ["kept", "after"]
    store.close()
    again.close()


def test_torn_remnant_of_a_dead_writer_is_cut_before_the_next_append(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    sid = store.create().id
    store.append(sid, user("one"))
    journal = store.directory / f"{sid}.jsonl"
    with open(journal, "ab") as dead_writer:  # another process killed mid-line
        dead_writer.write(b'{"i":1,"t":"2024-06-10T06:00:09.000Z","m":{"role":"us')
    store.append(sid, user("two"))  # this store has the session cached and reads the tail
    assert [m["content"] for m in make_store(tmp_path).get(sid).messages] == ["one", "two"]
    store.close()


def test_damaged_journal_line_in_the_middle_is_set_aside_and_the_rest_kept(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    sid = store.create().id
    for text in ("one", "two", "three"):
        store.append(sid, user(text))
    journal = store.directory / f"{sid}.jsonl"
    lines = journal.read_bytes().split(b"\n")
    lines[2] = b"garbage"  # the record of "two"
    journal.write_bytes(b"\n".join(lines))
    messages = make_store(tmp_path).get(sid).messages
    assert [m["content"] for m in messages[::2]] == ["one", "three"]
    assert messages[1]["metadata"] == {"damaged": True}  # "two" is lost; its number is kept
    (aside,) = store.directory.glob(f"{sid}.jsonl.corrupt-*")
    assert aside.read_bytes() == b"garbage\n"
    assert not journal.exists()  # repaired: the checkpoint holds the intact records
    assert make_store(tmp_path).get(sid).messages == messages
    store.close()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(1, 4), st.tuples(st.just("compact"), st.integers(0, 5))),
        max_size=14,
    )
)
def test_every_message_keeps_the_seq_it_was_appended_with(ops) -> None:  # type: ignore[no-untyped-def]
    seq_of_text: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(
            Path(tmp),
            limits=Limits(session_compact_trigger=8, session_compact_keep=3),
            on_append=lambda r: seq_of_text.setdefault(r.text, r.seq),
        )
        sid = store.create().id
        for op in ops:
            if isinstance(op, tuple):
                store.compact(sid, keep_last=op[1])
            else:
                for _ in range(op):
                    store.append(sid, user(f"m{len(seq_of_text)}"))
        store.close()
        session = make_store(Path(tmp)).get(sid)
    assert session is not None
    assert sorted(seq_of_text.values()) == list(range(len(seq_of_text)))
    for index, message in enumerate(session.messages):
        seq = session.seq(index)
        if seq is None:
            assert index == 0 and session.compacted > 0
        else:
            assert seq_of_text[message["content"]] == seq
    kept = [session.seq(i) for i in range(len(session.messages))]
    assert [s for s in kept if s is not None] == list(range(session.compacted, len(seq_of_text)))
