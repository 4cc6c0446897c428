"""The knobs of conversation recall's ranking, each with the evidence for its default, and
how an agent's turn length scales them (:func:`for_turn_length`). The stages that read them
are in :mod:`.stages`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from .temporal import DATE_BOOST


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
