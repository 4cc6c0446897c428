"""A dream, or an undo, that a crash cannot split: the run's row is its journal.

Applying a dream: the run's row is inserted ``applying`` with every text needed either way
(knowledge.md and state.md before and after) and made durable, then the documents are written,
then the row turns ``applied``. Undoing one: the row turns ``undoing`` (durably), the pre-dream
texts are written back, then the row turns ``undone``. The caller holds the dream's exclusive
task lock and the documents' lock throughout, so a row left ``applying`` or ``undoing`` while
nobody holds the task lock belongs to a process that died.

:func:`recover` resolves such rows (when the agent is next opened, and before any dream or
undo), comparing each document the run changes with its texts:

* ``applying``, and some document already holds its post-dream text: *finish* (write the post
  texts to the documents still holding their pre-dream ones, mark ``applied``). Someone may
  have read the new text already, and the run stays undoable.
* ``applying``, no document written yet: *roll back*, which writes nothing; the run is marked
  ``failed`` (so it does not use up the day's dream).
* ``undoing``: *finish* (write the pre-dream texts back, mark ``undone``): the undo was asked
  for and was checked against the post-dream texts before it started. Only if a document now
  holds neither text (another writer changed it after the crash) is the undo *rolled back*
  instead (the post-dream texts back, ``applied`` again), so that no later work is thrown away.

A document holding neither of its texts is never overwritten. On PostgreSQL the history joins
the documents' locked transaction, so all of this commits as one transaction and a kill leaves
nothing to recover.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime

from .._docs import DocumentStore
from ..errors import MarkusMemoryError
from .dream_runs import AuditLog, DreamRun

log = logging.getLogger(__name__)

KNOWLEDGE = "knowledge.md"
STATE = "state.md"


def exact_texts(documents: DocumentStore) -> tuple[str | None, str | None]:
    """knowledge.md and state.md exactly as stored (a BOM kept; None: absent)."""
    return documents.stored(KNOWLEDGE), documents.stored(STATE)


def _changes(run: DreamRun) -> Iterator[tuple[str, str | None, str | None]]:
    """(name, pre-dream text, post-dream text) of each document ``run`` changes."""
    for name, before, after in (
        (KNOWLEDGE, run.knowledge_before, run.knowledge_after),
        (STATE, run.state_before, run.state_after),
    ):
        if before != after:
            yield name, before, after


def _put(documents: DocumentStore, name: str, text: str | None) -> None:
    if text is None:
        documents.delete(name)
    else:
        documents.write(name, text)


def _move(documents: DocumentStore, run: DreamRun, *, forward: bool) -> None:
    """Write the post-dream (``forward``) or pre-dream texts to each changed document that
    holds the other one; a document holding neither is left alone."""
    for name, before, after in _changes(run):
        source, target = (before, after) if forward else (after, before)
        if documents.stored(name) == source:
            _put(documents, name, target)


def apply(documents: DocumentStore, audit: AuditLog, run: DreamRun) -> None:
    """Write the dream ``run`` (its texts set): intent, documents, completion.

    Hold the dream's task lock and ``documents.lock()``. If a document write fails, the
    documents are put back and the run marked ``failed`` before the error is raised again;
    if even that fails, the run is left ``applying`` for :func:`recover`."""
    audit.record(replace(run, status="applying"), durable=True)
    try:
        for name, _, after in _changes(run):
            _put(documents, name, after)
    except (OSError, MarkusMemoryError) as exc:
        try:
            _move(documents, run, forward=False)
            audit.set_status(run.agent_id, run.run_id, "failed", error=f"not written: {exc}")
        except (OSError, MarkusMemoryError):
            log.warning("dream %s left to recover: %s", run.run_id, exc)
        raise
    audit.set_status(run.agent_id, run.run_id, "applied")


def undo(documents: DocumentStore, audit: AuditLog, run: DreamRun, at: datetime) -> None:
    """Undo the applied ``run`` (its post-dream texts checked present): intent, documents,
    completion. Hold the dream's task lock and ``documents.lock()``."""
    audit.set_status(run.agent_id, run.run_id, "undoing", durable=True)
    for name, before, _ in _changes(run):
        _put(documents, name, before)
    audit.mark_undone(run.agent_id, run.run_id, at)


def recover(documents: DocumentStore, audit: AuditLog, agent_id: str, at: datetime) -> list[str]:
    """Finish or roll back every run of ``agent_id`` a crash left ``applying`` or
    ``undoing``; what was done, one line a run. Hold the dream's task lock (so that no run
    in progress is taken for a dead one)."""
    if not audit.pending(agent_id):
        return []
    done = []
    with documents.lock():
        for run in audit.pending(agent_id):
            done.append(_recover(documents, audit, run, at))
    for line in done:
        log.warning("recovered an interrupted dream: %s", line)
    return done


def _recover(documents: DocumentStore, audit: AuditLog, run: DreamRun, at: datetime) -> str:
    holds = {}
    for name, before, after in _changes(run):
        text = documents.stored(name)
        holds[name] = "after" if text == after else "before" if text == before else "other"
    if run.status == "applying":
        if "after" in holds.values():
            _move(documents, run, forward=True)
            audit.set_status(run.agent_id, run.run_id, "applied")
            return f"{run.run_id}: interrupted while applying; finished"
        audit.set_status(
            run.agent_id,
            run.run_id,
            "failed",
            error="interrupted before it changed a document; nothing was applied",
        )
        return f"{run.run_id}: interrupted before applying; rolled back"
    if "other" not in holds.values():
        _move(documents, run, forward=False)
        audit.mark_undone(run.agent_id, run.run_id, at)
        return f"{run.run_id}: interrupted while undoing; undo finished"
    _move(documents, run, forward=True)
    changed = ", ".join(name for name, where in holds.items() if where == "other")
    audit.set_status(
        run.agent_id,
        run.run_id,
        "applied",
        error=f"an interrupted undo was rolled back: {changed} changed after the crash",
    )
    return f"{run.run_id}: interrupted while undoing; rolled back ({changed} changed since)"
