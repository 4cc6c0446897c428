"""recall_conversation: ranked search over one agent's past session transcripts, with context."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import InvalidInputError
from ..storage.recall.contract import RecallFilters as Filters
from .background import BackgroundJob
from .conversation import ConversationIndex, RankingOptions, RecallStore, Turn
from .embedders import Embedder

MAX_LIMIT = 50
MAX_NEIGHBOURS = 5
RECALL_WAIT_SECONDS = 0.1
"""How long a recall waits for vectors still being made before it ranks without them (the
turns still without a vector are ranked by their words)."""
BACKGROUND_BATCH = 32
"""Turns embedded per step in the background: a close waits for one step at most."""


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


def speaker_of(metadata: Mapping[str, Any] | None, text: str = "") -> str | None:
    """The speaker name of a message: ``metadata["speaker"]``, else the name the text starts
    with as a group chat writes it (``"Caroline: we went camping"``); None when neither."""
    value = (metadata or {}).get("speaker")
    if isinstance(value, str) and value.strip():
        return value.strip()
    return named_in(text)


_NAMED = re.compile(r"([A-Z][\w'.-]{0,19}(?: [A-Z][\w'.-]{0,19}){0,2}): +\S")
NOT_NAMES = frozenset(
    "answer context edit error example fyi goal important input note output ps q a question "
    "re reminder result step subject summary task tip todo update warning".split()
)
"""Capitalised labels that start a line the way a name does, and are not one."""


def named_in(text: str) -> str | None:
    """The speaker a ``"Name: text"`` message names: one to three capitalised words before
    the colon (a label such as ``Note:`` is not a name)."""
    found = _NAMED.match(text)
    if found is None or found.group(1).lower() in NOT_NAMES:
        return None
    return found.group(1)


def default_options(embedder: Embedder | None) -> RankingOptions:
    """The ranking measured best on LoCoMo dev (vectors join only with an embedder)."""
    if embedder is not None:
        return RankingOptions()
    return RankingOptions(vector_weight=0.0, session_weight=0.3)


class TranscriptRecall:
    """Answers recalls over an agent's transcript, ranked inside its store.

    ``store`` is called for the episodic backend at each use (the facade opens it lazily).
    Nothing is loaded when a process starts: the store's recall index is persistent.
    """

    def __init__(
        self,
        store: Callable[[], RecallStore],
        agent_id: str,
        *,
        embedder: Embedder | None = None,
        options: RankingOptions | None = None,
    ) -> None:
        self._store = store
        self.agent_id = agent_id
        self._embedder = embedder
        self._options = options or default_options(embedder)
        self._index: ConversationIndex | None = None
        self._lock = threading.RLock()
        self._vectors = BackgroundJob(self._embed, f"markus-vectors-{agent_id}")

    @property
    def index(self) -> ConversationIndex:
        with self._lock:
            if self._index is None:
                self._index = ConversationIndex(
                    self._store(), self.agent_id, embedder=self._embedder, options=self._options
                )
            return self._index

    def moved(self) -> None:
        """The transcripts now live in another store: rank there from the next recall."""
        with self._lock:
            self._index = None

    def stored(self) -> None:
        """New messages reached the store: their vectors are made in the background."""
        if self._embedder is not None:
            self.index.due()
            self._vectors.kick()

    def wait_for_vectors(self) -> None:
        """Return once every turn the store held when called has its vector (with an
        embedder); raises what making them raised."""
        if self._embedder is not None and self.index.embedding_due:
            self._vectors.kick()
        self._vectors.wait()

    def _embed(self, stopping: Callable[[], bool]) -> None:
        self.index.embed_missing(stopping, BACKGROUND_BATCH)

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
        now: datetime | None = None,
    ) -> list[ConversationHit]:
        """Hits best first. Bad arguments raise InvalidInputError before anything is searched."""
        _check(query, role, since, until, limit, neighbours)
        _aware("now", now)
        index = self.index
        if index.embedding_due:
            self._vectors.kick()
            self._vectors.wait(RECALL_WAIT_SECONDS)
        ranked, context = index.search_around(
            query,
            Filters(session_id, role, since, until),
            limit=limit,
            neighbours=neighbours,
            embed=False,
            now=now,
        )
        return [_hit(item.turn, item.score, neighbours, context) for item in ranked]

    def close(self) -> None:
        """Stop making vectors (after the current step; the next open makes the rest). The
        store belongs to the caller."""
        self._vectors.stop()


def _hit(
    turn: Turn, score: float, neighbours: int, context: Mapping[tuple[str, int], Turn]
) -> ConversationHit:
    def around(offsets: Iterable[int]) -> tuple[ContextTurn, ...]:
        found = (context.get((turn.session_id, turn.index + d)) for d in offsets)
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
    _aware("since", since)
    _aware("until", until)
    if since is not None and until is not None and since > until:
        raise InvalidInputError("since must not be later than until")


def _aware(name: str, moment: object) -> None:
    if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
        raise InvalidInputError(f"{name} must be a timezone-aware datetime")
