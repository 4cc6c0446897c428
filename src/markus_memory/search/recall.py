"""recall_conversation: ranked search over one agent's past session transcripts, with context."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import InvalidInputError
from .conversation import ConversationIndex, RankingOptions, Turn
from .embedders import Embedder
from .transcript_vectors import TranscriptVectors

MAX_LIMIT = 50
MAX_NEIGHBOURS = 5


@dataclass(frozen=True)
class ContextTurn:
    """A turn shown next to a hit (not itself ranked)."""

    index: int
    role: str
    timestamp: datetime | None
    text: str
    speaker: str | None = None


@dataclass(frozen=True)
class ConversationHit:
    """One ranked transcript message, with up to ``neighbours`` turns on each side.

    ``index`` is the message's absolute seq in its session: compaction never renumbers it, so
    after a compaction it is no longer a position in the session file.
    """

    session_id: str
    index: int
    role: str
    timestamp: datetime | None
    text: str
    score: float
    speaker: str | None
    metadata: Mapping[str, Any]
    before: tuple[ContextTurn, ...]
    after: tuple[ContextTurn, ...]


def speaker_of(metadata: Mapping[str, Any] | None) -> str | None:
    """The speaker name of a message: ``metadata["speaker"]`` (None when absent or blank)."""
    value = (metadata or {}).get("speaker")
    return value.strip() if isinstance(value, str) and value.strip() else None


def default_options(embedder: Embedder | None) -> RankingOptions:
    """The ranking measured best on LoCoMo dev (vectors join only with an embedder)."""
    return RankingOptions() if embedder is not None else RankingOptions(vector_weight=0.0)


class TranscriptRecall:
    """Keeps a :class:`ConversationIndex` in step with an agent's sessions and answers recalls.

    ``backfill`` yields every stored turn; it is read once, lazily, at the first recall (turns
    added before that are buffered and win over their stored copy).
    """

    def __init__(
        self,
        backfill: Callable[[], Iterable[Turn]],
        *,
        embedder: Embedder | None = None,
        options: RankingOptions | None = None,
        vector_store: TranscriptVectors | None = None,
    ) -> None:
        self._backfill = backfill
        self._vector_store = vector_store
        self._index = ConversationIndex(
            embedder=embedder,
            options=options or default_options(embedder),
            vector_store=vector_store,
        )
        self._pending: list[Turn] = []
        self._loaded = False
        self._lock = threading.RLock()

    @property
    def index(self) -> ConversationIndex:
        return self._index

    def add(self, turn: Turn) -> None:
        """Index one new turn (buffered until the first recall loads the history). Turn indexes
        are absolute seqs, which compaction never renumbers: a turn at a known position
        replaces it."""
        self.add_many([turn])

    def add_many(self, turns: Sequence[Turn]) -> None:
        """:meth:`add` for several turns at once (one index transaction once loaded)."""
        with self._lock:
            if not self._loaded:
                self._pending.extend(turns)
            else:
                self._index.add(turns)

    def ensure_loaded(self) -> None:
        with self._lock:
            if self._loaded:
                return
            # A turn appended since this handle opened is both on disk and pending: index it
            # once, from the pending copy (it carries the exact append time).
            pending = {(turn.session_id, turn.index) for turn in self._pending}
            self._index.add(
                turn for turn in self._backfill() if (turn.session_id, turn.index) not in pending
            )
            self._index.add(self._pending)
            self._pending = []
            self._loaded = True

    def recall(
        self,
        query: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        neighbours: int = 1,
    ) -> list[ConversationHit]:
        """Hits best first. Bad arguments raise InvalidInputError before anything is searched."""
        _check(query, role, since, until, limit, neighbours)
        with self._lock:
            self.ensure_loaded()
            ranked = self._index.search(
                query, session_id=session_id, role=role, since=since, until=until, limit=limit
            )
            return [self._hit(item.turn, item.score, neighbours) for item in ranked]

    def _hit(self, turn: Turn, score: float, neighbours: int) -> ConversationHit:
        def around(offsets: Iterable[int]) -> tuple[ContextTurn, ...]:
            found = (self._index.get(turn.session_id, turn.index + d) for d in offsets)
            return tuple(
                ContextTurn(other.index, other.role, other.timestamp, other.text, other.speaker)
                for other in found
                if other is not None
            )

        return ConversationHit(
            session_id=turn.session_id,
            index=turn.index,
            role=turn.role,
            timestamp=turn.timestamp,
            text=turn.text,
            score=round(score, 6),
            speaker=turn.speaker,
            metadata=dict(turn.metadata),
            before=around(range(-neighbours, 0)),
            after=around(range(1, neighbours + 1)),
        )

    def close(self) -> None:
        self._index.close()
        if self._vector_store is not None:
            self._vector_store.close()


def _check(
    query: object,
    role: object,
    since: datetime | None,
    until: datetime | None,
    limit: object,
    neighbours: object,
) -> None:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("query must be a non-empty string, e.g. query='camping trip'")
    if role is not None and (not isinstance(role, str) or not role.strip()):
        raise InvalidInputError("role must be a role or speaker name such as 'user'")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    if (
        not isinstance(neighbours, int)
        or isinstance(neighbours, bool)
        or not 0 <= neighbours <= MAX_NEIGHBOURS
    ):
        raise InvalidInputError(f"neighbours must be an integer from 0 to {MAX_NEIGHBOURS}")
    for name, moment in (("since", since), ("until", until)):
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            raise InvalidInputError(f"{name} must be a timezone-aware datetime")
    if since is not None and until is not None and since > until:
        raise InvalidInputError("since must not be later than until")
