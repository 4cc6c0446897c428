"""The transcript retrieval engine: rank one agent's conversation turns inside its store.

The store ranks (BM25 over the agent's postings with the agent's own statistics; the nearest
vectors, ``recall_nearest``) and returns candidates; the re-ranking stages of :mod:`.stages`
run over those candidates only, fetching turns by key. Nothing proportional to the history
is held in memory and nothing is rebuilt when a process starts.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from ..analysis import joined_pairs, query_counts, query_terms
from ..errors import InvalidInputError
from ..storage.recall.contract import RecallFilters as Filters
from ..storage.recall.contract import RecallStats as Stats
from ..storage.recall.contract import TurnKey
from ..storage.repos.transcripts import TranscriptMessage
from ..storage.repos.transcripts import TranscriptStore as RecallStore
from .embedders import Embedder
from .ranking_options import RankingOptions, for_turn_length
from .stages import (
    Pool,
    Scores,
    Turn,
    boost_roles,
    boost_speakers,
    counts_over_sessions,
    fuse,
    in_first_person,
    lift_nearest,
    person_roles,
    session_boost,
    smooth,
    spread_sessions,
)
from .temporal import question_times, temporal_boost

__all__ = ["ConversationIndex", "RankedTurn", "RankingOptions", "RecallStore", "Turn"]

EMBED_BATCH = 256


@dataclass(frozen=True)
class RankedTurn:
    """A turn with its fused score (higher is better)."""

    turn: Turn
    score: float


def model_key(model: str, dimension: int) -> str:
    """The vectors of one embedding space: ``<model>:<dimension>``."""
    return f"{model}:{int(dimension)}"


def turn_of(message: TranscriptMessage) -> Turn:
    return Turn(
        message.session_id,
        message.seq,
        message.role,
        message.content,
        message.created_at,
        message.speaker,
        message.metadata or {},
    )


class ConversationIndex:
    """Ranked recall over the transcript of ``agent_id`` in ``store``.

    Thread-safe. Turns are identified by ``(session_id, index)``. Vectors (with an embedder)
    live in the store, one per message, tagged with ``model_key``: a model change re-embeds
    instead of ever mixing two vector spaces.
    """

    def __init__(
        self,
        store: RecallStore,
        agent_id: str,
        *,
        embedder: Embedder | None = None,
        options: RankingOptions | None = None,
    ) -> None:
        self.store = store
        self.agent_id = agent_id
        self.options = options or RankingOptions()
        self._embedder = embedder
        self._lock = threading.RLock()
        self._embedding = threading.Lock()  # one embedding loop at a time (never under _lock)
        self._due = 1  # stores reported since the start (the store may lack vectors)
        self._done = 0  # of those, how many the last finished embedding loop had seen

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder

    def add(self, turns: Iterable[Turn]) -> None:
        """Record turns in the store (replacing any at the same position); the store indexes
        them in the same transaction."""
        for turn in turns:
            self.store.index_message(
                self.agent_id,
                turn.session_id,
                turn.index,
                turn.role,
                turn.text,
                turn.timestamp or datetime.now(timezone.utc),
                speaker=turn.speaker,
                metadata=turn.metadata,
            )
        self.stored()

    def stored(self) -> None:
        """New messages reached the store: embed them now (with an embedder)."""
        self.due()
        self.embed_missing()

    def due(self) -> None:
        """New messages reached the store: their vectors are due (see :meth:`embed_missing`)."""
        with self._lock:
            self._due += 1

    @property
    def embedding_due(self) -> bool:
        """Whether the store may hold turns without a vector of this embedder."""
        return self._embedder is not None and self._done != self._due

    def set_embedder(self, embedder: Embedder | None) -> None:
        """Use another embedder; a different model embeds every turn again (at once)."""
        with self._lock:
            self._embedder = embedder
        self.stored()

    def embed_missing(
        self, stopping: Callable[[], bool] = lambda: False, batch: int = EMBED_BATCH
    ) -> None:
        """Store a vector for every turn that lacks one, ``batch`` turns at a time, until none
        is left or ``stopping()`` says so. The search never waits on it."""
        with self._embedding:
            with self._lock:
                seen, embedder = self._due, self._embedder
            if embedder is None or seen == self._done:
                return
            if self._embed(embedder, stopping, batch):
                self._done = seen

    def _embed(self, embedder: Embedder, stopping: Callable[[], bool], size: int) -> bool:
        import numpy as np

        key, dimension = model_key(embedder.model, embedder.dimension), embedder.dimension
        while batch := self.store.unvectored(self.agent_id, key, size):
            if stopping():
                return False
            vectors = embedder.embed([text for _, text in batch])
            if len(vectors) != len(batch):
                raise InvalidInputError(
                    f"embedder {embedder.model} returned {len(vectors)} vectors for {len(batch)}"
                )
            rows = []
            for (rowid, _), vector in zip(batch, vectors, strict=True):
                array = np.asarray(vector, dtype=np.float32)
                if array.shape != (dimension,):
                    raise InvalidInputError(
                        f"embedder {embedder.model} returned {array.shape[0]} dimensions, "
                        f"expected {dimension}"
                    )
                rows.append((rowid, array.tobytes()))
            self.store.save_recall_vectors(self.agent_id, key, rows)
            if len(batch) < size:
                break
        return True

    def get(self, session_id: str, index: int) -> Turn | None:
        found = self.store.recall_around(self.agent_id, [(session_id, index, index)])
        return next((turn_of(m) for m in found.values() if m.content.strip()), None)

    def pool(self, filters: Filters) -> Pool:
        """A candidate pool fetching the keys of this agent's turns (neighbours only where
        ``filters`` allow, and only turns with text)."""

        def by_id(ids: list[int]) -> list[TurnKey]:
            return self.store.recall_keys(self.agent_id, ids)

        def near(ids: list[int], window: int) -> list[TurnKey]:
            return self.store.recall_keys_near(self.agent_id, ids, window, filters)

        return Pool(by_id, near)

    def search(
        self,
        query: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        now: datetime | None = None,
    ) -> list[RankedTurn]:
        """The best ``limit`` turns for ``query`` among those passing every filter."""
        filters = Filters(session_id, role, since, until)
        return self.search_around(query, filters, limit=limit, now=now)[0]

    def search_around(
        self,
        query: str,
        filters: Filters,
        *,
        limit: int = 10,
        neighbours: int = 0,
        embed: bool = True,
        now: datetime | None = None,
    ) -> tuple[list[RankedTurn], dict[tuple[str, int], Turn]]:
        """:meth:`search`, and the turns with text up to ``neighbours`` from each hit in its
        session, by ``(session, index)`` (fetched with the hits, whatever the filters).

        The reads share one connection (``recall_session``): on PostgreSQL a recall is one
        pool checkout and three statements (statistics with the speakers the query names,
        bm25 with the candidates' and neighbours' keys, the hits with their context).
        ``embed`` false: turns still without a vector are ranked by their words alone (their
        vectors are made elsewhere, :meth:`embed_missing`), instead of embedded first.
        ``now``: when the question is asked ("a week ago" is read against it)."""
        if limit <= 0:
            return [], {}
        if embed:
            self.embed_missing()
        with self._lock, self.store.recall_session():
            pool = self.pool(filters)
            words = query_terms(query)
            if not words:  # only stop words: about nothing in the history
                return [], {}
            pairs = joined_pairs(query, among=set(words))
            stats = self.store.recall_stats(self.agent_id, query_counts([*words, *pairs]), words)
            options = for_turn_length(self.options, stats.avgdl)
            named = {word for word in words if word in stats.speakers}
            lexical = self._bm25(query, words, named, stats, filters, pool, options)
            lexical = boost_speakers(lexical, pool, named, options.speaker_boost)
            lexical = smooth(lexical, pool, options)
            embedded = in_first_person(query, named) if options.dense_first_person else query
            dense = self._dense(embedded, filters, lexical)
            pool.fetch(dense)  # a vector outliving its message (deleted meanwhile) ranks nothing
            dense = {rowid: score for rowid, score in dense.items() if rowid in pool.turns}
            dense = boost_speakers(dense, pool, named, options.dense_speaker_boost, roles=False)
            persons = person_roles(query)
            dense = boost_roles(dense, pool, persons, options.dense_person_boost)
            if options.smooth_dense:
                dense = smooth(dense, pool, options)
            scores = session_boost(fuse(lexical, dense, options), pool, options.session_weight)
            scores = boost_speakers(scores, pool, named, options.turn_speaker_boost)
            scores = boost_roles(scores, pool, persons, options.person_boost)
            scores = lift_nearest(scores, dense, options.nearest_top, options.nearest_lift)
            scores = self._dated(query, scores, now)
            counting = counts_over_sessions(query)
            depth = max(limit, options.counting_among) if counting else limit
            order = heapq.nsmallest(depth, scores, key=lambda rowid: (-scores[rowid], rowid))
            if counting:
                spread, among = options.counting_spread, options.counting_among
                order = spread_sessions(order, scores, pool, spread, among)[:limit]
            if not neighbours:
                full = self.store.recall_turns(self.agent_id, order)
                return [RankedTurn(turn_of(full[rowid]), scores[rowid]) for rowid in order], {}
            pool.fetch(order)
            spans = [
                (key.session_id, max(0, key.index - neighbours), key.index + neighbours)
                for key in map(pool.__getitem__, order)
            ]
            found = self.store.recall_around(self.agent_id, spans)
        context = {(m.session_id, m.seq): turn_of(m) for m in found.values() if m.content.strip()}
        return [RankedTurn(turn_of(found[rowid]), scores[rowid]) for rowid in order], context

    def _dated(self, query: str, scores: Scores, now: datetime | None) -> Scores:
        """The time stage (``search.temporal``) over the candidates' text and time."""
        wanted = question_times(query, now) if self.options.date_boost > 0 and scores else []
        if not wanted:
            return scores
        said = self.store.recall_said(self.agent_id, list(scores))

        def text_and_time(rowid: int) -> tuple[str, datetime | None]:
            return said.get(rowid, ("", None))

        return temporal_boost(wanted, scores, text_and_time, date_boost=self.options.date_boost)

    def _bm25(
        self,
        query: str,
        words: list[str],
        named: set[str],
        stats: Stats,
        filters: Filters,
        pool: Pool,
        options: RankingOptions,
    ) -> Scores:
        """bm25 scores of the candidates for the query's words and the compounds two of them
        make (``joined_pairs``: "ice cream" also finds "icecream"; ``stats`` cover every word
        and pair of the query); their keys, and their neighbours' for the smoothing stage, go
        into ``pool`` on the way."""
        if options.strip_speaker_names and len(named) < len(words):
            words = [word for word in words if word not in named]
        counts = query_counts([*words, *joined_pairs(query, among=set(words))])
        present = [key for key in counts if stats.df.get(key)]
        if not present:
            return {}
        bound = max(options.common_docs, options.common_share * stats.docs)
        kept = [key for key in present if stats.df[key] <= bound]
        per_term = min(int(bound) + 1, options.max_postings)
        if not kept:
            # Every term is very common: rank the rarest over its newest messages only.
            kept = [min(present, key=lambda key: stats.df[key])]
            per_term = options.recent_window
        window = options.neighbour_window if options.neighbour_weight > 0 else 0
        ranked, keys = self.store.recall_rank(
            self.agent_id,
            {key: stats.idf(key) * counts[key] for key in kept},
            avgdl=stats.avgdl,
            per_term=per_term,
            limit=options.candidates,
            filters=filters,
            window=window,
        )
        pool.fetched(keys, [rowid for rowid, _ in ranked], window)
        return dict(ranked)

    def _dense(self, query: str, filters: Filters, lexical: Scores) -> Scores:
        """Cosine scores of the nearest turns, found by the store (in the database, or in
        bounded chunks; a store may bound the search to the ``lexical`` candidates and its
        newest turns)."""
        embedder = self._embedder
        if embedder is None or self.options.vector_weight <= 0:
            return {}
        import numpy as np

        key = model_key(embedder.model, embedder.dimension)
        vector = np.asarray(embedder.embed([query])[0], dtype=np.float32).tobytes()
        nearest = self.store.recall_nearest(
            self.agent_id, key, vector, self.options.candidates, filters, candidates=list(lexical)
        )
        return dict(nearest)
