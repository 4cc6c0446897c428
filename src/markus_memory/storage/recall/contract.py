"""What conversation recall needs from a transcript store: the keys and statistics the
re-ranking stages work on, the filters a recall narrows by, and the :class:`RecallIndex`
protocol both backends implement (``recall_index.RecallQueries`` and its PostgreSQL side)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..repos.transcripts import TranscriptMessage


@dataclass(slots=True)
class TurnKey:
    """A message as recall's re-ranking stages see it: id, position and who spoke (not frozen:
    a recall builds about a thousand, and a frozen dataclass costs seven times as much to make)."""

    id: int
    session_id: str
    index: int
    role: str
    speaker: str | None

    @property
    def speaker_name(self) -> str:
        """Who spoke, lower-cased: the speaker, else the role."""
        return (self.speaker or self.role).lower()


@dataclass(frozen=True)
class RecallStats:
    """An agent's index statistics: messages, tokens, and document frequency per term key;
    ``speakers``: the words asked about that name a speaker (or role) of its messages."""

    docs: int
    tokens: int
    df: Mapping[int, int]
    speakers: frozenset[str] = frozenset()

    @property
    def avgdl(self) -> float:
        return self.tokens / self.docs if self.docs else 0.0

    def idf(self, key: int) -> float:
        """FTS5's bm25 idf: ``log((N - n + 0.5) / (n + 0.5))``, at least 1e-6."""
        n = self.df.get(key, 0)
        value = math.log((self.docs - n + 0.5) / (n + 0.5))
        return value if value > 0 else 1e-6


@dataclass(frozen=True)
class RecallFilters:
    """Recall narrowing: session, role or speaker (lower-case), time bounds (inclusive)."""

    session_id: str | None = None
    role: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def sql(self, when: Callable[[datetime], Any], alias: str = "t") -> tuple[str, list[Any]]:
        """`` AND …`` conditions on the ``transcript_messages`` alias, and their values."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.session_id is not None:
            clauses.append(f"{alias}.session_id = ?")
            params.append(self.session_id)
        if self.role is not None:
            clauses.append(
                f"(lower({alias}.role) = ? OR lower(COALESCE({alias}.speaker, {alias}.role)) = ?)"
            )
            params.extend([self.role.lower(), self.role.lower()])
        if self.since is not None:
            clauses.append(f"{alias}.created_at >= ?")
            params.append(when(self.since))
        if self.until is not None:
            clauses.append(f"{alias}.created_at <= ?")
            params.append(when(self.until))
        return "".join(f" AND {c}" for c in clauses), params

    @property
    def empty(self) -> bool:
        return self == RecallFilters()


class RecallIndex(Protocol):
    """The conversation recall index of the transcript (``recall_index.RecallQueries``)."""

    def recall_session(self) -> AbstractContextManager[None]:
        """Inside, this thread's recall reads share one connection (one recall's reads)."""
        ...

    def recall_stats(
        self, agent_id: str, keys: Iterable[int], words: Iterable[str] = ()
    ) -> RecallStats:
        """The agent's statistics for the term ``keys``, and which of ``words`` name one of its
        speakers, in one round trip."""
        ...

    def recall_rank(
        self,
        agent_id: str,
        weights: Mapping[int, float],
        *,
        avgdl: float,
        per_term: int,
        limit: int,
        filters: RecallFilters | None = None,
        window: int = 0,
    ) -> tuple[list[tuple[int, float]], list[TurnKey]]:
        """The agent's best ``limit`` messages by BM25 as ``(id, score)`` best first, and in
        the same round trip the :meth:`recall_keys_near` of them for ``window``."""
        ...

    def recall_turns(self, agent_id: str, ids: Sequence[int]) -> dict[int, TranscriptMessage]:
        """The agent's messages among ``ids``, by id."""
        ...

    def recall_said(self, agent_id: str, ids: Sequence[int]) -> dict[int, tuple[str, datetime]]:
        """The text of the agent's messages among ``ids`` and when each was said, by id (what
        the time stage reads: no metadata decoded)."""
        ...

    def recall_keys(self, agent_id: str, ids: Sequence[int]) -> list[TurnKey]:
        """What the re-ranking stages need of the agent's messages among ``ids``."""
        ...

    def recall_keys_near(
        self,
        agent_id: str,
        ids: Sequence[int],
        window: int,
        filters: RecallFilters | None = None,
    ) -> list[TurnKey]:
        """:meth:`recall_keys` of the messages among ``ids`` and of those with text up to
        ``window`` turns from one of them in its session that pass ``filters`` (a message
        may come more than once)."""
        ...

    def recall_around(
        self,
        agent_id: str,
        spans: Sequence[tuple[str, int, int]],
        filters: RecallFilters | None = None,
    ) -> dict[int, TranscriptMessage]:
        """The agent's messages in ``(session, first seq, last seq)`` spans passing
        ``filters``."""
        ...

    def save_recall_vectors(
        self, agent_id: str, model: str, rows: Sequence[tuple[int, bytes]]
    ) -> None: ...

    def unvectored(self, agent_id: str, model: str, limit: int) -> list[tuple[int, str]]: ...

    def recall_vectors(
        self,
        agent_id: str,
        model: str,
        filters: RecallFilters | None = None,
        *,
        ids: Sequence[int] | None = None,
        newest: int | None = None,
    ) -> Iterable[list[tuple[int, bytes]]]: ...

    def recall_nearest(
        self,
        agent_id: str,
        model: str,
        vector: bytes,
        limit: int,
        filters: RecallFilters | None = None,
        *,
        candidates: Sequence[int] = (),
    ) -> list[tuple[int, float]]:
        """The agent's ``limit`` nearest ``model`` vectors (float32 bytes) to ``vector`` among
        its messages passing ``filters``, as ``(id, dot product)`` best first. A backend that
        cannot search vectors in the database may score only ``candidates`` (the query's
        lexical candidates) and its newest vectors, or those candidates and the vectors of
        the inverted lists nearest ``vector`` (approximate: ``storage/recall/vector_lists.py``)."""
        ...
