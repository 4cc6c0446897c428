"""AgentMemory: the one place where the memory layers of one agent meet."""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import NoReturn

from ._conversations import Conversations
from ._fs import checked_agent_id, sweep_temps, validate_id
from ._fs_docs import FileDocuments
from ._lock import AgentLock
from .backend import Backend, open_backend
from .config import AgentPaths, Settings
from .errors import BusyError, ClosedError, MarkusMemoryError, MigrationError
from .layers.activities import ActivityLog
from .layers.daily_log import DailyLog
from .layers.knowledge import KnowledgeDoc, KnowledgeFile, Observation
from .layers.migration import plan_migration
from .layers.notebook import Notebook
from .layers.procedural import RoleLoader
from .layers.sessions import Sessions
from .layers.state import StateFile
from .search.embedders import Embedder, configured_embedder
from .search.memory_search import MemorySearcher, SearchResult, open_memory_searcher
from .search.recall import ConversationHit
from .storage.audit import pending_in_file
from .storage.dream_journal import recover
from .storage.episodic import EpisodicStore

logger = logging.getLogger(__name__)


class AgentMemory:
    """All memory layers of one agent. Open with :func:`open_agent`; close when done."""

    def __init__(
        self,
        agent_id: str,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        store: EpisodicStore | None = None,
    ) -> None:
        self.agent_id: str = checked_agent_id(agent_id)
        self.settings = settings
        self.backend: Backend = open_backend(settings)
        self.paths = AgentPaths(settings.agent_dir(self.agent_id))
        self.paths.root.mkdir(parents=True, exist_ok=True)
        sweep_temps(self.paths.root)  # temp files of writers killed mid-write
        self.lock = AgentLock(self.paths.lock, settings.lock_timeout_seconds)
        layer_args = (self.paths, self.lock, settings.limits, settings.clock)
        self.documents = self.backend.documents(self.agent_id, self.paths, self.lock)
        docs = self.documents
        self.notebook = Notebook(*layer_args, documents=docs)
        self.state = StateFile(*layer_args, documents=docs)
        held = self.backend.documents_on_postgres  # then sessions and logs live there too
        self.daily_log = DailyLog(
            *layer_args,
            agent_id=self.agent_id,
            held=(lambda: self.store.daily_logs) if held else None,
        )
        self.roles = RoleLoader(*layer_args, documents=docs)
        self.knowledge = KnowledgeFile(*layer_args, documents=docs)
        self.embedder = embedder if embedder is not None else configured_embedder(settings.embedder)
        self._searcher: MemorySearcher | None = None
        self._conversations = Conversations(
            self.agent_id,
            self.paths,
            self.lock,
            settings,
            lambda: self.store,
            embedder=self.embedder,
            scratch=self.backend.scratch_transcripts,
            held=held,
        )
        self._transcripts = self._conversations.transcripts
        self._files = self._conversations.files
        self.sessions: Sessions = self._conversations.sessions
        self.histories = self._conversations.histories
        self._closed = False
        self._store: EpisodicStore | None = store
        self._activities: ActivityLog | None = None
        self._store_guard = threading.Lock()
        self._recover_dream()
        if held:
            self._conversations.move_files_in(self.daily_log)

    @property
    def store(self) -> EpisodicStore:
        """The episodic backend, opened on first use so opening is cheap.

        PostgreSQL when ``settings.database_url`` (``MARKUS_DATABASE_URL``) is set, else
        ``<home>/data.db``; :class:`BackendUnavailableError` if the server cannot be reached.
        """
        with self._store_guard:
            self._check_open()
            if self._store is None:
                self._store = self.backend.episodic()
            return self._store

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(self._closed_message())

    def _closed_message(self) -> str:
        return (
            f"the memory of agent {self.agent_id!r} is closed; open it again with "
            "open_agent() to use it"
        )

    @property
    def activities(self) -> ActivityLog:
        """Episodes of this agent: start / log / end / list / search / get."""
        self._check_open()
        if self._activities is None:
            self._activities = ActivityLog(
                self.store.activities, self.agent_id, self.settings.clock, self.settings.limits
            )
        return self._activities

    @property
    def directory(self) -> Path:
        return self.paths.root

    def _recover_dream(self) -> None:
        """Finish or roll back a dream or dream undo a crash interrupted
        (:mod:`~markus_memory.storage.dream_journal`). Only the files' journal can need it: on
        PostgreSQL documents and history commit together; and only once a dream or undo ran
        here (it left its lock file; without one, the next dream or undo still recovers first).
        Never fails the open (a read-only home is read as it is)."""
        docs, database = self.documents, self.settings.database_path
        if not isinstance(docs, FileDocuments) or not docs.task_lock("dream").exists():
            return
        if not database.exists() or not pending_in_file(database, self.agent_id):
            return
        try:
            with self.documents.exclusive("dream"):
                log = self.backend.dream_audit(self.documents)
                recover(self.documents, log, self.agent_id, self.settings.clock())
        except BusyError:
            return  # the run's process is alive (it holds the dream's lock): it finishes it
        except (OSError, MarkusMemoryError) as exc:
            logger.warning("interrupted dream of %s not recovered: %s", self.agent_id, exc)

    def migrate_legacy(self) -> None:
        """Migrate MEMORY.md / memories.json once, as the original does; spans knowledge and state.

        Order: state.md (merged), knowledge.md (only if absent), memories.json observations
        (merged), and only then delete memories.json. A failure raises :class:`MigrationError`
        and deletes nothing; the next open retries, and no step adds anything twice.
        """
        paths, docs = self.paths, self.documents
        if docs.exists(paths.knowledge.name) and not docs.exists(paths.legacy_memories_json.name):
            return
        with docs.lock():
            plan = plan_migration(paths, self.settings.clock(), documents=docs)
            try:
                if plan.state_text is not None:
                    docs.write(paths.state.name, plan.state_text)
                if plan.knowledge_text is not None:
                    self.knowledge.create(plan.knowledge_text)
                else:
                    self.knowledge.create()
                if plan.observations is not None:
                    self.knowledge.add_observations(
                        Observation(o.id, o.type, o.content, o.timestamp, o.tags)
                        for o in plan.observations
                    )
                    docs.delete(paths.legacy_memories_json.name)
            except (OSError, MarkusMemoryError) as exc:
                raise MigrationError(
                    f"legacy migration failed, nothing was deleted: {exc}"
                ) from exc

    def search(
        self,
        query: str | None,
        limit: int = 10,
        type: str | None = None,
        *,
        now: datetime | None = None,
    ) -> SearchResult:
        """``memory_search``: observations and curated sections matching ``query``, best first.

        An empty query lists the ``limit`` most recent observations (of ``type``). Hand edits of
        knowledge.md are picked up here: the derived indexes follow the document's version.
        A query naming a time ("on 2026-05-01", "in March") lifts what was written then or
        speaks of it; ``now`` (an aware datetime, when the question is asked) makes the times
        named relative to it count too ("yesterday", "last week"), as in
        :meth:`recall_conversation`. The ``memory_search`` tool asks at the agent's clock.
        """
        self._check_open()
        doc, version = self._knowledge_version()
        return self._memory_searcher().search(
            query, doc.observations, doc.sections, version=version, limit=limit, type=type, now=now
        )

    def rebuild_search_index(self) -> None:
        """Drop and re-derive this agent's search index (BM25 and vectors) from knowledge.md."""
        self._check_open()
        searcher = self._memory_searcher()
        doc, version = self._knowledge_version()
        searcher.rebuild(searcher.corpus(doc.observations, doc.sections, None), version)

    def _knowledge_version(self) -> tuple[KnowledgeDoc, str | None]:
        """knowledge.md and the version it was read at (the derived indexes follow it)."""
        seen = self.documents.version(KnowledgeFile.store_name)  # before the read: a race
        doc = self.knowledge.read()  # only re-syncs
        return doc, None if seen is None else seen.token

    def _memory_searcher(self) -> MemorySearcher:
        if self._searcher is None:
            self._searcher = open_memory_searcher(
                self.settings, self.agent_id, self.embedder, self.backend.knowledge_index()
            )
        return self._searcher

    def recall_conversation(
        self,
        query: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        neighbours: int = 1,
        now: datetime | None = None,
    ) -> list[ConversationHit]:
        """Search this agent's past session transcripts, best hit first.

        ``role`` matches a message role (``user``, ``assistant`` …) or the speaker name in
        ``metadata["speaker"]``; ``since``/``until`` bound the message time (inclusive); each hit
        carries up to ``neighbours`` turns of its session on each side. Ranked by bm25 with
        speaker, neighbour and session re-ranking, fused with vectors when the agent was opened
        with an embedder. ``now`` (an aware datetime): when the question is asked, so that
        the times it names relative to it ("a week ago", "last Saturday", "in the past three
        months") count in the time stage; without it only written-out times do. Raises
        InvalidInputError for bad arguments.
        """
        self._check_open()
        if session_id is not None:
            session_id = validate_id("session id", session_id)
        return self._transcripts.caught_up().recall(
            query,
            session_id=session_id,
            role=role,
            since=since,
            until=until,
            limit=limit,
            neighbours=neighbours,
            now=now,
        )

    def delete_session(self, session_id: str) -> bool:
        """Delete a session: its files, and its messages from the transcript store with their
        recall index entries and vectors, so recall no longer finds its text. False when
        neither held it."""
        self._check_open()
        session_id = validate_id("session id", session_id)
        return self._conversations.delete(session_id)

    def catch_up_transcripts(self) -> None:
        """Record in the store every session message it does not hold yet (appends still
        queued, and session files written past it), and with an embedder wait until each has
        its vector: a recall does the first part and ranks what is embedded by then."""
        self._check_open()
        self._transcripts.caught_up().wait_for_vectors()

    def close(self) -> None:
        """Flush and release everything this handle holds; from then on every call through it
        (a layer's read or write, search, recall, the store) raises ClosedError. Safe to call
        twice."""
        if self._closed:
            return
        self._conversations.close()  # every queued append reaches the store first
        if self._searcher is not None:
            self._searcher.close()
        self._searcher = None
        with self._store_guard:
            store, self._store = self._store, None
            self._activities = None
        if store is not None:
            store.close()
        self.documents.close()
        self._closed = True
        message = self._closed_message()
        self.lock.close(message)  # a layer object kept from before refuses every write
        for name in _LAYERS:  # and through the handle every call, reads included
            setattr(self, name, _Closed(message))

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AgentMemory({self.agent_id!r}, home={str(self.settings.home)!r})"


_LAYERS = (
    "notebook",
    "state",
    "knowledge",
    "daily_log",
    "roles",
    "sessions",
    "histories",
    "documents",
)
"""The layers a handle exposes as attributes; each becomes :class:`_Closed` at ``close()``."""


class _Closed:
    """Stands for a layer of a closed handle: any use raises :class:`ClosedError`."""

    def __init__(self, message: str) -> None:
        self._message = message

    def __getattr__(self, name: str) -> NoReturn:
        raise ClosedError(self._message)


def open_store(settings: Settings) -> EpisodicStore:
    """The episodic store the settings select, as :meth:`Backend.episodic` picks it."""
    return open_backend(settings).episodic()


def open_agent(
    agent_id: str,
    home: Path | str | None = None,
    *,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    store: EpisodicStore | None = None,
) -> AgentMemory:
    """Open (creating if needed) the memory of ``agent_id`` under ``home``.

    ``home`` defaults to ``$MARKUS_HOME`` or ``~/.markus``; ``settings`` overrides everything.
    ``embedder`` (e.g. ``MiniLMEmbedder()`` from the ``[semantic]`` extra) adds vectors to
    :meth:`AgentMemory.recall_conversation` and :meth:`AgentMemory.search`; without one the
    settings choose (``Settings.embedder``, ``MARKUS_EMBEDDER``: without ``settings`` the
    local MiniLM when the ``[semantic]`` extra is installed), else bm25 alone. ``store``
    replaces the episodic backend the settings select (the handle closes it).
    """
    resolved = settings if settings is not None else Settings.from_env(home=home)
    memory = AgentMemory(agent_id, resolved, embedder=embedder, store=store)
    try:
        memory.migrate_legacy()
    except BaseException:
        memory.close()
        raise
    return memory
