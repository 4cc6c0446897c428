"""The transcript retrieval engine: index conversation turns, rank them for a query."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..config import epoch_ms
from .analysis import query_terms, quote_fts, words
from .embedders import Embedder
from .filters import TurnFilter, sql_filters
from .hybrid import min_max, rrf, weighted_sum
from .speakers import named_speakers, speaker_boost
from .temporal import search_window, temporal_boost
from .transcript_vectors import TranscriptVectors, model_key, text_digest


@dataclass(frozen=True)
class Turn:
    """One message of a past session, as the engine indexes it."""

    session_id: str
    index: int
    role: str
    text: str
    timestamp: datetime | None = None
    speaker: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RankedTurn:
    """A turn with its fused score (higher is better)."""

    turn: Turn
    score: float


@dataclass(frozen=True)
class RankingOptions:
    """The knobs of the ranking. Defaults are what the LoCoMo dev split supports (see
    ``benchmarks/locomo.py``); a knob at 0 switches its stage off.

    * ``candidates``: bm25 (and vector) candidates taken before re-ranking.
    * ``speaker_boost``: a query word that names a speaker is taken out of the bm25 query
      (``strip_speaker_names``) and multiplies that speaker's turns by ``1 + boost`` instead.
    * ``neighbour_weight`` / ``neighbour_window``: a hit lends ``weight ** distance`` of its
      score to the turns up to ``window`` away in its session (question and reply around it).
    * ``session_weight``: every candidate gains this share of its session's best score.
    * ``common_docs`` / ``common_share`` / ``recent_window``: query-cost bounds for large
      histories (see ``ConversationIndex._prune_common``).
    * ``vector_weight``: weight of the min-max scaled cosine scores against the max-scaled
      lexical scores (``fusion="score"``) or of the vector list in reciprocal rank fusion
      (``fusion="rrf"``); used only with an embedder.
    * ``turn_speaker_boost``: the turns of a speaker the query names are multiplied by
      ``1 + boost`` after neighbour and session propagation (``search.speakers``), so the
      named speaker's reply next to a matching turn gains too; it replaced the bm25-level
      ``speaker_boost`` (LoCoMo dev recall_any@10 0.802 -> 0.835, better on every
      conversation).
    * ``date_boost``: a question naming a time ("in May 2023") adds the turns said in the
      weeks after it as candidates and lifts those that mention it (or were said on it) by
      ``date_boost`` times the best score (``search.temporal``).
    """

    candidates: int = 200
    strip_speaker_names: bool = True
    speaker_boost: float = 0.0
    neighbour_weight: float = 0.5
    neighbour_window: int = 2
    session_weight: float = 0.3
    vector_weight: float = 0.3
    dense_speaker_boost: float = 1.0
    smooth_dense: bool = False
    fusion: str = "score"
    rrf_k: int = 60
    common_docs: int = 2_000
    common_share: float = 0.02
    recent_window: int = 20_000
    date_boost: float = 0.5
    turn_speaker_boost: float = 0.5


class ConversationIndex:
    """In-memory ranked index over conversation turns (SQLite FTS5 bm25 + optional vectors).

    Thread-safe. Turns are identified by ``(session_id, index)``; adding a turn that is already
    present replaces it. Vectors are kept only for one embedding model at a time: switching
    the embedder re-embeds every turn, so dimensions never mix.
    """

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        options: RankingOptions | None = None,
        vector_store: TranscriptVectors | None = None,
    ) -> None:
        self.options = options or RankingOptions()
        self._vector_store = vector_store
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.executescript(
            """
            CREATE TABLE turns (id INTEGER PRIMARY KEY, session TEXT NOT NULL, idx INTEGER NOT NULL,
                role TEXT NOT NULL, speaker TEXT NOT NULL, ts INTEGER);
            CREATE UNIQUE INDEX turns_key ON turns(session, idx);
            CREATE VIRTUAL TABLE turns_fts USING fts5(text,
                tokenize='porter unicode61 remove_diacritics 2');
            """
        )
        self._lock = threading.RLock()
        self._turns: dict[int, Turn] = {}
        self._ids: dict[tuple[str, int], int] = {}
        self._speakers: set[str] = set()
        self._df: Counter[str] = Counter()
        self._next_id = 1
        self._embedder = embedder
        self._vectors: dict[int, Any] = {}
        self._matrix: Any = None
        self._matrix_ids: list[int] = []

    def __len__(self) -> int:
        return len(self._turns)

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder

    def add(self, turns: Iterable[Turn]) -> None:
        """Index turns (replacing any with the same session and index; the last copy of a
        turn given twice wins). One batched insert: a backfill of 100k turns stays fast."""
        batch = list({(turn.session_id, turn.index): turn for turn in turns}.values())
        with self._lock:
            rows, texts = [], []
            for turn in batch:
                rowid = self._next_id
                self._next_id += 1
                self._remove((turn.session_id, turn.index))
                speaker = turn.speaker or turn.role
                stamp = epoch_ms(turn.timestamp) if turn.timestamp is not None else None
                rows.append((rowid, turn.session_id, turn.index, turn.role, speaker.lower(), stamp))
                texts.append((rowid, turn.text))
                self._df.update(set(words(turn.text)))
                self._turns[rowid] = turn
                self._ids[(turn.session_id, turn.index)] = rowid
                self._speakers.update(words(speaker))
            self._db.executemany(
                "INSERT INTO turns (id, session, idx, role, speaker, ts) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._db.executemany("INSERT INTO turns_fts (rowid, text) VALUES (?, ?)", texts)
            self._db.commit()
            if self._embedder is not None and batch:
                self._embed_ids([rowid for rowid, _ in texts])

    def _remove(self, key: tuple[str, int]) -> None:
        existing = self._ids.pop(key, None)
        if existing is None:
            return
        self._db.execute("DELETE FROM turns_fts WHERE rowid = ?", (existing,))
        self._db.execute("DELETE FROM turns WHERE id = ?", (existing,))
        self._vectors.pop(existing, None)
        self._matrix = None
        self._df.subtract(set(words(self._turns.pop(existing).text)))

    def _prune_common(self, terms: list[str]) -> tuple[list[str], bool]:
        """Drop terms so common that ranking all their rows would dominate the query cost.

        A term in more than ``max(common_docs, common_share * N)`` turns (by its unstemmed
        document frequency, a lower bound) adds little to bm25 (its idf is near 0) but costs a
        walk over its whole posting list. Small histories never prune. If every term is that
        common, the rarest one is kept and only the newest ``recent_window`` turns are ranked
        (the second value says so); ``recent_window`` bounds that.
        """
        total = len(self._turns)
        limit = max(self.options.common_docs, self.options.common_share * total)
        kept = [term for term in terms if self._df.get(term, 0) <= limit]
        if kept or not terms:
            return kept, False
        return [min(terms, key=lambda term: self._df.get(term, 0))], True

    def set_embedder(self, embedder: Embedder | None) -> None:
        """Use another embedder; a different model re-embeds every indexed turn."""
        with self._lock:
            same = (
                embedder is not None
                and self._embedder is not None
                and (embedder.model, embedder.dimension)
                == (self._embedder.model, self._embedder.dimension)
            )
            self._embedder = embedder
            if same:
                return
            self._vectors.clear()
            self._matrix = None
            if embedder is not None and self._turns:
                self._embed_ids(list(self._turns))

    def _embed_ids(self, ids: Sequence[int]) -> None:
        import numpy as np

        embedder = self._embedder
        assert embedder is not None
        key, dimension = model_key(embedder.model, embedder.dimension), embedder.dimension
        digests = {rowid: text_digest(self._turns[rowid].text) for rowid in ids}
        cached: dict[tuple[str, int], bytes] = {}
        if self._vector_store is not None:
            wanted = [(t.session_id, t.index, digests[r]) for r, t in self._items(ids)]
            cached = self._vector_store.load(key, dimension, wanted)
        missing = []
        for rowid, turn in self._items(ids):
            blob = cached.get((turn.session_id, turn.index))
            if blob is None:
                missing.append(rowid)
            else:
                self._vectors[rowid] = np.frombuffer(blob, dtype=np.float32).copy()
        self._matrix = None
        if not missing:
            return
        vectors = embedder.embed([self._turns[rowid].text for rowid in missing])
        if len(vectors) != len(missing):
            raise ValueError(f"embedder {embedder.model} returned {len(vectors)} vectors")
        fresh = []
        for rowid, vector in zip(missing, vectors, strict=True):
            array = np.asarray(vector, dtype=np.float32)
            if array.shape != (dimension,):
                raise ValueError(
                    f"embedder {embedder.model} returned {array.shape[0]} dimensions, "
                    f"expected {dimension}"
                )
            self._vectors[rowid] = array
            turn = self._turns[rowid]
            fresh.append((turn.session_id, turn.index, digests[rowid], array.tobytes()))
        if self._vector_store is not None:
            self._vector_store.save(key, dimension, fresh)

    def _items(self, ids: Sequence[int]) -> list[tuple[int, Turn]]:
        return [(rowid, self._turns[rowid]) for rowid in ids]

    def get(self, session_id: str, index: int) -> Turn | None:
        rowid = self._ids.get((session_id, index))
        return None if rowid is None else self._turns[rowid]

    def search(
        self,
        query: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
    ) -> list[RankedTurn]:
        """The best ``limit`` turns for ``query`` among those passing every filter."""
        if limit <= 0:
            return []
        with self._lock:
            where, params = sql_filters(session_id, role, since, until)
            allowed = None if not where else TurnFilter(session_id, role, since, until, self._turns)
            lexical = self._smooth(self._bm25(query, where, params), allowed)
            dense = self._dense(query, allowed)
            if self.options.dense_speaker_boost and dense:
                named = {t for t in query_terms(query) if t in self._speakers}
                factor = 1.0 + self.options.dense_speaker_boost
                dense = {
                    rowid: value * factor
                    if (self._turns[rowid].speaker or "").lower() in named
                    else value
                    for rowid, value in dense.items()
                }
            if self.options.smooth_dense:
                dense = self._smooth(dense, allowed)
            scores = self._fuse(lexical, dense)
            if self.options.date_boost > 0:
                for rowid in self._dated(query, where, params):
                    scores.setdefault(rowid, 0.0)
            if self.options.session_weight and scores:
                best: dict[str, float] = {}
                for rowid, value in scores.items():
                    sid = self._turns[rowid].session_id
                    best[sid] = max(best.get(sid, 0.0), value)
                gamma = self.options.session_weight
                scores = {
                    rowid: value + gamma * best[self._turns[rowid].session_id]
                    for rowid, value in scores.items()
                }
            scores = speaker_boost(
                scores,
                self._speaker_of,
                named_speakers(query_terms(query), self._speakers),
                boost=self.options.turn_speaker_boost,
            )
            scores = temporal_boost(query, scores, self._said, date_boost=self.options.date_boost)
            order = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))[:limit]
            return [RankedTurn(self._turns[rowid], scores[rowid]) for rowid in order]

    def _dated(self, query: str, where: str, params: list[Any]) -> list[int]:
        """Turns said while the times the query names may be spoken of (``search.temporal``)."""
        window = search_window(query)
        if window is None:
            return []
        clauses = [where] if where else []
        sql = "SELECT t.id FROM turns t WHERE t.ts BETWEEN ? AND ?" + "".join(
            f" AND {clause}" for clause in clauses
        )
        limits = [epoch_ms(window[0]), epoch_ms(window[1])]
        rows = self._db.execute(sql + " LIMIT ?", [*limits, *params, self.options.candidates])
        return [int(row[0]) for row in rows]

    def _speaker_of(self, rowid: int) -> str | None:
        turn = self._turns[rowid]
        return turn.speaker or turn.role

    def _said(self, rowid: int) -> tuple[str, datetime | None]:
        turn = self._turns[rowid]
        return turn.text, turn.timestamp

    def _bm25(self, query: str, where: str, params: list[Any]) -> dict[int, float]:
        terms = query_terms(query)
        options = self.options
        boost_speakers = [term for term in terms if term in self._speakers]
        if options.strip_speaker_names and len(boost_speakers) < len(terms):
            terms = [term for term in terms if term not in self._speakers]
        terms, recent_only = self._prune_common(terms)
        if not terms:
            return {}
        match = " OR ".join(quote_fts(term) for term in terms)
        clauses = [where] if where else []
        extra: list[Any] = list(params)
        if recent_only:
            clauses.append("f.rowid > ?")
            extra.append(max(self._turns) - self.options.recent_window)
        sql = (
            "SELECT f.rowid, bm25(turns_fts) AS score, t.speaker FROM turns_fts f "
            "JOIN turns t ON t.id = f.rowid WHERE turns_fts MATCH ?"
            + "".join(f" AND {clause}" for clause in clauses)
            + " ORDER BY score LIMIT ?"
        )
        rows = self._db.execute(sql, [match, *extra, options.candidates])
        scores: dict[int, float] = {}
        for rowid, score, speaker in rows:
            value = -float(score)
            if options.speaker_boost and speaker in boost_speakers:
                value *= 1.0 + options.speaker_boost
            scores[int(rowid)] = value
        return scores

    def _dense(self, query: str, allowed: TurnFilter | None) -> dict[int, float]:
        if self._embedder is None or self.options.vector_weight <= 0 or not self._vectors:
            return {}
        import numpy as np

        if self._matrix is None:
            self._matrix_ids = list(self._vectors)
            self._matrix = np.stack([self._vectors[rowid] for rowid in self._matrix_ids])
        vector = np.asarray(self._embedder.embed([query])[0], dtype=np.float32)
        sims = self._matrix @ vector
        if allowed is not None:
            mask = np.fromiter((allowed(rowid) for rowid in self._matrix_ids), dtype=bool)
            sims = np.where(mask, sims, -np.inf)
        count = min(self.options.candidates, len(self._matrix_ids))
        top = np.argpartition(-sims, count - 1)[:count]
        return {
            self._matrix_ids[int(i)]: float(sims[int(i)]) for i in top if np.isfinite(sims[int(i)])
        }

    def _fuse(self, lexical: dict[int, float], dense: dict[int, float]) -> dict[int, float]:
        if not dense:
            return lexical
        if not lexical:
            return dense
        weight = self.options.vector_weight
        if self.options.fusion == "rrf":
            rankings = [
                sorted(lexical, key=lambda rowid: -lexical[rowid]),
                sorted(dense, key=lambda rowid: -dense[rowid]),
            ]
            return rrf(rankings, k=self.options.rrf_k, weights=[1.0, weight])
        return weighted_sum([lexical, min_max(dense)], [1.0, weight])

    def _smooth(self, scores: dict[int, float], allowed: TurnFilter | None) -> dict[int, float]:
        beta = self.options.neighbour_weight
        if beta <= 0 or not scores:
            return scores
        out = dict(scores)
        for rowid, value in scores.items():
            turn = self._turns[rowid]
            # A hit lends part of its score to the turns around it: the question it answers
            # and the reply it got often hold the fact (LoCoMo dev: recall_any@10 +0.05).
            window = self.options.neighbour_window
            for delta in [d for d in range(-window, window + 1) if d]:
                other = self._ids.get((turn.session_id, turn.index + delta))
                if other is None or (allowed is not None and not allowed(other)):
                    continue
                out[other] = out.get(other, 0.0) + beta ** abs(delta) * value
        return out

    def close(self) -> None:
        self._db.close()
