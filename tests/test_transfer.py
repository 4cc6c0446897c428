"""export_agent: files → PostgreSQL → files gives back every byte; files ↔ files; refusals."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory.config import Settings
from markus_memory.dream import dream, dream_history, undo_last_dream
from markus_memory.errors import InvalidInputError
from markus_memory.memory import AgentMemory, open_agent, open_store
from markus_memory.storage.repos.side import ChatMessage, ChatSession, Decision, MailboxItem
from markus_memory.transfer import agent_ids, export_agent
from markus_memory.transfer._rows import AgentRows, read_rows
from tests.postgres_support import new_agent_id, postgres_url

__all__ = ["postgres_url"]


def _populate(settings: Settings, agent_id: str) -> None:
    """An agent with every kind of file, some written by hand as a person would."""
    with open_agent(agent_id, settings=settings) as mem:
        mem.knowledge.save_observation("TypeScript is the main language", tags=["lang"])
        mem.knowledge.update_section("conventions", "Use snake_case.\r\nAlways.")
        mem.notebook.upsert("current-task", "ship it")
        mem.notebook.upsert("triage", "## decision\nwait", managed="system")
        mem.state.update("focus", "release notes")
        session = mem.sessions.create()
        mem.sessions.append(session.id, {"role": "user", "content": "hello ✓"})
        mem.sessions.flush()
        mem.daily_log.write("a quiet day")
        _rows(mem)
        root = mem.paths.root
    (root / "role").mkdir(exist_ok=True)
    (root / "role" / "ROLE.md").write_bytes("\ufeff# Reviewer\r\nChecks PRs.\r\n".encode())
    (root / "role" / "HEARTBEAT.md").write_bytes(b"- check the inbox\n")
    (root / "MEMORY.md").write_bytes(b"# MEMORY\n\n## Legacy\nkept verbatim\n")
    (root / "notes.txt").write_bytes(b"\x00\xffnot utf-8 and not a document")
    os.utime(root / "notes.txt", ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))


def _rows(mem: AgentMemory) -> None:
    """Episodic rows of every kind (activities with logs, mailbox, decisions, chat)."""
    agent = mem.agent_id
    box, chat = f"mbx_{agent}", f"chat_{agent}"
    done = mem.activities.start("task", "review the PR", task_id="t1", mailbox_item_id=box)
    mem.activities.log(done, "tool", "ran the tests", {"ok": True})
    mem.activities.log(done, "note", "all green")
    mem.activities.end(done)
    mem.activities.log(mem.activities.start("chat", "still running"), "msg", "hello")
    at = datetime(2026, 7, 1, 12, tzinfo=timezone.utc)
    mem.store.mailbox.save_mailbox_item(MailboxItem(box, agent, "human_chat", at, payload={"q": 1}))
    mem.store.mailbox.record_decision(
        Decision(f"dec_{agent}", agent, "pick", box, at, reasoning="why")
    )
    mem.store.chats.create_chat_session(ChatSession(chat, agent, at, title="Hi", is_main=True))
    for i in range(3):
        message = ChatMessage(f"{chat}_{i}", chat, agent, "user", f"message {i}", at, {"i": i})
        mem.store.chats.append_chat_message(message)


def _episodic(settings: Settings, agent_id: str) -> AgentRows:
    """The agent's rows in the episodic store the settings select (PostgreSQL by URL)."""
    store = open_store(settings)
    try:
        return read_rows(store, agent_id)
    finally:
        store.close()


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def _mtimes_ms(root: Path, *, plain: bool = False) -> dict[str, int]:
    """Modification times in ms (``plain``: of the files other than sessions and logs)."""
    return {
        p.relative_to(root).as_posix(): p.stat().st_mtime_ns // 1_000_000
        for p in root.rglob("*")
        if p.is_file()
        and not p.name.startswith(".")
        and not (plain and p.relative_to(root).parts[0] in ("sessions", "daily-logs"))
    }


def test_files_to_postgres_to_files_is_byte_for_byte(postgres_url: str, tmp_path: Path) -> None:
    first, second = new_agent_id(), new_agent_id()
    files_a = Settings(home=tmp_path / "a")
    on_pg = Settings(home=tmp_path / "b", database_url=postgres_url)
    files_c = Settings(home=tmp_path / "c")
    for agent in (first, second):
        _populate(files_a, agent)

    there = export_agent(files_a, on_pg)  # every agent
    assert set(there.agents) == {first, second}
    assert there.documents == 2 * 6 and there.removed == 0
    back = export_agent(on_pg, files_c, first)
    assert back.agents == (first,)

    rows = _episodic(files_a, first)
    assert there.rows == 2 * rows.count and len(rows.activities) == 2 and len(rows.chats) == 1
    assert [len(logs) for _, logs in rows.activities] == [4, 2]  # start, two logs, end; start, log
    assert len(rows.mailbox) == len(rows.decisions) == 1 and len(rows.chats[0][1]) == 3
    assert _episodic(on_pg, first) == rows == _episodic(files_c, first)
    assert not on_pg.database_path.exists()  # the rows went to PostgreSQL, not to b/data.db
    a_root, b_root, c_root = (s.agent_dir(first) for s in (files_a, on_pg, files_c))
    assert _tree(c_root) == _tree(a_root)
    # The database keeps a session's last activity and a log's text, not the files' times.
    assert _mtimes_ms(c_root, plain=True) == _mtimes_ms(a_root, plain=True)
    on_disk = set(_tree(b_root))  # on PostgreSQL only files no layer reads stay on disk
    assert "knowledge.md" not in on_disk and "notes.txt" in on_disk
    assert not any(name.startswith(("sessions/", "daily-logs/")) for name in on_disk)

    from markus_memory.storage._postgres.documents import PostgresDocuments

    rows = PostgresDocuments(postgres_url, first)
    try:
        assert rows.dump() == {
            name: data.decode("utf-8")
            for name, data in _tree(a_root).items()
            if name in rows.names()
        }
        assert rows.names() == [
            "MEMORY.md",
            "NOTEBOOK.md",
            "knowledge.md",
            "role/HEARTBEAT.md",
            "role/ROLE.md",
            "state.md",
        ]
    finally:
        rows.close()

    with open_agent(first, settings=on_pg) as mem:  # the agent works on PostgreSQL
        assert [o.content for o in mem.knowledge.observations()] == [
            "TypeScript is the main language"
        ]
        assert mem.roles.role().name == "Reviewer"
        assert mem.search("TypeScript").hits
        assert [h.text for h in mem.recall_conversation("hello")] == ["hello ✓"]
        assert [h.activity.label for h in mem.activities.search("review")] == ["review the PR"]
        mem.notebook.upsert("after-move", "written on PostgreSQL")
    again = export_agent(on_pg, files_c, first, replace=True)
    assert again.removed == 0 and again.rows == 0  # the same rows are already there
    assert "## after-move" in (c_root / "NOTEBOOK.md").read_text(encoding="utf-8")


def test_the_destination_must_be_empty_unless_replacing(tmp_path: Path) -> None:
    src, dst = Settings(home=tmp_path / "a"), Settings(home=tmp_path / "b")
    _populate(src, "agt_one")
    export_agent(src, dst, "agt_one")
    (dst.agent_dir("agt_one") / "role" / "POLICIES.md").write_text("## extra\n- gone\n")
    with pytest.raises(InvalidInputError, match="replace=True"):
        export_agent(src, dst, "agt_one")
    report = export_agent(src, dst, "agt_one", replace=True)
    assert report.removed == 1
    assert _tree(dst.agent_dir("agt_one")) == _tree(src.agent_dir("agt_one"))
    assert agent_ids(dst) == ["agt_one"]


def test_a_memory_is_never_exported_onto_itself(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="same memory"):
        export_agent(Settings(home=tmp_path), Settings(home=tmp_path))


def test_different_rows_at_the_destination_are_refused_before_writing(tmp_path: Path) -> None:
    src, dst = Settings(home=tmp_path / "a"), Settings(home=tmp_path / "b")
    _populate(src, "agt_one")
    with open_agent("agt_one", settings=dst) as mem:
        mem.activities.start("task", "something else")
    (dst.agent_dir("agt_one") / "knowledge.md").unlink()
    with pytest.raises(InvalidInputError, match="--replace .* or --merge"):
        export_agent(src, dst, "agt_one")
    assert not (dst.agent_dir("agt_one") / "NOTEBOOK.md").exists()


def _diverged(tmp_path: Path) -> tuple[Settings, Settings]:
    """A source agent, and the same agent at the destination with rows and a note of its own."""
    src, dst = Settings(home=tmp_path / "a"), Settings(home=tmp_path / "b")
    _populate(src, "agt_one")
    with open_agent("agt_one", settings=dst) as mem:
        mem.activities.start("task", "kept at the destination")
        mem.notebook.upsert("mine", "only at the destination")
    return src, dst


def test_replace_backs_the_destination_up_then_mirrors_the_source(tmp_path: Path) -> None:
    src, dst = _diverged(tmp_path)
    theirs = _episodic(dst, "agt_one")
    report = export_agent(src, dst, "agt_one", replace=True)
    assert _episodic(dst, "agt_one") == _episodic(src, "agt_one")
    assert _tree(dst.agent_dir("agt_one")) == _tree(src.agent_dir("agt_one"))
    assert report.backup is not None and Path(report.backup).parent == dst.home / "backups"
    backup = Settings(home=Path(report.backup))
    assert _episodic(backup, "agt_one") == theirs
    with open_agent("agt_one", settings=backup) as mem:
        assert mem.notebook.get("mine") is not None
    again = export_agent(src, dst, "agt_one", replace=True)  # nothing to change: no backup
    assert again.backup is None and again.rows == 0
    assert len(list((dst.home / "backups").iterdir())) == 1


def test_merge_adds_only_what_the_destination_lacks_and_is_idempotent(tmp_path: Path) -> None:
    src, dst = _diverged(tmp_path)
    kept_notebook = (dst.agent_dir("agt_one") / "NOTEBOOK.md").read_bytes()
    first = export_agent(src, dst, "agt_one", merge=True)
    assert first.rows == _episodic(src, "agt_one").count and first.backup is None
    merged = _episodic(dst, "agt_one")
    assert len(merged.activities) == len(_episodic(src, "agt_one").activities) + 1
    assert (dst.agent_dir("agt_one") / "NOTEBOOK.md").read_bytes() == kept_notebook
    assert (dst.agent_dir("agt_one") / "notes.txt").read_bytes() == (
        src.agent_dir("agt_one") / "notes.txt"
    ).read_bytes()
    second = export_agent(src, dst, "agt_one", merge=True)
    assert (second.rows, second.documents, second.files) == (0, 0, 0)
    assert _episodic(dst, "agt_one") == merged


def test_dot_names_in_the_agent_directory_are_exported(tmp_path: Path) -> None:
    src, dst = Settings(home=tmp_path / "a"), Settings(home=tmp_path / "b")
    _populate(src, "agt_one")
    root = src.agent_dir("agt_one")
    (root / ".notes").write_bytes(b"made by the memory tool\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "deep.md").write_bytes(b"# deep\n")
    (root / "role" / ".draft.md").write_bytes(b"not a document\n")
    export_agent(src, dst, "agt_one")
    out = dst.agent_dir("agt_one")
    assert (out / ".notes").read_bytes() == b"made by the memory tool\n"
    assert (out / ".hidden" / "deep.md").read_bytes() == b"# deep\n"
    assert (out / "role" / ".draft.md").read_bytes() == b"not a document\n"
    assert not (out / ".lock.tmp").exists()


def test_rows_born_on_postgres_come_back_to_sqlite(postgres_url: str, tmp_path: Path) -> None:
    """PostgreSQL → files + SQLite → PostgreSQL (another schema-less home): every row survives."""
    agent = new_agent_id()
    on_pg = Settings(home=tmp_path / "pg", database_url=postgres_url)
    files = Settings(home=tmp_path / "files")
    with open_agent(agent, settings=on_pg) as mem:
        mem.notebook.upsert("k", "on postgres")
        _rows(mem)
    born = _episodic(on_pg, agent)
    assert (
        born.count == 2 + 6 + 1 + 1 + 1 + 3
    )  # activities with their logs, mailbox, decision, chat

    report = export_agent(on_pg, files, agent)
    assert report.rows == born.count
    assert _episodic(files, agent) == born
    assert "## k" in (files.agent_dir(agent) / "NOTEBOOK.md").read_text(encoding="utf-8")

    again = export_agent(files, on_pg, agent, replace=True)  # the same rows: left alone
    assert again.rows == 0 and _episodic(on_pg, agent) == born


def test_different_rows_on_postgres_are_refused_or_replaced(
    postgres_url: str, tmp_path: Path
) -> None:
    agent = new_agent_id()
    files, on_pg = (
        Settings(home=tmp_path / "a"),
        Settings(home=tmp_path / "b", database_url=postgres_url),
    )
    _populate(files, agent)
    with open_agent(agent, settings=on_pg) as mem:
        mem.activities.start("task", "something else")
    with pytest.raises(InvalidInputError, match="--replace"):
        export_agent(files, on_pg, agent)
    with open_agent(agent, settings=on_pg) as mem:
        assert mem.notebook.get("current-task") is None  # nothing was written
    report = export_agent(files, on_pg, agent, replace=True)
    assert report.backup is not None
    assert _episodic(on_pg, agent) == _episodic(files, agent)
    assert export_agent(files, on_pg, agent, merge=True).rows == 0


def test_the_transcript_moves_with_the_agent_even_turns_compacted_out_of_its_files(
    tmp_path: Path,
) -> None:
    source, target = Settings(home=tmp_path / "a"), Settings(home=tmp_path / "b")
    with open_agent("mover", settings=source) as mem:
        sid = mem.sessions.create().id
        for text in ["the harbour ferry leaves at noon", "bring the tickets", "see you there"]:
            mem.sessions.append(sid, {"role": "user", "content": text})
        mem.sessions.compact(sid, keep_last=1)
    report = export_agent(source, target, "mover")
    assert report.rows == 3
    assert _episodic(target, "mover") == _episodic(source, "mover")
    with open_agent("mover", settings=target) as mem:
        hit = mem.recall_conversation("harbour ferry", limit=1)[0]
        assert (hit.session_id, hit.index) == (sid, 0)


def _dreamed(settings: Settings, agent_id: str) -> tuple[bytes, bytes]:
    """An agent with one applied offline dream: knowledge.md before and after it."""
    with open_agent(agent_id, settings=settings) as mem:
        for i in range(5):
            mem.knowledge.save_observation(f"fact number {i}")
        mem.knowledge.save_observation("Deploy on Friday.")
        mem.knowledge.save_observation("deploy  on FRIDAY")
        before = mem.paths.knowledge.read_bytes()
        assert dream(mem).status == "applied"
        return before, mem.paths.knowledge.read_bytes()


def test_item6_export_to_postgres_carries_the_dream_history(
    postgres_url: str, tmp_path: Path
) -> None:
    agent = new_agent_id()
    files = Settings(home=tmp_path / "a")
    before, after = _dreamed(files, agent)
    shared = Settings(home=tmp_path / "b", database_url=postgres_url)
    export_agent(files, shared, agent)
    with open_agent(agent, settings=shared) as mem:
        (run,) = dream_history(mem)
        assert run.status == "applied" and run.knowledge_after == after.decode()
        assert undo_last_dream(mem).ok  # the undo survives the move
        assert mem.documents.read("knowledge.md") == before.decode()
    back = Settings(home=tmp_path / "c")
    export_agent(shared, back, agent)  # and the history (now undone) comes back to files
    with open_agent(agent, settings=back) as mem:
        assert [r.status for r in dream_history(mem)] == ["undone"]


def test_item6_history_already_at_the_destination_is_not_duplicated(tmp_path: Path) -> None:
    files = Settings(home=tmp_path / "a")
    _dreamed(files, "agt_twice")
    copy = Settings(home=tmp_path / "b")
    export_agent(files, copy, "agt_twice")
    export_agent(files, copy, "agt_twice", replace=True)
    with open_agent("agt_twice", settings=copy) as mem:
        assert len(dream_history(mem)) == 1
