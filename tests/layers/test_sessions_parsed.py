"""One bound for the whole process on the sessions held parsed (``layers/sessions/_parsed``).

A server holding many agents open kept every agent's recent sessions parsed (about 0.7 MB an
agent at 2,000 short turns). Past the bound the least recently used sessions of any agent are
released: appends to them write their journal line without parsing, reads parse them again, and
nothing on disk differs from a store that never released anything.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path

from markus_memory.config import Limits
from markus_memory.layers.sessions import SessionStore
from markus_memory.layers.sessions._parsed import ParsedSessions
from tests.layers.sessions_support import assistant, make_store, user

AGENTS = [f"agt_{n:024d}" for n in range(4)]


def stores(root: Path, parsed: ParsedSessions, **kw: object) -> list[SessionStore]:
    return [make_store(root, agent=a, parsed=parsed, **kw) for a in AGENTS]  # type: ignore[arg-type]


def converse(store: SessionStore, sid: str, turns: int, tag: str) -> None:
    for n in range(turns):
        store.append(sid, user(f"{tag} question {n}"))
        store.append(sid, assistant(f"{tag} answer {n}"))


def held_parsed(store: SessionStore) -> set[str]:
    return set(store.cache.held)


def on_disk(root: Path, agent: str, sid: str) -> list[object]:
    """The session's messages as a fresh store (with no bound) reads them from the files."""
    fresh = make_store(root, agent=agent, parsed=ParsedSessions(1 << 40))
    session = fresh.get(sid)
    assert session is not None
    fresh.close()
    return list(session.messages)


def test_past_the_bound_the_least_recently_used_sessions_of_other_agents_are_released(
    tmp_path: Path,
) -> None:
    parsed = ParsedSessions(max_bytes=6_000)
    opened = stores(tmp_path, parsed)
    sids = [s.create().id for s in opened]
    for store, sid in zip(opened, sids, strict=True):
        converse(store, sid, 20, store.agent_id)
    sizes = []
    for store, sid in zip(opened, sids, strict=True):  # reads parse, oldest first
        messages = list(store.get(sid).messages)  # type: ignore[union-attr]
        assert len(messages) == 40
        assert [m["content"] for m in messages][-1] == f"{store.agent_id} answer 19"
        sizes.append(parsed.total)
    assert held_parsed(opened[-1]) == {sids[-1]}
    assert held_parsed(opened[0]) == set()  # the least recently used: released
    assert max(sizes) <= 6_000 + 4_000  # only the one in use may take the total past the bound


def test_appends_to_a_released_session_are_kept_in_order_without_parsing(tmp_path: Path) -> None:
    parsed = ParsedSessions(max_bytes=1)  # every session but the one in use is released
    first, second = stores(tmp_path, parsed)[:2]
    a, b = first.create().id, second.create().id
    for n in range(30):  # round robin, as a server's conversations arrive
        first.append(a, user(f"a{n}"))
        second.append(b, user(f"b{n}"))
    assert held_parsed(first) == set()
    records = [first.append(a, user("a-last")), first.append(a, user("a-after"))]
    assert [r.index for r in records] == [30, 31]
    assert [r.seq for r in records] == [30, 31]
    assert [m["content"] for m in first.recent(a, 3)] == ["a29", "a-last", "a-after"]
    assert [m["content"] for m in on_disk(tmp_path, AGENTS[1], b)] == [f"b{n}" for n in range(30)]


def test_close_checkpoints_released_sessions_for_the_original_reader(tmp_path: Path) -> None:
    """The original Markus reads only ``<id>.json``: at close a released session with journaled
    messages is checkpointed like a parsed one, so the JSON holds every message."""
    parsed = ParsedSessions(max_bytes=1)
    first, second = stores(tmp_path, parsed)[:2]
    a, b = first.create().id, second.create().id
    converse(first, a, 5, "a")
    converse(second, b, 1, "b")  # releases a
    first.append(a, user("while released"))
    first.close()
    second.close()
    raw = json.loads((tmp_path / AGENTS[0] / "sessions" / f"{a}.json").read_text())
    assert [m["content"] for m in raw["messages"]][-2:] == ["a answer 4", "while released"]
    assert not (tmp_path / AGENTS[0] / "sessions" / f"{a}.jsonl").exists()


def test_a_released_session_reaches_compaction_as_a_parsed_one_does(tmp_path: Path) -> None:
    limits = Limits(session_compact_trigger=12, session_compact_keep=4)
    parsed = ParsedSessions(max_bytes=1)
    first, second = stores(tmp_path, parsed, limits=limits)[:2]
    a, b = first.create().id, second.create().id
    for n in range(13):
        first.append(a, user(f"a{n}"))
        second.append(b, user(f"b{n}"))
    session = first.get(a)
    assert session is not None and session.compacted > 0
    assert [m["content"] for m in session.messages[1:]] == ["a9", "a10", "a11", "a12"]
    assert first.append(a, user("next")).seq == 13


def _append_elsewhere(root: str, agent: str, sid: str) -> None:
    other = make_store(Path(root), agent=agent, parsed=ParsedSessions(1 << 40))
    other.append(sid, user("from another process"))
    other.close()  # a checkpoint: the released copy's files are no longer as it left them


def test_a_released_session_written_by_another_process_is_read_again(tmp_path: Path) -> None:
    parsed = ParsedSessions(max_bytes=1)
    first, second = stores(tmp_path, parsed)[:2]
    a, b = first.create().id, second.create().id
    converse(first, a, 2, "a")
    converse(second, b, 1, "b")
    assert held_parsed(first) == set()
    child = multiprocessing.get_context("spawn").Process(
        target=_append_elsewhere, args=(str(tmp_path), AGENTS[0], a)
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    record = first.append(a, user("here again"))
    assert record.index == 5
    assert [m["content"] for m in first.recent(a, 2)] == ["from another process", "here again"]


def test_a_store_busy_in_another_thread_keeps_its_session(tmp_path: Path) -> None:
    """Releasing never waits for a lock: a store in use elsewhere is skipped for now."""
    parsed = ParsedSessions(max_bytes=1)
    first, second = stores(tmp_path, parsed)[:2]
    a, b = first.create().id, second.create().id
    first.get(a)  # parsed again (b released)
    held = threading.Event()
    done = threading.Event()

    def hold_first() -> None:
        with first.lock:
            held.set()
            done.wait(30)

    holder = threading.Thread(target=hold_first)
    holder.start()
    held.wait(30)
    try:
        second.get(b)
        assert held_parsed(first) == {a}
    finally:
        done.set()
        holder.join(30)
    second.get(b)
    assert held_parsed(first) == set()


def test_a_deleted_or_closed_store_holds_nothing_in_the_bound(tmp_path: Path) -> None:
    parsed = ParsedSessions(max_bytes=1 << 30)
    first, second = stores(tmp_path, parsed)[:2]
    a, b = first.create().id, second.create().id
    converse(first, a, 3, "a")
    converse(second, b, 3, "b")
    assert parsed.total > 0
    first.delete(a)
    second.close()
    assert parsed.total == 0
