"""The re-ranking stages of conversation recall, as functions over a candidate set.

The store ranks (BM25, vectors) and hands over candidates; each stage here takes scores by
message id and the :class:`Pool` of turns fetched for them, and returns new scores. A stage
fetches what it needs by key through the pool (never the whole history), so new stages can be
added after these without touching the store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from ..storage.recall.contract import TurnKey
from .hybrid import min_max, rrf, weighted_sum
from .temporal import DATE_BOOST

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
      histories: a term in more than ``max(common_docs, common_share * messages)`` of the
      agent's messages is left out of the query (its idf is near 0); if every term is that
      common, the rarest is ranked over its ``recent_window`` newest messages only.
    * ``max_postings``: a kept term is ranked over at most its newest ``max_postings``
      messages (a bound on the cost of one query in a very long history; exact below it).
    * ``vector_weight``: weight of the min-max scaled cosine scores against the max-scaled
      lexical scores (``fusion="score"``) or of the vector list in reciprocal rank fusion
      (``fusion="rrf"``); used only with an embedder.
    * ``fusion`` / ``rrf_k``: how the lexical and vector lists join. Reciprocal rank fusion
      with a small ``rrf_k`` (10: the first ranks count much more than the twentieth) and
      the vector list at 0.6, with ``session_weight`` 0.45, replaced score fusion at 0.3
      (session 0.3): by rank, a turn near in meaning that shares few words with the question
      (often multi-hop evidence) gets nearer the lexical hits than min-max scaled cosines
      let it. LoCoMo dev with MiniLM, leave-one-out over the three together (every fold
      chose these from rrf_k 5-20, vector 0.5-0.7 and session 0.3 or 0.45, and score fusion):
      recall_any@10 0.866 -> 0.868, recall_all@10 0.741 -> 0.751 (multi-hop 0.234 ->
      0.270); conv-26 and conv-41 better, conv-42 equal, conv-30 worse (recall_any@10
      0.914 -> 0.889, recall_all@10 0.802 -> 0.790); the best hit is first less often
      (recall_any@1 0.466 -> 0.443). At ``rrf_k`` 60 rank fusion was worse than score
      fusion (docs/RETRIEVAL.md has the rest). Without an embedder nothing is fused and
      ``session_weight`` stays 0.3 (``recall.default_options``: 0.45 loses there,
      recall_all@10 0.708 -> 0.703).
    * ``turn_speaker_boost``: the turns of a speaker the query names are multiplied by
      ``1 + boost`` after neighbour and session propagation, so the named speaker's reply
      next to a matching turn gains too; it replaced the bm25-level ``speaker_boost``
      (LoCoMo dev recall_any@10 +0.03, better on every conversation).
    * ``dense_first_person``: a query naming one speaker is embedded as that speaker would
      say it ("What did Melanie paint?" -> "What did I paint?"): the speaker stages carry the
      name, and the speaker's own turns are in the first person, while the name pulls the
      vector toward turns that merely address or mention the person. A question naming two
      keeps both: who said what of whom matters then (LoCoMo dev with MiniLM, leave-one-out:
      recall_any@10 0.842 -> 0.852, recall_all@10 0.713 -> 0.727, better on every
      conversation but conv-30's recall_any@10, equal).
    * ``date_boost``: a question naming a time ("in May 2023") lifts the candidates that
      mention it, or were said on the day it names, by ``date_boost`` times the best score,
      and those said within a wider time it names by half that (``search.temporal``). Said
      on a named day counting fully rather than half: LoCoMo dev recall_any@10 0.852 ->
      0.857 with MiniLM (0.830 -> 0.833 without), no conversation worse.
    * ``nearest_lift`` / ``nearest_top``: after the speaker stage, the ``nearest_top`` turns
      nearest the query in meaning gain up to ``nearest_lift`` times the best score (their
      cosines min-max scaled among themselves). Fusion weighs a turn's vector score or rank
      against all the candidates' and adds the lexical one, so a turn that shares no word
      with the question can stay below the lexical hits however near it is; multi-hop
      questions suffer most, most of their missing evidence is not among the bm25 candidates
      at all ("What does Melanie do to destress?" -> "pottery ... is like therapy"). LoCoMo
      dev with MiniLM, leave-one-out (with score fusion, before rank fusion replaced it):
      recall_any@10 0.852 -> 0.859, recall_all@10 0.727 -> 0.732, no conversation worse.
    * ``short_turns`` / ``short_power``: the neighbour and session propagation are scaled by
      ``(short_turns / avgdl) ** short_power`` where the agent's turns are longer than
      ``short_turns`` tokens on average (``for_turn_length``). Short turns are fragments of
      an exchange whose answer often sits in the next turn (LoCoMo's chat: 22-26 tokens a
      turn, where propagation is worth recall_any@10 +0.13); long turns stand alone, and
      there propagation fills the top 10 with the neighbours of one strong hit (LongMemEval's
      assistant chats: 138-189 tokens a turn; propagation in full: recall_all@10 0.653 against
      0.779 without). LoCoMo dev is unchanged (every conversation below 40); LongMemEval dev,
      no extras: recall_all@10 0.653 -> 0.800, ndcg@10 0.583 -> 0.701, session recall_all@5
      0.632 -> 0.842; split-half (chosen on one half, scored on the other) each half gains
      (docs/RETRIEVAL.md).
    * ``person_boost``: a question in the first person ("where did I buy my bookshelf?")
      asks about the user's own turns, one in the second person ("what did you recommend?")
      about the assistant's (``person_roles``); the turns of that role are multiplied by
      ``1 + boost`` after the speaker stage, as ``turn_speaker_boost`` does for a named
      speaker (the same 0.5). A question in both persons or neither changes nothing, so
      LoCoMo's questions, about named speakers, rank as before. LongMemEval dev, no extras:
      recall_all@5 0.621 -> 0.705, recall_all@10 0.800 -> 0.821, ndcg@10 0.701 -> 0.749,
      session recall_all@5 0.842 -> 0.863; split-half, each half gains (docs/RETRIEVAL.md).
    * ``dense_person_boost``: the same for the vector list, before fusion (with an embedder):
      MiniLM puts the assistant's long reply that restates the user's words as near as the
      user's turn. LongMemEval dev with MiniLM, both person boosts against neither:
      recall_all@5 0.568 -> 0.747, recall_all@10 0.810 -> 0.874, ndcg@10 0.637 -> 0.737,
      session recall_all@5 0.821 -> 0.863; split-half each half gains; LoCoMo unchanged
      (0.868 / 0.751).
    * ``dense_short_power``: where turns are long the vector list's weight and the nearest
      lift are scaled by turn length too, more gently than the propagation: by
      ``(short_turns / avgdl) ** dense_short_power``. MiniLM reads a turn's first 128 word
      pieces: a long assistant reply that opens on the question's topic comes out as near as
      the user's short turn that holds the answer, and rank fusion puts it among the top
      five. At LongMemEval's 138-189 tokens a turn the vector weight falls from 0.6 to
      0.41-0.44. LongMemEval dev with MiniLM (95 questions): recall_all@5 0.747 -> 0.779,
      recall_all@10 0.874 and recall_any@10 0.958 unchanged, ndcg@10 0.737 -> 0.758, session
      recall_all@5 0.863 -> 0.884; each half of the questions gains (docs/RETRIEVAL.md);
      0.25 loses a question's recall_any@10, 0.5 and 1.0 recall_all@10 and session recall.
      LoCoMo (short turns) unchanged.
    * ``counting_spread`` / ``counting_among``: a question that counts or sums ("how many
      plants did I get?", "how much did I spend?", "in total"; ``counts_over_sessions``)
      gathers its answer from several sessions, while the best-matching session tends to
      fill the first places with its own turns. Its best ``counting_among`` turns are put in
      order of maximal marginal relevance over sessions (``spread_sessions``: each place to
      the turn whose score times ``(1 - spread) ** n`` is highest, ``n`` the turns of its
      session placed before it). Only their order changes, so what the first ten hold, and
      a shorter list being the start of a longer one, stay as the scores made them; other
      questions rank as before (spreading every question loses LoCoMo, whose evidence often
      sits in a few turns of one session). LongMemEval dev, 95 questions, all@5 / all@10 /
      any@10 / ndcg@10 / session all@5, at 0.2: with MiniLM 0.779 / 0.874 / 0.958 / 0.758 /
      0.884 -> 0.800 / 0.874 / 0.958 / 0.761 / 0.916, without extras 0.705 / 0.821 / 0.937 /
      0.749 / 0.863 -> 0.716 / 0.821 / 0.937 / 0.750 / 0.916; with MiniLM no metric falls
      on either half of the questions (docs/RETRIEVAL.md); LoCoMo unchanged, every
      conversation (its 16 counting questions keep their top ten).
    """

    candidates: int = 200
    strip_speaker_names: bool = True
    speaker_boost: float = 0.0
    neighbour_weight: float = 0.5
    neighbour_window: int = 2
    session_weight: float = 0.45
    vector_weight: float = 0.6
    dense_speaker_boost: float = 1.0
    smooth_dense: bool = False
    fusion: Literal["score", "rrf"] = "rrf"
    rrf_k: int = 10
    common_docs: int = 2_000
    common_share: float = 0.02
    recent_window: int = 5_000
    max_postings: int = 5_000
    turn_speaker_boost: float = 0.5
    date_boost: float = DATE_BOOST
    dense_first_person: bool = True
    nearest_lift: float = 0.15
    nearest_top: int = 5
    short_turns: float = 40.0
    short_power: float = 2.0
    person_boost: float = 0.5
    dense_person_boost: float = 0.5
    dense_short_power: float = 0.125
    counting_spread: float = 0.2
    counting_among: int = 10


def for_turn_length(options: RankingOptions, avgdl: float) -> RankingOptions:
    """``options`` with the neighbour and session propagation scaled by how short the agent's
    turns are (``avgdl``: its tokens a turn on average): in full up to ``short_turns``, by
    ``factor = (short_turns / avgdl) ** short_power`` above (``short_turns`` 0: unchanged);
    the vector weight and the nearest lift by ``factor ** dense_short_power``."""
    if options.short_turns <= 0 or avgdl <= options.short_turns:
        return options
    factor = (options.short_turns / avgdl) ** options.short_power
    return replace(
        options,
        neighbour_weight=options.neighbour_weight * factor,
        session_weight=options.session_weight * factor,
        vector_weight=options.vector_weight * factor**options.dense_short_power,
        nearest_lift=options.nearest_lift * factor**options.dense_short_power,
    )


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
