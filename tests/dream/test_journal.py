"""A dream or an undo killed half-way (a real SIGKILL at a chosen write) is finished or rolled
back when the agent is next opened: the documents hold exactly the pre-dream or the post-dream
texts and the history says which. On PostgreSQL documents and history commit together."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from markus_memory._fs_docs import FileDocuments
from markus_memory.config import Limits, Settings
from markus_memory.dream import dream, dream_history, undo_last_dream
from markus_memory.dream.cycle import audit_log
from markus_memory.memory import AgentMemory, open_agent
from markus_memory.storage import audit
from markus_memory.storage.dream_journal import exact_texts
from markus_memory.storage.dream_runs import DreamRun
from tests.clocks import FakeClock
from tests.postgres_support import new_agent_id, postgres_url

from .conftest import START

__all__ = ["postgres_url"]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs fork and SIGKILL")

AGENT = "agt_journal"


def _settings(home: Path, url: str | None = None) -> Settings:
    return Settings(home=home, database_url=url, limits=Limits(), clock=FakeClock(START))


def _seeded(settings: Settings, agent: str = AGENT) -> tuple[str | None, str | None]:
    """Duplicates to merge and an expired state entry to prune; the pre-dream texts."""
    old = replace(settings, clock=FakeClock(START.replace(month=START.month - 1)))
    with open_agent(agent, settings=old) as mem:
        mem.state.update("stale", "a month old")
    with open_agent(agent, settings=settings) as mem:
        mem.state.update("fresh", "kept")
        for text in ("deploy on fridays", "Deploy on Fridays.", "the cat is grey"):
            mem.knowledge.save_observation(text)
        return exact_texts(mem.documents)


def _killed(settings: Settings, agent: str, work: Callable[[AgentMemory], object]) -> None:
    """Run ``work`` in a child process, which a patched write SIGKILLs (see ``_kill_after``)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child dies by its own SIGKILL
        try:
            work(open_agent(agent, settings=settings))
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def _kill_after(cls: Any, method: str, when: Callable[..., bool]) -> Callable[[], None]:
    """In the child: make ``cls.method`` SIGKILL the process once it returned and ``when``."""

    def patch() -> None:
        original = getattr(cls, method)

        def killing(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if when(*args, **kwargs):
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        setattr(cls, method, killing)

    return patch


def _then(patch: Callable[[], None], call: Callable[[AgentMemory], object]) -> Any:
    def work(mem: AgentMemory) -> None:
        patch()
        call(mem)

    return work


def _knowledge_written(_docs: object, name: str, *_: object, **__: object) -> bool:
    return name == "knowledge.md"


def _reopened(settings: Settings, agent: str = AGENT) -> tuple[Any, list[DreamRun]]:
    with open_agent(agent, settings=settings) as mem:  # the open recovers
        return exact_texts(mem.documents), dream_history(mem)


def test_a_dream_killed_between_its_two_documents_is_finished_on_open(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "home")
    pre = _seeded(settings)
    kill = _kill_after(FileDocuments, "write", _knowledge_written)
    _killed(settings, AGENT, _then(kill, dream))
    texts, runs = _reopened(settings)
    assert [r.status for r in runs] == ["applied"]
    assert texts == (runs[0].knowledge_after, runs[0].state_after) != pre
    assert (runs[0].knowledge_before, runs[0].state_before) == pre
    with open_agent(AGENT, settings=settings) as mem:
        assert undo_last_dream(mem).ok
        assert exact_texts(mem.documents) == pre


def test_a_dream_killed_before_any_document_is_rolled_back_on_open(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "home")
    pre = _seeded(settings)
    kill = _kill_after(audit.StoredAuditLog, "record", lambda *a, **k: True)
    _killed(settings, AGENT, _then(kill, dream))
    texts, runs = _reopened(settings)
    assert texts == pre
    assert all(r.status != "applied" for r in runs)


def test_an_undo_killed_between_its_two_documents_is_finished_on_open(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "home")
    pre = _seeded(settings)
    with open_agent(AGENT, settings=settings) as mem:
        assert dream(mem).status == "applied"
    kill = _kill_after(FileDocuments, "write", _knowledge_written)
    _killed(settings, AGENT, _then(kill, undo_last_dream))
    texts, runs = _reopened(settings)
    assert texts == pre and [r.status for r in runs] == ["undone"]


def test_a_dream_and_undo_wait_for_a_recovery_a_read_only_open_skipped(tmp_path: Path) -> None:
    """The recovery also runs before the next dream or undo (here the open could not run it:
    the run was left pending after the open)."""
    settings = _settings(tmp_path / "home")
    pre = _seeded(settings)
    with open_agent(AGENT, settings=settings) as mem:
        kill = _kill_after(FileDocuments, "write", _knowledge_written)
        _killed(settings, AGENT, _then(kill, dream))
        assert [r.status for r in audit_log(mem).pending(AGENT)] == ["applying"]
        result = undo_last_dream(mem)
        assert result.ok and exact_texts(mem.documents) == pre
        assert [r.status for r in dream_history(mem)] == ["undone"]


def test_recovery_never_overwrites_a_document_changed_after_the_crash(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "home")
    _seeded(settings)
    with open_agent(AGENT, settings=settings) as mem:
        assert dream(mem).status == "applied"
        kill = _kill_after(FileDocuments, "write", _knowledge_written)
        _killed(settings, AGENT, _then(kill, undo_last_dream))
        mem.knowledge.save_observation("written after the crash, before any recovery")
        changed = exact_texts(mem.documents)[0]
    texts, runs = _reopened(settings)
    assert texts[0] == changed  # kept
    assert texts[1] == runs[0].state_after and runs[0].status == "applied"  # undo rolled back
    assert "rolled back" in (runs[0].error or "")


def test_a_dream_that_changes_nothing_is_recorded_unchanged_and_not_undone(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path / "home")
    with open_agent(AGENT, settings=settings) as mem:
        for text in ("the cat is grey", "deploys run on fridays"):
            mem.knowledge.save_observation(text)
        before = exact_texts(mem.documents)
        report = dream(mem)
        assert report.status == "unchanged" and report.diff == ""
        assert report.observations_before == report.observations_after == 2
        assert [r.status for r in dream_history(mem)] == ["unchanged"]
        undo = undo_last_dream(mem)
        assert not undo.ok and undo.reason == "no applied dream to undo"
        assert exact_texts(mem.documents) == before


def test_a_kept_byte_order_mark_is_restored_by_undo(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "home")
    pre = _seeded(settings)
    path = settings.agent_dir(AGENT) / "knowledge.md"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    with open_agent(AGENT, settings=settings) as mem:
        assert dream(mem).status == "applied"
        assert undo_last_dream(mem).ok
    assert path.read_bytes() == b"\xef\xbb\xbf" + (pre[0] or "").encode()


# -- PostgreSQL: one transaction -------------------------------------------------------------


def test_postgres_an_undo_killed_after_its_history_write_leaves_the_dream(
    postgres_url: str, tmp_path: Path
) -> None:
    """Killed after the run was marked undone but before the documents' transaction
    committed: nothing of the undo may remain."""
    settings = _settings(tmp_path / "home", postgres_url)
    agent = new_agent_id()
    _seeded(settings, agent)
    with open_agent(agent, settings=settings) as mem:
        assert dream(mem).status == "applied"
        post = exact_texts(mem.documents)
    kill = _kill_after(audit.StoredAuditLog, "mark_undone", lambda *a, **k: True)
    _killed(settings, agent, _then(kill, undo_last_dream))
    texts, runs = _reopened(settings, agent)
    assert texts == post and [r.status for r in runs] == ["applied"]


def test_postgres_a_dream_killed_after_its_history_write_leaves_nothing(
    postgres_url: str, tmp_path: Path
) -> None:
    settings = _settings(tmp_path / "home", postgres_url)
    agent = new_agent_id()
    pre = _seeded(settings, agent)
    kill = _kill_after(audit.StoredAuditLog, "record", lambda *a, **k: True)
    _killed(settings, agent, _then(kill, dream))
    texts, runs = _reopened(settings, agent)
    assert texts == pre and runs == []


def test_a_document_the_disk_refuses_puts_the_other_back_and_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """state.md cannot be written (a full disk): knowledge.md, already written, is put back."""
    settings = _settings(tmp_path / "home")
    pre = _seeded(settings)
    original = FileDocuments.write

    def full_disk(self: FileDocuments, name: str, text: str, **kw: Any) -> None:
        if name == "state.md":
            raise OSError(28, "No space left on device", str(self.root / name))
        original(self, name, text, **kw)

    with open_agent(AGENT, settings=settings) as mem:
        monkeypatch.setattr(FileDocuments, "write", full_disk)
        report = dream(mem)
        monkeypatch.undo()
        assert report.status == "failed" and "No space left" in (report.error or "")
        assert exact_texts(mem.documents) == pre
        assert [r.status for r in dream_history(mem)] == ["failed"]
