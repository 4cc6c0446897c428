"""The re-ranking stages of conversation recall, as functions over a candidate set.

The store ranks (BM25, vectors) and hands over candidates; each stage here takes scores by
message id and the :class:`Pool` of turns fetched for them, and returns new scores. A stage
fetches what it needs by key through the pool (never the whole history), so new stages can be
added after these without touching the store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..storage.recall.contract import TurnKey
from .hybrid import min_max, rrf, weighted_sum
from .ranking_options import RankingOptions

Scores = dict[int, float]


@dataclass(frozen=True)
class Turn:
    """One message of a past session, as recall sees it."""

    session_id: str
    index: int
    role: str
    text: str
    timestamp: datetime | None = None
    speaker: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


class Pool:
    """The keys of a recall's candidates (:class:`TurnKey`: position and speaker), fetched by
    id (and their neighbours by position) through the callables the store provides; each at
    most once."""

    def __init__(
        self,
        by_id: Callable[[list[int]], Iterable[TurnKey]],
        near: Callable[[list[int], int], Iterable[TurnKey]],
    ) -> None:
        self._by_id = by_id
        self._near = near
        self.turns: dict[int, TurnKey] = {}
        self._at: dict[tuple[str, int], int] = {}
        self._around: dict[int, int] = {}  # id -> the widest window fetched around it

    def fetch(self, ids: Iterable[int]) -> None:
        missing = [i for i in ids if i not in self.turns]
        if missing:
            self._add(self._by_id(missing))

    def fetched(self, found: Iterable[TurnKey], ids: Iterable[int], window: int) -> None:
        """Keys the store returned with a ranking: of ``ids`` and of their neighbours up to
        ``window`` (as :meth:`neighbours` fetches them)."""
        self._add(found)
        self._around.update(dict.fromkeys(ids, window))

    def _add(self, found: Iterable[TurnKey]) -> None:
        for key in found:
            self.turns[key.id] = key
            self._at[(key.session_id, key.index)] = key.id

    def __getitem__(self, rowid: int) -> TurnKey:
        return self.turns[rowid]

    def neighbours(self, ids: Iterable[int], window: int) -> dict[int, list[tuple[int, int]]]:
        """For each id, its ``(distance, id)`` neighbours up to ``window`` away in its session
        (those that pass the recall's filters), fetched with the ids' own keys in one query."""
        ids = list(ids)
        todo = [i for i in ids if self._around.get(i, -1) < window]
        if todo:
            self._add(self._near(todo, window))
            self._around.update(dict.fromkeys(todo, window))
        turns, at = self.turns, self._at
        steps = [(delta, abs(delta)) for delta in range(-window, window + 1) if delta]
        out: dict[int, list[tuple[int, int]]] = {}
        for rowid in ids:
            turn = turns.get(rowid)
            if turn is None:
                continue
            sid, index = turn.session_id, turn.index
            out[rowid] = [
                (far, other)
                for delta, far in steps
                if (other := at.get((sid, index + delta))) is not None
            ]
        return out


def in_first_person(query: str, named: set[str]) -> str:
    """``query`` for the embedder, as the one speaker it names would put it: the name becomes
    "I" and its possessive "my" ("What do Melanie's kids like?" -> "What do my kids like?").
    Unchanged when it names none or several (``named``: the lower-case speaker words)."""
    if len(named) != 1:
        return query
    (name,) = named
    name = re.escape(name)
    said = re.sub(rf"\b{name}['\u2019]s\b", "my", query, flags=re.IGNORECASE)
    return re.sub(rf"\b{name}\b", "I", said, flags=re.IGNORECASE)


_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)


def person_roles(query: str) -> set[str]:
    """The role a question in the first or second person is about: "where did I buy my
    bookshelf?" asks about the user's own turns, "what did you recommend?" about the
    assistant's; a question in both persons, or in neither, names no role."""
    first = bool(_FIRST_PERSON.search(query.replace("\u2019", "'")))
    second = bool(_SECOND_PERSON.search(query))
    if first == second:
        return set()
    return {"user"} if first else {"assistant"}


def boost_roles(scores: Scores, pool: Pool, roles: set[str], boost: float) -> Scores:
    """Multiply the turns whose role is in ``roles`` by ``1 + boost``."""
    if not boost or not roles or not scores:
        return scores
    pool.fetch(scores)
    factor = 1.0 + boost
    turns = pool.turns
    return {
        rowid: value * factor if turns[rowid].role.lower() in roles else value
        for rowid, value in scores.items()
    }


def boost_speakers(
    scores: Scores, pool: Pool, named: set[str], boost: float, *, roles: bool = True
) -> Scores:
    """Multiply the turns of speakers the query names by ``1 + boost`` (a turn without a
    speaker goes by its role, unless ``roles`` is false)."""
    if not boost or not named or not scores:
        return scores
    pool.fetch(scores)
    factor = 1.0 + boost
    turns = pool.turns
    if roles:
        return {
            rowid: value * factor if turns[rowid].speaker_name in named else value
            for rowid, value in scores.items()
        }
    return {
        rowid: value * factor if (turns[rowid].speaker or "").lower() in named else value
        for rowid, value in scores.items()
    }


def smooth(scores: Scores, pool: Pool, options: RankingOptions) -> Scores:
    """A hit lends part of its score to the turns around it: the question it answers and the
    reply it got often hold the fact (LoCoMo dev: recall_any@10 +0.05)."""
    beta = options.neighbour_weight
    if beta <= 0 or not scores:
        return scores
    out = dict(scores)
    window = options.neighbour_window
    near = pool.neighbours(scores, window)
    lent = [beta**distance for distance in range(window + 1)]
    for rowid, value in scores.items():
        for distance, other in near.get(rowid, ()):
            out[other] = out.get(other, 0.0) + lent[distance] * value
    return out


def fuse(lexical: Scores, dense: Scores, options: RankingOptions) -> Scores:
    if not dense:
        return lexical
    if not lexical:
        return dense
    weight = options.vector_weight
    if options.fusion == "rrf":
        rankings = [
            sorted(lexical, key=lambda rowid: -lexical[rowid]),
            sorted(dense, key=lambda rowid: -dense[rowid]),
        ]
        return rrf(rankings, k=options.rrf_k, weights=[1.0, weight])
    return weighted_sum([lexical, min_max(dense)], [1.0, weight])


def lift_nearest(scores: Scores, dense: Scores, top: int, lift: float) -> Scores:
    """The ``top`` best of ``dense`` gain up to ``lift`` times the best of ``scores`` (their
    cosines min-max scaled among themselves: the nearest gains it all, the ``top``-th nothing);
    every other turn keeps its score."""
    best = max(scores.values(), default=0.0)
    if lift <= 0 or top <= 0 or not dense or best <= 0:
        return scores
    nearest = sorted(dense, key=dense.__getitem__, reverse=True)[:top]
    out = dict(scores)
    for rowid, value in min_max({rowid: dense[rowid] for rowid in nearest}).items():
        out[rowid] = out.get(rowid, 0.0) + lift * best * value
    return out


def session_boost(scores: Scores, pool: Pool, weight: float) -> Scores:
    """Every candidate gains ``weight`` times its session's best score."""
    if not weight or not scores:
        return scores
    pool.fetch(scores)
    turns = pool.turns
    best: dict[str, float] = {}
    for rowid, value in scores.items():
        sid = turns[rowid].session_id
        if value > best.get(sid, 0.0):
            best[sid] = value
    return {
        rowid: value + weight * best.get(turns[rowid].session_id, 0.0)
        for rowid, value in scores.items()
    }


_COUNTING = re.compile(r"\b(?:how (?:many|much)|in total|combined|altogether)\b", re.IGNORECASE)


def counts_over_sessions(query: str) -> bool:
    """Whether a question counts or sums ("how many plants did I buy?", "how much did I
    spend?", "in total"): its answer is gathered from what several sessions say."""
    return _COUNTING.search(query) is not None


def spread_sessions(
    ranked: list[int], scores: Scores, pool: Pool, spread: float, among: int
) -> list[int]:
    """``ranked`` (best first) with its first ``among`` reordered by maximal marginal relevance
    over sessions: each place goes to the turn whose score times ``(1 - spread) ** n`` is the
    highest, ``n`` the turns of its session placed before it (so a second session's best turn
    comes before the first session's third when it is near enough); the rest keep their
    order. Only the order changes: the turns are those the scores chose, each with its score."""
    if spread <= 0 or among < 2 or len(ranked) < 2:
        return list(ranked)
    head, tail = list(ranked[:among]), list(ranked[among:])
    pool.fetch(head)
    session = {rowid: pool.turns[rowid].session_id for rowid in head}
    keep = 1.0 - spread
    placed: dict[str, int] = {}
    out: list[int] = []
    while head:
        best = max(head, key=lambda rowid: scores[rowid] * keep ** placed.get(session[rowid], 0))
        head.remove(best)
        out.append(best)
        placed[session[best]] = placed.get(session[best], 0) + 1
    return out + tail
