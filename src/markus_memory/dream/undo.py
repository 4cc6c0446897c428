"""Undo, history and diff of dream runs, read from the audit log."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BusyError, NotFoundError
from ..memory import AgentMemory
from ..storage import dream_journal as journal
from ..storage.dream_runs import AuditLog, DreamRun
from .cycle import audit_log, cannot_write, recover
from .report import file_diff


@dataclass(frozen=True)
class UndoResult:
    """``ok`` when the files were restored; otherwise ``reason`` says why nothing changed."""

    ok: bool
    run_id: str | None
    reason: str | None = None


def dream_history(
    memory: AgentMemory, limit: int | None = None, *, audit: AuditLog | None = None
) -> list[DreamRun]:
    """Recorded runs of this agent, newest first (failed and undone ones included)."""
    return (audit if audit is not None else audit_log(memory)).runs(memory.agent_id, limit)


def dream_diff(memory: AgentMemory, run_id: str, *, audit: AuditLog | None = None) -> str:
    """The unified diff of what run ``run_id`` did to knowledge.md and state.md."""
    run = (audit if audit is not None else audit_log(memory)).get(memory.agent_id, run_id)
    if run is None:
        raise NotFoundError(f"no dream run {run_id!r} for agent {memory.agent_id!r}")
    return file_diff("knowledge.md", run.knowledge_before, run.knowledge_after) + file_diff(
        "state.md", run.state_before, run.state_after
    )


def undo_last_dream(memory: AgentMemory, *, audit: AuditLog | None = None) -> UndoResult:
    """Restore knowledge.md and state.md as they were before the last applied dream.

    Refused (``ok=False``, nothing written) when either file changed since that dream, so an
    undo never throws away later work, and while a dream of the agent runs. Undoing again
    goes one dream further back. A dream that changed nothing (``unchanged``) is never
    undone. Journaled like the dream itself (:mod:`~markus_memory.storage.dream_journal`).
    """
    log = audit if audit is not None else audit_log(memory)
    try:
        with memory.documents.exclusive("dream"):
            recover(memory, log)
            return _undo(memory, log)
    except BusyError:
        reason = f"a dream of agent {memory.agent_id!r} is running; undo it once it has ended"
        return UndoResult(False, None, reason)
    except OSError as exc:
        raise cannot_write("the undo", memory, exc) from exc


def _undo(memory: AgentMemory, log: AuditLog) -> UndoResult:
    last = next((r for r in log.runs(memory.agent_id) if r.status == "applied"), None)
    if last is None:
        return UndoResult(False, None, "no applied dream to undo")
    docs = memory.documents
    with docs.lock():
        now = journal.exact_texts(docs)
        changed = [
            name
            for name, held, expected in zip(
                ("knowledge.md", "state.md"),
                now,
                (last.knowledge_after, last.state_after),
                strict=True,
            )
            if held != expected
        ]
        if changed:
            return UndoResult(
                False,
                last.run_id,
                f"{' and '.join(changed)} changed since dream {last.run_id}; undo refused so "
                "that those changes are kept",
            )
        journal.undo(docs, log, last, memory.settings.clock())
    return UndoResult(True, last.run_id)
