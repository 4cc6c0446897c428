"""Split-half check of ranking knobs on LongMemEval, on the engine directly.

Each question's haystack is indexed once (``ConversationIndex`` on a SQLite store, the same
turns as the end-to-end run); a knob's grid is then scored on both halves of the questions
(``longmemeval.halves``: alternate questions of each type). The value with the best
recall_all@10 + ndcg@10 on one half is scored on the other, beside the knob's first grid value
("off"): a knob generalises when the held-out half does not fall.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from _longmemeval_data import Question
from markus_memory.search.conversation import ConversationIndex, RankingOptions, Turn
from markus_memory.search.recall import default_options
from markus_memory.storage._sqlite.store import SqliteStore

# Each knob with its grid; the first value is the knob switched off.
KNOBS: dict[str, tuple[object, ...]] = {
    "short_turns": (0.0, 30.0, 40.0, 60.0, 80.0),
    "short_power": (0.0, 1.0, 2.0, 3.0),
    "person_boost": (0.0, 0.25, 0.5, 1.0),
    "dense_person_boost": (0.0, 0.25, 0.5, 1.0),
    "dense_short_power": (0.0, 0.125, 0.25, 0.5, 1.0),
    "counting_spread": (0.0, 0.1, 0.2, 0.3),
}


def build(question: Question, embedder: object | None, home: Path) -> ConversationIndex:
    store = SqliteStore(home / f"{question.question_id}.db")
    index = ConversationIndex(store.transcripts, question.question_id, embedder=embedder)  # type: ignore[arg-type]
    index.add(
        Turn(t.session_id, t.position, t.role, t.text, t.date, None, {"turn": t.id})
        for t in question.turns
    )
    return index


def ranked(
    indexes: Sequence[tuple[Question, ConversationIndex]], options: RankingOptions
) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for question, index in indexes:
        index.options = options
        hits = index.search(question.question, limit=10)
        out[question.question_id] = [str(hit.turn.metadata["turn"]) for hit in hits]
    return out


def run(questions: Sequence[Question], embedder: object | None) -> str:
    """One line per knob and direction: the value chosen on a half and what it scores on
    the other half, beside the knob off."""
    from longmemeval import halves, summarize

    first, second = halves(questions)
    lines = []
    with tempfile.TemporaryDirectory() as home:
        indexes = [(q, build(q, embedder, Path(home))) for q in questions]
        base = default_options(embedder)  # type: ignore[arg-type]
        for knob, values in KNOBS.items():
            scores = {}
            for value in values:
                found = ranked(indexes, replace(base, **{knob: value}))
                scores[value] = [summarize(half, found)["all"] for half in (first, second)]

            def objective(summary: dict[str, float]) -> float:
                return summary["all@10"] + summary["ndcg@10"]

            for name, tuned, held in (("A->B", 0, 1), ("B->A", 1, 0)):
                chosen = max(values, key=lambda v: objective(scores[v][tuned]))
                off, got = scores[values[0]][held], scores[chosen][held]
                lines.append(
                    f"{knob:<12} {name}: chose {chosen}; held-out half all@10 "
                    f"{off['all@10']:.3f} -> {got['all@10']:.3f}, ndcg@10 {off['ndcg@10']:.3f} "
                    f"-> {got['ndcg@10']:.3f}, session all@5 {off['sess_all@5']:.3f} -> "
                    f"{got['sess_all@5']:.3f}"
                )
        for _, index in indexes:
            index.store.database.close()
    return "\n".join(lines)
