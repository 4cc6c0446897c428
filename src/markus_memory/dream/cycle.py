"""One dream: gather, plan (model or offline), validate, compute, journal, write, record.

The model is called directly (no mailbox), with no tools and a deadline, outside the agent
lock; at most ``MAX_CONCURRENT_DREAMS`` model calls run at once in a process and a slot is
always released (the original could wait forever on a dropped dream request and
leak one of its three process-wide slots). The plan is then applied to a scratch copy of
knowledge.md inside ``KnowledgeFile.transaction()`` and state.md is pruned there, which gives
the post-dream texts; the run is journaled with its pre- and post-dream texts before the
documents are written (:mod:`~markus_memory.storage.dream_journal`: a crash is finished or
rolled back on the next open). A failed run writes nothing and is recorded as failed, so it
does not use up the day's slot; a run that changes nothing writes nothing and is recorded
``unchanged``.

At most one dream runs per agent at a time, across processes and hosts: a run holds
``memory.documents.exclusive("dream")`` (a lock file, or ``pg_try_advisory_lock`` when the
documents live in PostgreSQL) from planning to recording; a second run meanwhile returns at
once with status ``skipped`` and the reason in ``error`` (nothing written, nothing recorded).
All reads and writes go through ``memory.documents``, so a dream works on either store.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import asdict, dataclass
from datetime import datetime

from ..config import epoch_ms
from ..errors import BusyError, LLMError, MarkusMemoryError, StorageError
from ..layers.knowledge import KnowledgeDoc, KnowledgeFile, parse_knowledge, render_knowledge
from ..layers.state import StateFile
from ..llm import ChatModel
from ..memory import AgentMemory
from ..storage import dream_journal as journal
from ..storage.dream_runs import AuditLog, DreamRun
from ._scratch import ScratchDocuments
from .apply import Applied, apply_plan
from .offline import TextEmbedder, offline_plan
from .plan import CheckedPlan, Plan, Rejection, parse_reply
from .prompt import build_request
from .report import DreamReport, changes_json, file_diff, summarise
from .trigger import TriggerDecision, decide

MAX_CONCURRENT_DREAMS = 3
DEFAULT_TIMEOUT_SECONDS = 300.0
_SLOTS = threading.BoundedSemaphore(MAX_CONCURRENT_DREAMS)


def audit_log(memory: AgentMemory) -> AuditLog:
    """The audit log beside the documents a dream changes, as the memory's backend decides
    (:meth:`~markus_memory.backend.Backend.dream_audit`)."""
    return memory.backend.dream_audit(memory.documents)


def should_dream(
    memory: AgentMemory, now: datetime | None = None, *, audit: AuditLog | None = None
) -> TriggerDecision:
    """Whether the trigger policy wants a dream now (successful runs come from the audit)."""
    log = audit if audit is not None else audit_log(memory)
    moment = now if now is not None else memory.settings.clock()
    runs = [r.started_at for r in log.runs(memory.agent_id) if r.status != "failed"]
    count = len(memory.knowledge.observations())
    return decide(count, runs, moment, memory.settings.limits)


def dream_if_due(
    memory: AgentMemory,
    llm: ChatModel | None = None,
    *,
    now: datetime | None = None,
    audit: AuditLog | None = None,
    embedder: TextEmbedder | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> DreamReport | None:
    """Run :func:`dream` when :func:`should_dream` says so (for a scheduler); else None."""
    log = audit if audit is not None else audit_log(memory)
    if not should_dream(memory, now, audit=log).run:
        return None
    return dream(memory, llm, audit=log, now=now, embedder=embedder, timeout=timeout)


@dataclass(frozen=True)
class FileTexts:
    """The exact text of knowledge.md and state.md (None: the file does not exist)."""

    knowledge: str | None
    state: str | None


KNOWLEDGE = "knowledge.md"
STATE = "state.md"


def _texts(memory: AgentMemory) -> FileTexts:
    return FileTexts(*journal.exact_texts(memory.documents))


def cannot_write(what: str, memory: AgentMemory, exc: OSError) -> StorageError:
    """The error of a dream or undo the disk refused (a read-only home): what could not be
    written, and that nothing changed."""
    where = exc.filename if exc.filename else f"the files of agent {memory.agent_id!r}"
    reason = exc.strerror or type(exc).__name__
    return StorageError(
        f"{what} of agent {memory.agent_id!r} changed nothing: {where} cannot be written ({reason})"
    )


def recover(memory: AgentMemory, log: AuditLog) -> list[str]:
    """Finish or roll back a dream or undo a crash interrupted (hold the dream's task lock)."""
    return journal.recover(memory.documents, log, memory.agent_id, memory.settings.clock())


def _plan(
    memory: AgentMemory,
    llm: ChatModel | None,
    embedder: TextEmbedder | None,
    timeout: float,
) -> CheckedPlan:
    doc = memory.knowledge.read()
    limits = memory.settings.limits
    if llm is None:
        plan = offline_plan(
            doc.observations, embedder=embedder, max_content_chars=limits.section_max_chars
        )
        return CheckedPlan(plan)
    curated = render_knowledge(KnowledgeDoc(doc.preamble, doc.sections))
    request = build_request(doc.observations, curated, limits)
    if not _SLOTS.acquire(timeout=timeout):
        raise LLMError(f"all {MAX_CONCURRENT_DREAMS} dream slots stayed busy for {timeout:g}s")
    try:
        answer = llm.complete(list(request.messages), tools=None, timeout=timeout)
    except LLMError:
        raise
    except Exception as exc:  # any ChatModel implementation: its failure is a failed dream
        raise LLMError(f"the chat model failed: {exc!r}") from exc
    finally:
        _SLOTS.release()
    return parse_reply(answer.text, request.batch, limits)


def dream(
    memory: AgentMemory,
    llm: ChatModel | None = None,
    dry_run: bool = False,
    *,
    embedder: TextEmbedder | None = None,
    audit: AuditLog | None = None,
    now: datetime | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> DreamReport:
    """Consolidate ``memory`` once: with ``llm`` (a ChatModel) or, without one, offline.

    ``dry_run`` returns the plan and the diff and writes nothing (not even the audit).
    The offline consolidator also compares embeddings when ``embedder`` (default: the memory's
    own, if it has one) is given.
    Never raises for a model failure: the report says ``failed`` and why. While another
    dream of the same agent runs (any process, any host) it returns ``skipped`` at once.
    """
    if dry_run:
        return _dream(memory, llm, dry_run, embedder, audit, now, timeout)
    mode = "offline" if llm is None else "llm"
    try:
        with memory.documents.exclusive("dream"):
            return _dream(memory, llm, dry_run, embedder, audit, now, timeout)
    except BusyError as exc:
        reason = f"skipped: another dream of agent {memory.agent_id!r} is running ({exc})"
        return DreamReport("skipped", mode, None, Plan(), error=reason)
    except OSError as exc:
        raise cannot_write("the dream", memory, exc) from exc


def _dream(
    memory: AgentMemory,
    llm: ChatModel | None,
    dry_run: bool,
    embedder: TextEmbedder | None,
    audit: AuditLog | None,
    now: datetime | None,
    timeout: float,
) -> DreamReport:
    log = audit if audit is not None else audit_log(memory)
    if not dry_run:
        recover(memory, log)
    started = now if now is not None else memory.settings.clock()
    mode = "offline" if llm is None else "llm"
    run_id = f"dream_{epoch_ms(started)}_{secrets.token_hex(3)}"
    checked: CheckedPlan | None = None
    try:
        vectors = embedder if embedder is not None else memory.embedder
        checked = _plan(memory, llm, vectors, timeout)
        if checked.failure is not None:
            raise LLMError(f"unusable reply: {checked.failure}")
    except LLMError as exc:
        rejected = checked.rejections if checked is not None else ()
        return _failed(memory, log, run_id, mode, started, Plan(), rejected, str(exc), dry_run)
    if dry_run:
        before = _texts(memory)
        try:
            after, applied, removed = _outcome(memory, checked.plan, started, before)
        except MarkusMemoryError as exc:
            return _failed(
                memory, log, run_id, mode, started, checked.plan, checked.rejections, str(exc), True
            )
        return _report("dry_run", mode, None, checked, applied, removed, before, after)
    try:
        with memory.documents.lock():
            before = _texts(memory)
            after, applied, state_removed = _outcome(memory, checked.plan, started, before)
            changed = _changed(applied, state_removed) and after != before
            final = after if changed else before
            run = DreamRun(
                run_id,
                memory.agent_id,
                started,
                memory.settings.clock(),
                mode,
                "applied" if changed else "unchanged",
                changes_json(applied, checked.rejections + applied.rejections, state_removed),
                None,
                before.knowledge,
                final.knowledge,
                before.state,
                final.state,
            )
            if not changed:
                log.record(run)
                return _report("unchanged", mode, run_id, checked, applied, (), before, before)
            journal.apply(memory.documents, log, run)
    except (MarkusMemoryError, OSError) as exc:
        return _not_applied(memory, log, run_id, mode, started, checked, exc)
    return _report("applied", mode, run_id, checked, applied, state_removed, before, after)


def _not_applied(
    memory: AgentMemory,
    log: AuditLog,
    run_id: str,
    mode: str,
    started: datetime,
    checked: CheckedPlan,
    exc: MarkusMemoryError | OSError,
) -> DreamReport:
    """The report of a dream that could not be computed or written, as the journal left it."""
    recorded = log.get(memory.agent_id, run_id)
    if recorded is None:  # nothing written (on PostgreSQL: the transaction rolled back)
        if isinstance(exc, StorageError):
            raise exc  # the history cannot be written either
        error = f"nothing was changed: {exc}"
        return _failed(memory, log, run_id, mode, started, checked.plan, checked.rejections, error)
    if recorded.status == "failed":
        error = f"nothing was changed (put back): {exc}"
    else:
        error = (
            f"interrupted ({exc}); the dream is finished or rolled back when the agent is next "
            "opened, or before its next dream or undo"
        )
    return DreamReport("failed", mode, run_id, checked.plan, checked.rejections, error=error)


def _changed(applied: Applied, state_removed: tuple[str, ...]) -> bool:
    """Whether the plan changed anything at all (not only how the files are rendered)."""
    return bool(
        applied.removed
        or applied.merged
        or applied.promoted
        or applied.hygiene
        or applied.dropped_empty
        or state_removed
    )


def _outcome(
    memory: AgentMemory, plan: Plan, now: datetime, before: FileTexts
) -> tuple[FileTexts, Applied, tuple[str, ...]]:
    """The texts the dream would leave, computed by the layers on a scratch copy (nothing is
    written): raises MarkusMemoryError as applying would (an invalid result, a cap)."""
    scratch = ScratchDocuments(memory.documents, (KNOWLEDGE, STATE))
    paths, lock, limits = memory.paths, memory.lock, memory.settings.limits
    knowledge_file = KnowledgeFile(paths, lock, limits, memory.settings.clock, documents=scratch)
    with knowledge_file.transaction() as doc:
        applied = apply_plan(doc, plan, limits, now)
    removed = tuple(StateFile(paths, lock, limits, lambda: now, documents=scratch).prune())
    knowledge = scratch.read(KNOWLEDGE) if KNOWLEDGE in scratch.written else before.knowledge
    state = scratch.read(STATE) if STATE in scratch.written else before.state
    return FileTexts(knowledge, state), applied, removed


def _report(
    status: str,
    mode: str,
    run_id: str | None,
    checked: CheckedPlan,
    applied: Applied,
    state_removed: tuple[str, ...],
    before: FileTexts,
    after: FileTexts,
) -> DreamReport:
    diff = file_diff("knowledge.md", before.knowledge, after.knowledge) + file_diff(
        "state.md", before.state, after.state
    )
    return DreamReport(
        status,
        mode,
        run_id,
        checked.plan,
        checked.rejections + applied.rejections,
        state_removed=state_removed,
        observations_before=_count(before.knowledge),
        observations_after=_count(after.knowledge),
        diff=diff,
        **summarise(applied),
    )


def _count(text: str | None) -> int:
    return 0 if text is None else len(parse_knowledge(text).observations)


def _failed(
    memory: AgentMemory,
    log: AuditLog,
    run_id: str,
    mode: str,
    started: datetime,
    plan: Plan,
    rejections: tuple[Rejection, ...],
    error: str,
    dry_run: bool = False,
) -> DreamReport:
    if not dry_run:
        log.record(
            DreamRun(
                run_id,
                memory.agent_id,
                started,
                memory.settings.clock(),
                mode,
                "failed",
                {"rejections": [asdict(r) for r in rejections]},
                error,
            )
        )
    run = None if dry_run else run_id
    return DreamReport("failed", mode, run, plan, rejections, error=error)
